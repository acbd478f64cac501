package gateway_test

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"paygraph/internal/testenv"
	"paygraph/sandbox"
)

// TestMerchantIdentityIsKeyed (issue 22): the merchant tag of the logs
// (a merchant's circuit opening) is the HMAC of the pair under
// MERCHANT_ID_KEY: the same on two gateways with the same key, another
// under another key, and never the plain SHA-256 of the pair that a log
// reader could check guessed pairs against.
func TestMerchantIdentityIsKeyed(t *testing.T) {
	const (
		keyA = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"
		keyB = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8g" // base64 of 1..32
	)
	pair := sandbox.Business{APIKey: "ak_test_keyed", APISecret: "sk_test_keyed"}
	tagUnder := func(t *testing.T, key string) string {
		t.Helper()
		rest := &countingREST{handle: func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusInternalServerError) }}
		var logs testenv.LockedBuffer
		env := map[string]string{"REST_MAX_RETRIES": "0", "BREAKER_FAILURES": "1", "Config.BreakerCooldown": "1h", "MERCHANT_ID_KEY": key}
		g := startGateway(t, setup{env: env, rest: rest, logger: slog.New(slog.NewJSONHandler(&logs, nil))})
		g.Post(t, creds(pair), `{ payment(id: "pay_prod_0123456789abcdef0123456789abcdef") { id } }`, nil).WantCode(t, "UPSTREAM_ERROR")
		for _, line := range strings.Split(logs.String(), "\n") {
			if !strings.Contains(line, `"scope":"merchant"`) {
				continue
			}
			var rec struct{ Merchant string }
			if err := json.Unmarshal([]byte(line), &rec); err != nil || len(rec.Merchant) != 16 {
				t.Fatalf("merchant circuit line %q: tag %q, %v", line, rec.Merchant, err)
			}
			if strings.Contains(line, pair.APISecret) || strings.Contains(line, pair.APIKey) {
				t.Fatalf("log line holds the pair: %s", line)
			}
			return rec.Merchant
		}
		t.Fatalf("no merchant circuit line:\n%s", logs.String())
		return ""
	}
	a1, a2, b := tagUnder(t, keyA), tagUnder(t, keyA), tagUnder(t, keyB)
	if a1 != a2 {
		t.Errorf("same MERCHANT_ID_KEY, two gateways: tags %s and %s, want the same", a1, a2)
	}
	if a1 == b {
		t.Errorf("different MERCHANT_ID_KEYs give the same tag %s", a1)
	}
	// The former, unkeyed identity: SHA-256 of len(key) || key || secret,
	// whose first 8 bytes (little-endian) were the tag.
	var buf []byte
	buf = binary.BigEndian.AppendUint64(buf, uint64(len(pair.APIKey)))
	buf = append(append(buf, pair.APIKey...), pair.APISecret...)
	plain := sha256.Sum256(buf)
	if unkeyed := fmt.Sprintf("%016x", binary.LittleEndian.Uint64(plain[:8])); a1 == unkeyed || b == unkeyed {
		t.Errorf("the tag is the plain SHA-256 of the pair (%s)", unkeyed)
	}
}

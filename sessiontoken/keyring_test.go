package sessiontoken

import (
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"
)

func TestParseKeyring(t *testing.T) {
	t.Parallel()
	hexA, hexB := hex.EncodeToString(testKeyA), hex.EncodeToString(testKeyB)
	tests := []struct {
		name    string
		value   string
		want    [][]byte // nil: an error
		errSays string
	}{
		{"one hex key", hexA, [][]byte{testKeyA}, ""},
		{"upper-case hex", strings.ToUpper(hexA), [][]byte{testKeyA}, ""},
		{"two keys, spaces", " " + hexB + " , " + hexA + " ", [][]byte{testKeyB, testKeyA}, ""},
		{"base64 std padded", base64.StdEncoding.EncodeToString(testKeyA), [][]byte{testKeyA}, ""},
		{"base64 std raw", base64.RawStdEncoding.EncodeToString(testKeyA), [][]byte{testKeyA}, ""},
		{"base64 url padded", base64.URLEncoding.EncodeToString(testKeyC), [][]byte{testKeyC}, ""},
		{"base64 url raw", base64.RawURLEncoding.EncodeToString(testKeyC), [][]byte{testKeyC}, ""},
		{"hex and base64 mixed", hexA + "," + base64.StdEncoding.EncodeToString(testKeyB), [][]byte{testKeyA, testKeyB}, ""},
		{"empty", "", nil, "key 1 of 1 is empty"},
		{"trailing comma", hexA + ",", nil, "key 2 of 2 is empty"},
		{"short hex", hexA[:62], nil, "key 1 of 1"},
		{"64 characters, not hex", strings.Repeat("z", 64), nil, "not hex"},
		{"base64 of 16 bytes", base64.StdEncoding.EncodeToString(testKeyA[:16]), nil, "base64 of 16 bytes"},
		{"all zero", strings.Repeat("0", 64), nil, "all zero"},
		{"repeated key", hexA + "," + hexB + "," + hexA, nil, "key 3 repeats key 1"},
		{"text", "correct horse battery staple", nil, "neither"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			kr, err := ParseKeyring(tt.value)
			if tt.want == nil {
				if err == nil {
					t.Fatalf("ParseKeyring accepted %q", tt.value)
				}
				if !strings.Contains(err.Error(), tt.errSays) || !strings.HasPrefix(err.Error(), "TOKEN_KEYS: ") {
					t.Errorf("error %q does not start with TOKEN_KEYS: and say %q", err, tt.errSays)
				}
				for _, part := range strings.Split(tt.value, ",") {
					if p := strings.TrimSpace(part); len(p) >= 8 && strings.Contains(err.Error(), p) {
						t.Errorf("error %q echoes a key", err)
					}
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseKeyring: %v", err)
			}
			if len(kr.keys) != len(tt.want) {
				t.Fatalf("%d keys, want %d", len(kr.keys), len(tt.want))
			}
			for i, k := range tt.want {
				if got := kr.keys[i].key.ExportBytes(); string(got) != string(k) || kr.keys[i].id != localKeyID(k) {
					t.Errorf("key %d differs", i+1)
				}
			}
		})
	}
}

// The key id is PASERK's "lid", checked against the PASERK test vectors
// (k4.lid.json of the paseto-standard test vectors).
func TestLocalKeyIDVectors(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, keyHex, want string }{
		{"k4.lid-1", strings.Repeat("00", 32), "k4.lid.bqltbNc4JLUAmc9Xtpok-fBuI0dQN5_m3CD9W_nbh559"},
		{"k4.lid-2", "707172737475767778797a7b7c7d7e7f808182838485868788898a8b8c8d8e8f", "k4.lid.iVtYQDjr5gEijCSjJC3fQaJm7nCeQSeaty0Jixy8dbsk"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			k, _ := hex.DecodeString(tt.keyHex)
			if got := localKeyID(k); got != tt.want {
				t.Errorf("localKeyID = %s, want %s", got, tt.want)
			}
		})
	}
}

func TestKeyringNeverPrintsKeys(t *testing.T) {
	t.Parallel()
	kr := keyring(t, newClock(), testKeyA, testKeyB)
	var logged strings.Builder
	slog.New(slog.NewJSONHandler(&logged, nil)).Info("x", "keyring", kr, "value", *kr)
	j, _ := json.Marshal(kr)
	forms := map[string]string{
		"%v": fmt.Sprintf("%v", kr), "%+v": fmt.Sprintf("%+v", kr), "%#v": fmt.Sprintf("%#v", kr),
		"value %+v": fmt.Sprintf("%+v", *kr), "%x": fmt.Sprintf("%x", kr), "slog": logged.String(), "json": string(j),
	}
	for name, s := range forms {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			for _, k := range [][]byte{testKeyA, testKeyB} {
				if strings.Contains(s, hex.EncodeToString(k)) || strings.Contains(s, string(k)) ||
					strings.Contains(s, base64.RawURLEncoding.EncodeToString(k)) || strings.Contains(s, fmt.Sprint(k)) {
					t.Errorf("%s prints a key: %s", name, s)
				}
			}
			if !strings.Contains(s, "2 keys, minting k4.lid.") {
				t.Errorf("%s = %s, want the count and minting key id", name, s)
			}
		})
	}
}

func TestGeneratedKeysParse(t *testing.T) {
	t.Parallel()
	a, b := GenerateKey(), GenerateKey()
	if a == b {
		t.Fatal("two generated keys are equal")
	}
	if _, err := ParseKeyring(a + "," + b); err != nil {
		t.Fatalf("generated keys refused: %v", err)
	}
	kr := NewRandomKeyring()
	tok, _, err := kr.Mint(testCreds, AllReads(), 1e9)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kr.Verify(tok); err != nil {
		t.Fatalf("random keyring refuses its own token: %v", err)
	}
}

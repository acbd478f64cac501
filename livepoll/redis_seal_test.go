package livepoll

import (
	"bytes"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"strings"
	"testing"
	"time"
)

func testAEAD(t *testing.T, b byte) cipher.AEAD {
	t.Helper()
	block, err := aes.NewCipher(bytes.Repeat([]byte{b}, 32))
	if err != nil {
		t.Fatal(err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		t.Fatal(err)
	}
	return aead
}

// TestRedisStoreSealed: a sealed store keeps no state's JSON (a customer's
// contact details) nor its fingerprint in Redis as they are; a replica with
// the same key reads them back; one with another key, an entry moved to
// another resource's stream, or one given another phase, does not open.
func TestRedisStoreSealed(t *testing.T) {
	rdb := startRedis(t)
	ctx := context.Background()
	const secret = `{"customer":{"email":"rafiq.uddin54@mail.example.net","phone":"+8801700000001"}}`
	k := Key{Merchant: "m_seal", Kind: "payment", ID: "pay_seal"}
	a := NewRedisStore(rdb, 0).Sealed(testAEAD(t, 1))
	rec := Record{ID: 7, Fingerprint: "fp-of-the-state", Phase: 1, Data: []byte(secret)}
	if _, err := a.Append(ctx, k, rec, 0, time.Minute); err != nil {
		t.Fatal(err)
	}
	_, events := redisKeys(k)

	t.Run("redis holds no plaintext", func(t *testing.T) {
		dump, err := rdb.XRange(ctx, events, "-", "+").Result()
		if err != nil || len(dump) != 1 {
			t.Fatalf("stream %v %v", dump, err)
		}
		for field, v := range dump[0].Values {
			s, _ := v.(string)
			for _, plain := range []string{"rafiq", "8801700000001", "fp-of-the-state"} {
				if strings.Contains(s, plain) {
					t.Errorf("field %s holds %q as it is", field, plain)
				}
			}
		}
	})
	t.Run("same key reads it back", func(t *testing.T) {
		got, err := NewRedisStore(rdb, 0).Sealed(testAEAD(t, 1)).Since(ctx, k, 0)
		if err != nil || len(got) != 1 {
			t.Fatalf("Since: %v %v", got, err)
		}
		if string(got[0].Data) != secret || got[0].Fingerprint != rec.Fingerprint || got[0].ID != 7 || got[0].Phase != 1 {
			t.Errorf("read back %+v", got[0])
		}
	})
	// What does not open is skipped and counted, never an error: the
	// transitions around it are still read.
	notOpened := func(t *testing.T, st *RedisStore, k Key) {
		t.Helper()
		skipped := &skipCount{n: map[string]int{}}
		got, err := st.CountingSkipped(skipped.count).Since(ctx, k, 0)
		if err != nil || len(got) != 0 {
			t.Errorf("Since: %+v %v, want nothing", got, err)
		}
		if skipped.of(SkippedStream) != 1 {
			t.Errorf("skipped %v, want one stream entry", skipped.n)
		}
	}
	t.Run("another key does not open", func(t *testing.T) {
		notOpened(t, NewRedisStore(rdb, 0).Sealed(testAEAD(t, 2)), k)
	})
	t.Run("an entry moved to another stream does not open", func(t *testing.T) {
		other := Key{Merchant: "m_other", Kind: "payment", ID: "pay_seal"}
		_, otherEvents := redisKeys(other)
		if err := rdb.Copy(ctx, events, otherEvents, 0, true).Err(); err != nil {
			t.Fatal(err)
		}
		notOpened(t, a, other)
	})
	t.Run("an entry given another phase does not open", func(t *testing.T) {
		m, err := rdb.XRange(ctx, events, "-", "+").Result()
		if err != nil || len(m) != 1 {
			t.Fatalf("stream: %v %v", m, err)
		}
		// The same sealed fields in the same stream under the same id,
		// marked final.
		if err := rdb.Del(ctx, events).Err(); err != nil {
			t.Fatal(err)
		}
		xadd(t, rdb, events, m[0].ID, "f", m[0].Values["f"], "p", "2", "d", m[0].Values["d"])
		notOpened(t, a, k)
	})
}

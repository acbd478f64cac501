package apqstore

import (
	"context"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
)

// TestTamperedQueryRefused: a key written straight into Redis whose text
// is not the one its hash names is a miss (counted), never served, on a
// replica that never saw the query; the text its hash names is served.
func TestTamperedQueryRefused(t *testing.T) {
	t.Parallel()
	srv := startRedis(t)
	ctx := context.Background()
	raw := redis.NewClient(&redis.Options{Addr: srv.Addr})
	defer raw.Close()
	mismatches := 0
	a := newStore(t, srv.URL, 0, WithMismatchCounter(func() { mismatches++ }))
	honest := "{ payments(first: 1) { nodes { id } } }"
	evil := "{ payments(first: 100) { nodes { id customer { email } } } }"
	cases := []struct {
		name, key, text string
		served          bool
	}{
		{"another text under a query's hash", hash(honest), evil, false},
		{"the text under its own hash", hash(evil), evil, true},
		{"a text under a key that is no hash", "not-a-hash", evil, false},
		{"an upper-case hash", strings.ToUpper(hash(evil)), evil, false},
		{"the text with a trailing byte", hash(honest), honest + " ", false},
	}
	for _, tc := range cases {
		if err := raw.Set(ctx, DefaultPrefix+tc.key, tc.text, 0).Err(); err != nil {
			t.Fatal(err)
		}
		before := a.Stats().Mismatched
		v, ok := a.Get(ctx, tc.key)
		if ok != tc.served || (ok && v != tc.text) {
			t.Errorf("%s: Get = %q, %v; want served %v", tc.name, v, ok, tc.served)
		}
		if got := a.Stats().Mismatched - before; got != map[bool]uint64{true: 0, false: 1}[tc.served] {
			t.Errorf("%s: %d mismatches counted", tc.name, got)
		}
		// Never kept: a second read goes to Redis and is refused again.
		if _, ok := a.Get(ctx, tc.key); ok != tc.served {
			t.Errorf("%s: served on the second read", tc.name)
		}
	}
	if want := 8; mismatches != want {
		t.Errorf("counter called %d times, want %d", mismatches, want)
	}
}

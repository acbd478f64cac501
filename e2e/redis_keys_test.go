package e2e

import (
	"context"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// redisKeyRow is a row of docs/operations.md's "What Redis holds" table.
var redisKeyRow = regexp.MustCompile("^\\| `((?:paygraph|rate):[^`]+)` \\|")

// documentedRedisKeys are the key patterns docs/operations.md lists, each
// as a regular expression (a <name> is any run of characters).
func documentedRedisKeys(t *testing.T) []*regexp.Regexp {
	t.Helper()
	b, err := os.ReadFile("../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	var out []*regexp.Regexp
	for _, line := range strings.Split(string(b), "\n") {
		m := redisKeyRow.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		parts := regexp.MustCompile(`<[^>]+>`).Split(m[1], -1)
		for i := range parts {
			parts[i] = regexp.QuoteMeta(parts[i])
		}
		out = append(out, regexp.MustCompile("^"+strings.Join(parts, ".+")+"$"))
	}
	if len(out) < 4 {
		t.Fatalf("found %d rows in docs/operations.md's \"What Redis holds\": did its format change?", len(out))
	}
	return out
}

// checkRedisKeysDocumented scans the Redis at url and fails the test on
// a key that docs/operations.md's table does not list: the table is what
// operators are told Redis holds.
func checkRedisKeysDocumented(t *testing.T, url string) {
	t.Helper()
	opts, err := redis.ParseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(opts)
	defer rdb.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	patterns := documentedRedisKeys(t)
	seen := 0
	iter := rdb.Scan(ctx, 0, "*", 100).Iterator()
	for iter.Next(ctx) {
		key := iter.Val()
		seen++
		ok := false
		for _, p := range patterns {
			if p.MatchString(key) {
				ok = true
				break
			}
		}
		if !ok {
			t.Errorf("Redis holds %q, which docs/operations.md's \"What Redis holds\" does not list", key)
		}
	}
	if err := iter.Err(); err != nil {
		t.Fatal(err)
	}
	if seen == 0 {
		t.Errorf("Redis holds no key after the test's traffic: nothing was checked")
	}
	t.Logf("%d Redis keys, each a row of docs/operations.md's table", seen)
}

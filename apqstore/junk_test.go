package apqstore_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/99designs/gqlgen/graphql/handler/transport"
	"github.com/redis/go-redis/v9"

	"paygraph/apqstore"
	"paygraph/graph"
	"paygraph/restclient"
)

func sum(q string) string {
	s := sha256.Sum256([]byte(q))
	return hex.EncodeToString(s[:])
}

// usedMemory is Redis's INFO used_memory, in bytes.
func usedMemory(t *testing.T, c *redis.Client) int64 {
	t.Helper()
	info, err := c.Info(context.Background(), "memory").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, "used_memory:"); ok {
			n, _ := strconv.ParseInt(v, 10, 64)
			return n
		}
	}
	t.Fatalf("no used_memory in %q", info)
	return 0
}

// TestJunkRegistrationsAddNothingToRedis (issue 22, item 3): through the
// GraphQL server, N registrations of 32,000 bytes that are not GraphQL
// with their correct hash, anonymous and with credentials, add no key to
// Redis; a valid query of a request with credentials is stored. Before,
// gqlgen's APQ extension added each to the store before parsing it: the
// same N adds, made on the store directly, are the "before" figure.
func TestJunkRegistrationsAddNothingToRedis(t *testing.T) {
	t.Parallel()
	const n = 500
	url, addr := apqstore.StartRedisForTest(t)
	ctx := context.Background()
	store, err := apqstore.NewRedis(ctx, url, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	raw := redis.NewClient(&redis.Options{Addr: addr})
	defer raw.Close()
	rc, err := restclient.New(restclient.Config{BaseURL: "http://127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	srv := graph.NewServer(graph.ServerConfig{APQCache: store})
	srv.AddTransport(transport.POST{})
	h := graph.LoadersMiddleware(rc, nil)(srv)
	post := func(query string, creds bool) string {
		b, _ := json.Marshal(map[string]any{"query": query,
			"extensions": map[string]any{"persistedQuery": map[string]any{"version": 1, "sha256Hash": sum(query)}}})
		req := httptest.NewRequest(http.MethodPost, "/graphql", strings.NewReader(string(b)))
		req.Header.Set("Content-Type", "application/json")
		if creds {
			req = req.WithContext(restclient.WithCredentials(req.Context(), restclient.Credentials{APIKey: "pk_test_a", APISecret: "sk_test_a"}))
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec.Body.String()
	}
	keys0, mem0 := raw.DBSize(ctx).Val(), usedMemory(t, raw)
	for i := range n {
		q := fmt.Sprintf("junk %d %s", i, strings.Repeat("x", 32000-12))
		if body := post(q, i%2 == 1); !strings.Contains(body, "GRAPHQL_PARSE_FAILED") {
			t.Fatalf("junk answered %.300s", body)
		}
	}
	keys1, mem1 := raw.DBSize(ctx).Val(), usedMemory(t, raw)
	if keys1 != keys0 {
		t.Errorf("%d junk registrations added %d keys to Redis", n, keys1-keys0)
	}
	// A valid query of a request with credentials is registered.
	valid := "{ __typename }"
	if body := post(valid, true); !strings.Contains(body, `"__typename":"Query"`) {
		t.Fatalf("valid query answered %.300s", body)
	}
	if v, err := raw.Get(ctx, apqstore.DefaultPrefix+sum(valid)).Result(); err != nil || v != valid {
		t.Fatalf("valid query in Redis: %q, %v", v, err)
	}
	// Before: the extension added each to the store before parsing.
	keys2, mem2 := raw.DBSize(ctx).Val(), usedMemory(t, raw)
	for i := range n {
		q := fmt.Sprintf("junk %d %s", i, strings.Repeat("x", 32000-12))
		store.Add(ctx, sum(q), q)
	}
	keys3, mem3 := raw.DBSize(ctx).Val(), usedMemory(t, raw)
	t.Logf("%d junk registrations of 32,000 bytes: before (added before parsing): %+d keys, Redis used_memory %+d bytes; now (through the server, half anonymous, half with credentials): %+d keys, %+d bytes",
		n, keys3-keys2, mem3-mem2, keys1-keys0, mem1-mem0)
}

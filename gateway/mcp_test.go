package gateway_test

import (
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"paygraph/internal/gqltest"
)

// TestMCPSetting: MCP=off serves no /mcp, on offers the read tools but not
// the arbitrary-query one, graphql offers it too; and a tools/list is
// charged to the caller's request budget, as any /mcp request but a tool
// call.
func TestMCPSetting(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		mode      string
		served    bool
		arbitrary bool
	}{
		{"off", "off", false, false},
		{"on", "on", true, false},
		{"graphql", "graphql", true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			g := startGateway(t, setup{env: map[string]string{
				"MCP": tc.mode, "RATE_LIMIT_REQUESTS_PER_SECOND": "1", "Config.RateLimitRequestsBurst": "2",
			}})
			b := g.Biz[0]
			h := http.Header{"X-Api-Key": {b.APIKey}, "X-Api-Secret": {b.APISecret}}
			if !tc.served {
				resp, err := http.Post(g.URL+"/mcp", "application/json", nil)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				if resp.StatusCode != http.StatusNotFound {
					t.Fatalf("MCP=off: /mcp answered %d, want 404", resp.StatusCode)
				}
				return
			}
			c := mcp.NewClient(&mcp.Implementation{Name: "paygraph-test", Version: "1"}, nil)
			s, err := c.Connect(t.Context(), &mcp.StreamableClientTransport{
				Endpoint: g.URL + "/mcp", HTTPClient: &http.Client{Transport: gqltest.HeaderTransport(h), Timeout: 20 * time.Second},
			}, nil)
			if err != nil {
				t.Fatalf("initialize: %v", err)
			}
			defer s.Close()
			list, err := s.ListTools(t.Context(), nil)
			if err != nil {
				t.Fatalf("tools/list: %v", err)
			}
			var names []string
			for _, tool := range list.Tools {
				names = append(names, tool.Name)
			}
			if !slices.Contains(names, "getPayment") || slices.Contains(names, "graphql") != tc.arbitrary {
				t.Fatalf("MCP=%s: tools %v", tc.mode, names)
			}
			// initialize and tools/list spent the burst of 2: one more
			// listing is refused by the merchant's budget.
			_, err = s.ListTools(t.Context(), nil)
			if err == nil {
				t.Fatalf("a third /mcp request past a burst of 2 was not refused")
			}
		})
	}
}

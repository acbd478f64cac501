package graph

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/99designs/gqlgen/graphql"

	"paygraph/restclient"
)

// estimateProbe records, per response, the bytes the resolvers charged
// and the bytes gqlgen built. It is registered before the response budget, so
// its response interceptor runs outside it, with the budget in reach.
type estimateProbe struct {
	mu               sync.Mutex
	charged, written int
}

func (*estimateProbe) ExtensionName() string                   { return "estimateProbe" }
func (*estimateProbe) Validate(graphql.ExecutableSchema) error { return nil }
func (p *estimateProbe) InterceptResponse(ctx context.Context, next graphql.ResponseHandler) *graphql.Response {
	resp := next(ctx)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.charged, p.written = int(budgetFrom(ctx).Used()), len(resp.Data)
	return resp
}

// TestEstimatesBoundWhatIsWritten: for queries of every REST-backed
// shape, with aliases, fragments and repeated fields, the bytes charged
// are at least the bytes gqlgen writes (so the budget bounds the
// response), and not so many more that a documented query would be
// refused for nothing.
func TestEstimatesBoundWhatIsWritten(t *testing.T) {
	t.Parallel()
	probe := &estimateProbe{}
	r := NewRig(t, RigConfig{Server: ServerConfig{Extensions: []graphql.HandlerExtension{probe}}})
	sb, h := r.Sandbox, r.Handler
	biz := sb.Businesses()[0]
	pay := sb.Payments(biz.APIKey)
	link := sb.PaymentLinks(biz.APIKey)[0]
	session := sb.CheckoutSessions(biz.APIKey)[0]
	const allPayment = `id status amount { amount paisa currency } transactionId paymentMethod customer { name email phone address city } createdAt updatedAt`
	for _, tc := range []struct{ name, query string }{
		{"100-item list, every field, edges and nodes",
			`{ payments(first: 100) { edges { cursor node { ` + allPayment + ` } } nodes { id } pageInfo { hasNextPage hasPreviousPage startCursor endCursor } } }`},
		{"list with aliases inside items",
			`{ payments(first: 20, status: SUCCEEDED) { nodes { a: id b: id customer { n1: name n2: name e: email } __typename } } }`},
		{"payment through named and inline fragments",
			`query { payment(id: "` + pay[0].ID + `") { ...P ... on Payment { amount { amount } } } } fragment P on Payment { ` + allPayment + ` }`},
		{"nodes of both kinds",
			`{ nodes(ids: ["` + pay[1].ID + `", "` + link.ID + `", "` + pay[2].ID + `"]) { __typename id ... on Payment { status customer { name } } ... on PaymentLink { url slug title description amount { amount currency } isReusable isActive currentUses maxUses expiresAt successUrl createdAt updatedAt } } }`},
		{"node, link and payment aliases",
			`{ n: node(id: "` + link.ID + `") { id ... on PaymentLink { title } } l: paymentLink(id: "` + link.ID + `") { url title amount { paisa } } p1: payment(id: "` + pay[3].ID + `") { id } p2: payment(id: "` + pay[3].ID + `") { ` + allPayment + ` } }`},
		{"checkout session with its payment and metadata",
			`{ checkoutSession(id: "` + session.Reference + `") { sessionId reference paymentId status paymentStatus amount { amount paisa currency } subtotal { amount } customer { name email phone address city } successUrl cancelUrl transactionId paymentMethod metadata { key value k2: key } createdAt updatedAt payment { ` + allPayment + ` } } }`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body, _ := json.Marshal(map[string]any{"query": tc.query})
			req := httptest.NewRequest(http.MethodPost, "/graphql", bytes.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set(restclient.HeaderAPIKey, biz.APIKey)
			req.Header.Set(restclient.HeaderAPISecret, biz.APISecret)
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if strings.Contains(rec.Body.String(), `"errors"`) {
				t.Fatalf("answer %s", rec.Body)
			}
			probe.mu.Lock()
			charged, written := probe.charged, probe.written
			probe.mu.Unlock()
			t.Logf("charged %d bytes for %d written (%.2fx)", charged, written, float64(charged)/float64(written))
			if charged < written {
				t.Errorf("charged %d bytes, less than the %d written", charged, written)
			}
			if charged > 2*written {
				t.Errorf("charged %d bytes, more than twice the %d written", charged, written)
			}
		})
	}
}

package restclient

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"paygraph/internal/testenv"
	"paygraph/sandbox"
)

// Decoding benchmarks on real-size bodies rendered by the sandbox (the
// existing BenchmarkDecodeList decodes a 2-item page). They decode through
// the same path as Client.attempt (decodeBody: the body read once into a
// pooled buffer and unmarshalled, amounts kept as JSON number text), then
// the conversion into the exported types (exact paisa, parsed times).
// Figures: docs/perf-log/2026-11-benchmarks.md.
//
//	go test -run '^$' -bench 'DecodePage100|DecodePaymentDetail|GetPaymentStub' -benchmem ./restclient

func sandboxBody(b testing.TB, path string) []byte {
	b.Helper()
	sb := sandbox.New(sandbox.Options{})
	biz := sb.Businesses()[0]
	if path == "" {
		path = "/api/v1/payments/" + sb.Payments(biz.APIKey)[0].ID
	}
	req := httptest.NewRequest(http.MethodGet, path, nil)
	req.Header.Set("x-api-key", biz.APIKey)
	req.Header.Set("x-api-secret", biz.APISecret)
	rec := httptest.NewRecorder()
	sb.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		b.Fatalf("sandbox %s: %d", path, rec.Code)
	}
	return rec.Body.Bytes()
}

// BenchmarkDecodePage100: one 100-item REST list page.
func BenchmarkDecodePage100(b *testing.B) {
	body := sandboxBody(b, "/api/v1/payments?limit=100")
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		var w wirePage
		if err := decodeForTest(body, &w); err != nil {
			b.Fatal(err)
		}
		p, err := w.toPage()
		if err != nil || len(p.Data) != 100 {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecodePaymentDetail: one retrieve-payment body.
func BenchmarkDecodePaymentDetail(b *testing.B) {
	body := sandboxBody(b, "")
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		var w wirePayment
		if err := decodeForTest(body, &w); err != nil {
			b.Fatal(err)
		}
		var p Payment
		if err := w.to(&p, true); err != nil {
			b.Fatal(err)
		}
	}
}

// stubRT answers every request with one canned body, without a network.
type stubRT struct{ body []byte }

type stubBody struct{ bytes.Reader }

func (*stubBody) Close() error { return nil }

func (s *stubRT) RoundTrip(r *http.Request) (*http.Response, error) {
	body := &stubBody{}
	body.Reset(s.body)
	return &http.Response{StatusCode: http.StatusOK, Header: http.Header{}, Body: body,
		ContentLength: int64(len(s.body)), Request: r}, nil
}

// BenchmarkGetPaymentStub: a whole Client.GetPayment (URL, credentials,
// timeout context, breaker, http.Client, decode) over a stub transport:
// the REST client's share of a single-payment query. The stub costs 3
// allocations (response, header, body).
func BenchmarkGetPaymentStub(b *testing.B) {
	body := sandboxBody(b, "")
	c, err := New(Config{BaseURL: "http://rest.invalid", HTTPClient: &http.Client{Transport: &stubRT{body: body}}})
	if err != nil {
		b.Fatal(err)
	}
	ctx := WithCredentials(context.Background(), Credentials{APIKey: "ak_test_x", APISecret: "sk_test_y"})
	var rec struct{ ID string }
	if err := json.Unmarshal(body, &rec); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.GetPayment(ctx, rec.ID); err != nil { // the id the body holds
			b.Fatal(err)
		}
	}
}

// TestDecodeAllocationBudget keeps decoding within the allocation budgets
// of docs/perf-log/2026-11-benchmarks.md (issue 14, with the fast path of wirefast.go: measured
// 37 for a 100-item page, 5 for a payment; before it 1,662 and 27).
func TestDecodeAllocationBudget(t *testing.T) {
	if testenv.RaceEnabled() {
		t.Skip("the race detector changes allocation counts")
	}
	page, detail := sandboxBody(t, "/api/v1/payments?limit=100"), sandboxBody(t, "")
	for _, tc := range []struct {
		name   string
		budget float64
		decode func() error
	}{
		{"100-item page", 40, func() error {
			var w wirePage
			if err := decodeForTest(page, &w); err != nil {
				return err
			}
			_, err := w.toPage()
			return err
		}},
		{"payment detail", 5, func() error {
			var w wirePayment
			if err := decodeForTest(detail, &w); err != nil {
				return err
			}
			var p Payment
			return w.to(&p, true)
		}},
	} {
		if err := tc.decode(); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got := testing.AllocsPerRun(50, func() { _ = tc.decode() }); got > tc.budget {
			t.Errorf("%s: %.0f allocs/op, over the budget of %.0f", tc.name, got, tc.budget)
		}
	}
}

package restclient

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"
)

// wantExactAmount fails unless got is the exact paisa value of the JSON
// number text raw (checked with big.Rat, independently of parseDecimal).
func wantExactAmount(t *testing.T, what string, raw string, got Paisa) {
	t.Helper()
	if got > MaxSafePaisa || got < -MaxSafePaisa {
		t.Fatalf("%s %q decoded to %d, out of range", what, raw, got)
	}
	if want, ok := ratPaisaBounded(raw); ok && want != got {
		t.Fatalf("%s %q decoded to %d paisa; exact value %d", what, raw, got, want)
	}
	if back, err := ParseTaka(got.String()); err != nil || back != got {
		t.Fatalf("%s %d does not round-trip through its text: %v", what, got, err)
	}
}

func wantUTC(t *testing.T, what string, ts ...time.Time) {
	t.Helper()
	for _, v := range ts {
		if v.IsZero() || v.Location() != time.UTC {
			t.Fatalf("%s: timestamp %v is zero or not UTC", what, v)
		}
	}
}

func FuzzDecodePage(f *testing.F) {
	f.Add([]byte(listBody))
	f.Add([]byte(`{"data":[],"has_more":false,"next_cursor":null}`))
	f.Add([]byte(`{"data":[],"has_more":true,"next_cursor":""}`))
	f.Add([]byte(`{"data":null,"has_more":true}`))
	f.Add([]byte(`{"data":[{"id":"p","status":"PENDING","amount":0.1e1,"created_at":"2026-11-21T09:30:00Z","updated_at":"2026-11-21T09:30:00+0600"}],"has_more":true,"next_cursor":"x"}`))
	f.Add([]byte(`{"data":[{"id":"p","status":"PENDING","amount":19.999,"created_at":"2026-11-21T09:30:00Z","updated_at":"2026-11-21T09:30:00Z"}],"has_more":false}`))
	f.Add([]byte(`{"data":[{"id":"p","status":"SUCCEEDED","amount":-90071992547409.91,"created_at":"2026-11-21T09:30:00.1Z","updated_at":"2026-11-21T09:30:00-05:30"}],"has_more":false}`))
	f.Add([]byte(`{"error":"Invalid cursor"}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		var w wirePage
		if err := decodeForTest(body, &w); err != nil {
			return
		}
		if _, isErr := w.errorBody(); isErr {
			return
		}
		page, err := w.toPage()
		if err != nil {
			if page != nil {
				t.Fatalf("page %+v returned with error %v", page, err)
			}
			return
		}
		if len(page.Data) != len(w.Data) {
			t.Fatalf("%d items decoded from %d", len(page.Data), len(w.Data))
		}
		if page.HasMore && (page.NextCursor == nil || *page.NextCursor == "") {
			t.Fatalf("has_more without a next cursor: %+v", page)
		}
		if page.NextCursor != nil && *page.NextCursor == "" {
			t.Fatal("empty next cursor not normalised to nil")
		}
		for i, p := range page.Data {
			if p.ID == "" || p.Detailed {
				t.Fatalf("item %d: %+v", i, p)
			}
			switch p.Status {
			case StatusPending, StatusSucceeded, StatusFailed, StatusCancelled, StatusRefunded:
			default:
				t.Fatalf("item %d: status %q accepted", i, p.Status)
			}
			wantExactAmount(t, "amount", string(w.Data[i].Amount), p.Amount)
			wantUTC(t, "payment", p.CreatedAt, p.UpdatedAt)
		}
	})
}

func FuzzDecodePaymentLink(f *testing.F) {
	f.Add([]byte(linkNullsBody))
	f.Add([]byte(linkFullBody))
	f.Add([]byte(`{"id":"pl_1","amount":"5","current_uses":-1,"created_at":"2026-11-21T09:30:00Z","updated_at":"2026-11-21T09:30:00Z"}`))
	f.Add([]byte(`{"id":"pl_1","amount":1e-2,"max_uses":1.5,"created_at":"2026-11-21T09:30:00Z","updated_at":"2026-11-21T09:30:00Z"}`))
	f.Add([]byte(`{"id":"pl_1","amount":0.001,"max_uses":9007199254740993,"expires_at":"","created_at":"2026-11-21T09:30:00Z","updated_at":"2026-11-21T09:30:00Z"}`))
	f.Add([]byte(`{"id":"pl_1","amount":10,"current_uses":2e0,"expires_at":"2026-13-01T00:00:00Z","created_at":"2026-11-21T09:30:00Z","updated_at":"2026-11-21T09:30:00Z"}`))
	f.Add([]byte(`{"error":"Payment link not found"}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		var w wireLink
		if err := decodeForTest(body, &w); err != nil {
			return
		}
		if _, isErr := w.errorBody(); isErr {
			return
		}
		l, err := w.toLink()
		if err != nil {
			if l != nil {
				t.Fatalf("link %+v returned with error %v", l, err)
			}
			return
		}
		if l.ID == "" {
			t.Fatal("link without id accepted")
		}
		wantExactAmount(t, "amount", string(w.Amount), l.Amount)
		if l.CurrentUses < 0 || (l.MaxUses != nil && *l.MaxUses < 0) {
			t.Fatalf("negative counter: current %d max %v", l.CurrentUses, l.MaxUses)
		}
		if w.CurrentUses != "" {
			if want, ok := ratPaisaBounded(string(w.CurrentUses)); ok && int64(want) != int64(l.CurrentUses)*100 {
				t.Fatalf("current_uses %q decoded to %d", w.CurrentUses, l.CurrentUses)
			}
		}
		if l.Currency == "" {
			t.Fatal("empty currency")
		}
		wantUTC(t, "link", l.CreatedAt, l.UpdatedAt)
		if l.ExpiresAt != nil {
			wantUTC(t, "link expires_at", *l.ExpiresAt)
		}
	})
}

// roundTripFunc lets a test be the REST API without a network.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// FuzzClientResponse feeds arbitrary status codes and bodies to the client
// as the answer of each endpoint. Invariants: no panic; a failure is
// always a *Error with a known kind; a success is a fully decoded record.
func FuzzClientResponse(f *testing.F) {
	f.Add(uint8(0), 200, []byte(paymentBody))
	f.Add(uint8(1), 200, []byte(listBody))
	f.Add(uint8(2), 200, []byte(linkFullBody))
	f.Add(uint8(3), 200, []byte(sessionBody))
	f.Add(uint8(0), 404, []byte(`{"error":"Payment not found"}`))
	f.Add(uint8(1), 429, []byte(`{"error":7}`))
	f.Add(uint8(2), 200, []byte(`{"error":"Payment link not found"}`))
	f.Add(uint8(3), 302, []byte(``))
	f.Add(uint8(0), 200, []byte(`<html>`))
	f.Fuzz(func(t *testing.T, which uint8, status int, body []byte) {
		if status < 100 || status > 999 {
			status = 200
		}
		c, err := New(Config{BaseURL: "http://rest.invalid", HTTPClient: &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
			return &http.Response{StatusCode: status, Header: http.Header{"Content-Type": {"application/json"}},
				Body: io.NopCloser(bytes.NewReader(body)), ContentLength: int64(len(body)), Request: r}, nil
		})}})
		if err != nil {
			t.Fatal(err)
		}
		ctx := credCtx()
		var ok bool
		switch which % 4 {
		case 0:
			var p *Payment
			p, err = c.GetPayment(ctx, "pay_1")
			ok = err == nil && p != nil && p.ID != "" && p.Detailed
		case 1:
			var pg *PaymentPage
			pg, err = c.ListPayments(ctx, ListParams{Limit: 5})
			ok = err == nil && pg != nil && pg.Data != nil
		case 2:
			var l *PaymentLink
			l, err = c.GetPaymentLink(ctx, "pl_1")
			ok = err == nil && l != nil && l.ID != ""
		case 3:
			var s *CheckoutSession
			s, err = c.GetCheckoutSession(ctx, "REF1")
			ok = err == nil && s != nil && s.ID != "" && s.Metadata != nil
		}
		if err != nil {
			var re *Error
			if !errors.As(err, &re) || re.Kind.String() == "" || strings.HasPrefix(re.Kind.String(), "kind(") {
				t.Fatalf("error %v (%T) is not a typed *Error", err, err)
			}
			if status >= 200 && status <= 299 && re.Kind != KindUpstream && re.Kind != KindNotFound {
				t.Fatalf("a %d answer gave kind %v: %v", status, re.Kind, err)
			}
			return
		}
		if !ok {
			t.Fatal("success without a complete record")
		}
		if status < 200 || status > 299 {
			t.Fatalf("status %d accepted as success", status)
		}
	})
}

// wireView records the requests a client made, as a server parses them off
// the wire (http.ReadRequest, the same parser net/http's server uses).
type wireView struct {
	mu   sync.Mutex
	seen []*http.Request
}

func (v *wireView) RoundTrip(r *http.Request) (*http.Response, error) {
	var buf bytes.Buffer
	if err := r.Write(&buf); err != nil {
		return nil, err
	}
	parsed, err := http.ReadRequest(bufio.NewReader(&buf))
	if err != nil {
		return nil, err
	}
	v.mu.Lock()
	v.seen = append(v.seen, parsed)
	v.mu.Unlock()
	body := `{"error":"Not found"}`
	return &http.Response{StatusCode: 404, Header: http.Header{}, Body: io.NopCloser(strings.NewReader(body)),
		ContentLength: int64(len(body)), Request: r}, nil
}

// refusedID is the specification of the ids the client must refuse
// without a call: written independently of checkID.
func refusedID(id string) bool {
	if id == "" || id == "." || id == ".." || len(id) > MaxIDLength || !utf8.ValidString(id) {
		return true
	}
	for _, r := range id {
		if r < 0x20 || r == 0x7f {
			return true
		}
	}
	return false
}

// FuzzRequestPath: for any id, the client either refuses it (KindInvalidID,
// no request) or requests exactly <base>/api/v1/<route>/<one segment>,
// where the segment unescapes to the id, and with no query string.
func FuzzRequestPath(f *testing.F) {
	for _, id := range []string{"pay_prod_1", "../payment-links/pl_x", "a?b", "a#b", "%2e%2e", ".", "..", "...",
		"a/b", "a;b=c&d", "pay_ünï", "a\nb", "\xff", "a\\b", "%", "a b", "//", "?", "#", "~", strings.Repeat("a", MaxIDLength)} {
		f.Add(id, uint8(0), uint8(0))
	}
	f.Add("../../x", uint8(1), uint8(1))
	f.Add("x", uint8(2), uint8(2))
	bases := []struct{ url, escaped string }{
		{"http://rest.invalid", ""},
		{"http://rest.invalid/prefix/", "/prefix"},
		{"http://rest.invalid/pre%2Ffix", "/pre%2Ffix"},
	}
	routes := []string{"/api/v1/payments", "/api/v1/payment-links", "/api/v1/checkout/sessions"}
	f.Fuzz(func(t *testing.T, id string, which, base uint8) {
		b := bases[int(base)%len(bases)]
		view := &wireView{}
		c, err := New(Config{BaseURL: b.url, HTTPClient: &http.Client{Transport: view}})
		if err != nil {
			t.Fatal(err)
		}
		ctx := credCtx()
		route := routes[int(which)%len(routes)]
		switch int(which) % len(routes) {
		case 0:
			_, err = c.GetPayment(ctx, id)
		case 1:
			_, err = c.GetPaymentLink(ctx, id)
		case 2:
			_, err = c.GetCheckoutSession(ctx, id)
		}
		if refusedID(id) {
			if KindOf(err) != KindInvalidID || len(view.seen) != 0 {
				t.Fatalf("id %q: err %v after %d requests; want KindInvalidID and none", id, err, len(view.seen))
			}
			return
		}
		if KindOf(err) != KindNotFound || len(view.seen) != 1 {
			t.Fatalf("id %q: err %v after %d requests; want one request answered 404", id, err, len(view.seen))
		}
		r := view.seen[0]
		if r.Method != http.MethodGet || r.URL.RawQuery != "" || r.URL.Fragment != "" || r.Host != "rest.invalid" {
			t.Fatalf("id %q: request %s %q host %q", id, r.Method, r.RequestURI, r.Host)
		}
		p := r.URL.EscapedPath()
		prefix := b.escaped + route + "/"
		seg, ok := strings.CutPrefix(p, prefix)
		if !ok || seg == "" || strings.Contains(seg, "/") {
			t.Fatalf("id %q: path %q is not %s<one segment>", id, p, prefix)
		}
		if got, err := url.PathUnescape(seg); err != nil || got != id {
			t.Fatalf("id %q: segment %q unescapes to %q, %v", id, seg, got, err)
		}
		if seg == "." || seg == ".." || strings.ContainsAny(seg, "?#\\") {
			t.Fatalf("id %q: segment %q could change the path", id, seg)
		}
		if _, err := url.Parse("http://h" + p); err != nil {
			t.Fatalf("id %q: path %q does not parse: %v", id, p, err)
		}
	})
}

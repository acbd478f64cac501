package restclient

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

const (
	testKey    = "ak_test_0123456789abcdef"
	testSecret = "sk_test_SECRETfedcba9876543210"
)

func credCtx() context.Context {
	return WithCredentials(context.Background(), Credentials{APIKey: testKey, APISecret: testSecret})
}

// seen is what the test server recorded of one request.
type seen struct {
	Method, EscapedPath, RawQuery string
	Key, Secret, Accept           string
	Query                         map[string][]string
}

// testServer is an httptest server that counts and records the calls it gets.
type testServer struct {
	*httptest.Server // nil for an in-memory server
	URL              string
	hc               *http.Client // nil: the client's own transport, to the listener
	calls            atomic.Int64
	mu               sync.Mutex
	reqs             []seen
}

func (s *testServer) last(t *testing.T) seen {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.reqs) == 0 {
		t.Fatal("server got no request")
	}
	return s.reqs[len(s.reqs)-1]
}

func newTestServer(t *testing.T, h http.HandlerFunc) *testServer {
	t.Helper()
	ts := &testServer{}
	ts.Server = httptest.NewServer(ts.recording(h))
	ts.URL = ts.Server.URL
	t.Cleanup(ts.Close)
	return ts
}

// recording counts and records each request before h answers it.
func (ts *testServer) recording(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ts.calls.Add(1)
		ts.mu.Lock()
		ts.reqs = append(ts.reqs, seen{
			Method: r.Method, EscapedPath: r.URL.EscapedPath(), RawQuery: r.URL.RawQuery,
			Key: r.Header.Get("x-api-key"), Secret: r.Header.Get("x-api-secret"), Accept: r.Header.Get("Accept"),
			Query: r.URL.Query(),
		})
		ts.mu.Unlock()
		h(w, r)
	}
}

// jsonServer answers every request with status and body.
func jsonServer(t *testing.T, status int, body string) *testServer {
	return newTestServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = w.Write([]byte(body))
	})
}

func newClient(t *testing.T, cfg Config) *Client {
	t.Helper()
	c, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return c
}

func strp(s string) *string { return &s }
func intp(i int) *int       { return &i }

func ts(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		panic(err)
	}
	return t.UTC()
}

// Bodies shaped exactly like rest-api.md.
const (
	paymentBody = `{
  "id": "pay_prod_0123456789abcdef0123456789abcdef",
  "status": "SUCCEEDED",
  "amount": 1250.00,
  "currency": "BDT",
  "transaction_id": "TXN8A7B6C5D",
  "payment_method": "bkash",
  "customer": {
    "name": "Rahim Uddin",
    "email": "rahim@example.com",
    "phone": "+8801700000000",
    "address": "House 1, Road 2, Dhaka"
  },
  "created_at": "2026-11-21T09:30:00.000Z",
  "updated_at": "2026-11-21T09:31:05.123Z"
}`
	listBody = `{
  "data": [
    {
      "id": "pay_prod_0123456789abcdef0123456789abcdef",
      "status": "SUCCEEDED",
      "amount": 19.99,
      "currency": "BDT",
      "transaction_id": "TXN1",
      "payment_method": "bkash",
      "customer": {"name": "Rahim Uddin", "email": "rahim@example.com", "phone": "+8801700000000"},
      "created_at": "2026-11-21T09:30:00.000Z",
      "updated_at": "2026-11-21T09:30:00.000Z"
    },
    {
      "id": "pay_prod_fedcba9876543210fedcba9876543210",
      "status": "PENDING",
      "amount": 0.29,
      "currency": "BDT",
      "payment_method": "sslcommerz",
      "customer": {"name": "Karim", "email": "karim@example.com", "phone": "+8801800000000"},
      "created_at": "2026-11-20T08:00:00.000Z",
      "updated_at": "2026-11-20T08:00:01.000Z"
    }
  ],
  "has_more": true,
  "next_cursor": "cur_2"
}`
	linkNullsBody = `{
  "id": "pl_abc123",
  "url": "https://pay.example.com/summer-sale",
  "slug": "summer-sale",
  "title": "Summer sale",
  "description": null,
  "amount": 500.50,
  "currency": "BDT",
  "is_reusable": true,
  "is_active": true,
  "current_uses": 3,
  "max_uses": null,
  "expires_at": null,
  "success_url": "https://shop.example.com/thanks",
  "created_at": "2026-11-01T00:00:00.000Z",
  "updated_at": "2026-11-02T00:00:00.000Z"
}`
	linkFullBody = `{
  "id": "pl_xyz",
  "url": "https://pay.example.com/one-off",
  "slug": "one-off",
  "title": "One off",
  "description": "A single payment",
  "amount": 100.1,
  "currency": "BDT",
  "is_reusable": false,
  "is_active": false,
  "current_uses": 0,
  "max_uses": 1,
  "expires_at": "2026-12-31T23:59:59.000Z",
  "created_at": "2026-11-01T00:00:00.000Z",
  "updated_at": "2026-11-01T00:00:00.000Z"
}`
	sessionBody = `{
  "data": {
    "id": "pay_prod_0123456789abcdef0123456789abcdef",
    "payment_id": "pay_prod_0123456789abcdef0123456789abcdef",
    "reference": "REF12345",
    "status": "SUCCEEDED",
    "payment_status": "SUCCEEDED",
    "amount": "19.99",
    "amount_paisa": 1999,
    "subtotal": "18.50",
    "subtotal_paisa": 1850,
    "currency": "BDT",
    "customer": {"name": "Rahim", "email": "rahim@example.com", "phone": "+8801700000000", "address": "Road 2", "city": "Dhaka"},
    "success_url": "https://shop.example.com/ok",
    "cancel_url": "https://shop.example.com/cancel",
    "transaction_id": "TXN9",
    "payment_method": "bkash",
    "meta_data": {"order_id": "o-1", "cart": "c-9", "Zeta": "z", "alpha": "a"},
    "created_at": "2026-11-21T09:30:00.000Z",
    "updated_at": "2026-11-21T09:30:00.000Z"
  }
}`
)

func TestGetPaymentDecodes(t *testing.T) {
	t.Parallel()
	srv := jsonServer(t, 200, paymentBody)
	c := newClient(t, Config{BaseURL: srv.URL})
	got, err := c.GetPayment(credCtx(), "pay_prod_0123456789abcdef0123456789abcdef")
	if err != nil {
		t.Fatal(err)
	}
	want := &Payment{
		ID: "pay_prod_0123456789abcdef0123456789abcdef", Status: StatusSucceeded, Amount: 125000, Currency: "BDT",
		TransactionID: strp("TXN8A7B6C5D"), PaymentMethod: strp("bkash"),
		Customer: Customer{Name: strp("Rahim Uddin"), Email: strp("rahim@example.com"), Phone: strp("+8801700000000"),
			Address: strp("House 1, Road 2, Dhaka")},
		CreatedAt: ts("2026-11-21T09:30:00.000Z"), UpdatedAt: ts("2026-11-21T09:31:05.123Z"), Detailed: true,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got  %+v\nwant %+v", got, want)
	}
	r := srv.last(t)
	if r.Method != "GET" || r.EscapedPath != "/api/v1/payments/pay_prod_0123456789abcdef0123456789abcdef" || r.RawQuery != "" {
		t.Errorf("request %s %s?%s", r.Method, r.EscapedPath, r.RawQuery)
	}
	if r.Key != testKey || r.Secret != testSecret || r.Accept != "application/json" {
		t.Errorf("headers key=%q secret=%q accept=%q", r.Key, r.Secret, r.Accept)
	}
}

func TestListPaymentsDecodes(t *testing.T) {
	t.Parallel()
	srv := jsonServer(t, 200, listBody)
	c := newClient(t, Config{BaseURL: srv.URL})
	got, err := c.ListPayments(credCtx(), ListParams{})
	if err != nil {
		t.Fatal(err)
	}
	if r := srv.last(t); r.EscapedPath != "/api/v1/payments" || r.RawQuery != "" {
		t.Errorf("request %s?%s; want no query", r.EscapedPath, r.RawQuery)
	}
	want := &PaymentPage{
		HasMore: true, NextCursor: strp("cur_2"),
		Data: []Payment{
			{ID: "pay_prod_0123456789abcdef0123456789abcdef", Status: StatusSucceeded, Amount: 1999, Currency: "BDT",
				TransactionID: strp("TXN1"), PaymentMethod: strp("bkash"),
				Customer:  Customer{Name: strp("Rahim Uddin"), Email: strp("rahim@example.com"), Phone: strp("+8801700000000")},
				CreatedAt: ts("2026-11-21T09:30:00Z"), UpdatedAt: ts("2026-11-21T09:30:00Z")},
			{ID: "pay_prod_fedcba9876543210fedcba9876543210", Status: StatusPending, Amount: 29, Currency: "BDT",
				PaymentMethod: strp("sslcommerz"),
				Customer:      Customer{Name: strp("Karim"), Email: strp("karim@example.com"), Phone: strp("+8801800000000")},
				CreatedAt:     ts("2026-11-20T08:00:00Z"), UpdatedAt: ts("2026-11-20T08:00:01Z")},
		},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got  %+v\nwant %+v", got, want)
	}

	// Last page: next_cursor null, empty data.
	srv2 := jsonServer(t, 200, `{"data": [], "has_more": false, "next_cursor": null}`)
	c2 := newClient(t, Config{BaseURL: srv2.URL})
	page, err := c2.ListPayments(credCtx(), ListParams{Limit: 20})
	if err != nil {
		t.Fatal(err)
	}
	if page.HasMore || page.NextCursor != nil || page.Data == nil || len(page.Data) != 0 {
		t.Errorf("last page = %+v", page)
	}
}

func TestListPaymentsQuery(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		statusParam string
		params      ListParams
		wantQuery   map[string][]string
		wantRaw     string
	}{
		{"empty", "", ListParams{}, map[string][]string{}, ""},
		{"limit only", "", ListParams{Limit: 7}, map[string][]string{"limit": {"7"}}, "limit=7"},
		{"default status param", "", ListParams{Status: StatusFailed},
			map[string][]string{"status": {"FAILED"}}, "status=FAILED"},
		{"custom status param", "payment_status", ListParams{Limit: 100, Cursor: "c/ur+sor&x=1 ?#", Status: StatusFailed},
			map[string][]string{"limit": {"100"}, "cursor": {"c/ur+sor&x=1 ?#"}, "payment_status": {"FAILED"}},
			"cursor=c%2Fur%2Bsor%26x%3D1+%3F%23&limit=100&payment_status=FAILED"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := jsonServer(t, 200, `{"data": [], "has_more": false, "next_cursor": null}`)
			c := newClient(t, Config{BaseURL: srv.URL, StatusParam: tt.statusParam})
			if _, err := c.ListPayments(credCtx(), tt.params); err != nil {
				t.Fatal(err)
			}
			r := srv.last(t)
			if r.RawQuery != tt.wantRaw {
				t.Errorf("RawQuery = %q; want %q", r.RawQuery, tt.wantRaw)
			}
			if !reflect.DeepEqual(r.Query, tt.wantQuery) {
				t.Errorf("query = %v; want %v", r.Query, tt.wantQuery)
			}
		})
	}
}

func TestGetPaymentLinkDecodes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		body string
		want *PaymentLink
	}{
		{"nulls", linkNullsBody, &PaymentLink{
			ID: "pl_abc123", URL: "https://pay.example.com/summer-sale", Slug: "summer-sale", Title: "Summer sale",
			Amount: 50050, Currency: "BDT", IsReusable: true, IsActive: true, CurrentUses: 3,
			SuccessURL: strp("https://shop.example.com/thanks"),
			CreatedAt:  ts("2026-11-01T00:00:00Z"), UpdatedAt: ts("2026-11-02T00:00:00Z"),
		}},
		{"full, absent success_url", linkFullBody, &PaymentLink{
			ID: "pl_xyz", URL: "https://pay.example.com/one-off", Slug: "one-off", Title: "One off",
			Description: strp("A single payment"), Amount: 10010, Currency: "BDT", CurrentUses: 0, MaxUses: intp(1),
			ExpiresAt: func() *time.Time { t := ts("2026-12-31T23:59:59Z"); return &t }(),
			CreatedAt: ts("2026-11-01T00:00:00Z"), UpdatedAt: ts("2026-11-01T00:00:00Z"),
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := jsonServer(t, 200, tt.body)
			c := newClient(t, Config{BaseURL: srv.URL})
			got, err := c.GetPaymentLink(credCtx(), tt.want.ID)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got  %+v\nwant %+v", got, tt.want)
			}
			if r := srv.last(t); r.EscapedPath != "/api/v1/payment-links/"+tt.want.ID {
				t.Errorf("path %s", r.EscapedPath)
			}
		})
	}
}

func TestGetCheckoutSessionDecodes(t *testing.T) {
	t.Parallel()
	srv := jsonServer(t, 200, sessionBody)
	c := newClient(t, Config{BaseURL: srv.URL})
	got, err := c.GetCheckoutSession(credCtx(), "REF12345")
	if err != nil {
		t.Fatal(err)
	}
	want := &CheckoutSession{
		ID: "pay_prod_0123456789abcdef0123456789abcdef", PaymentID: "pay_prod_0123456789abcdef0123456789abcdef",
		Reference: "REF12345", Status: "SUCCEEDED", PaymentStatus: "SUCCEEDED", Amount: 1999, Subtotal: 1850, Currency: "BDT",
		Customer: Customer{Name: strp("Rahim"), Email: strp("rahim@example.com"), Phone: strp("+8801700000000"),
			Address: strp("Road 2"), City: strp("Dhaka")},
		SuccessURL: strp("https://shop.example.com/ok"), CancelURL: strp("https://shop.example.com/cancel"),
		TransactionID: strp("TXN9"), PaymentMethod: strp("bkash"),
		Metadata:  []MetadataEntry{{"Zeta", "z"}, {"alpha", "a"}, {"cart", "c-9"}, {"order_id", "o-1"}},
		CreatedAt: ts("2026-11-21T09:30:00Z"), UpdatedAt: ts("2026-11-21T09:30:00Z"),
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got  %+v\nwant %+v", got, want)
	}
	if r := srv.last(t); r.EscapedPath != "/api/v1/checkout/sessions/REF12345" {
		t.Errorf("path %s", r.EscapedPath)
	}
}

func TestCheckoutSessionVariants(t *testing.T) {
	t.Parallel()
	base := `"id":"s1","created_at":"2026-11-21T09:30:00.000Z","updated_at":"2026-11-21T09:30:00.000Z"`
	tests := []struct {
		name         string
		body         string
		wantErr      bool
		wantAmount   Paisa
		wantSubtotal Paisa
		wantMeta     []MetadataEntry
	}{
		{"paisa only", `{"data":{` + base + `,"amount_paisa":1999,"subtotal_paisa":1999}}`, false, 1999, 1999, []MetadataEntry{}},
		{"taka only", `{"data":{` + base + `,"amount":"19.99","subtotal":"0.29"}}`, false, 1999, 29, []MetadataEntry{}},
		{"meta null", `{"data":{` + base + `,"amount_paisa":1,"subtotal_paisa":1,"meta_data":null}}`, false, 1, 1, []MetadataEntry{}},
		{"meta empty", `{"data":{` + base + `,"amount_paisa":1,"subtotal_paisa":1,"meta_data":{}}}`, false, 1, 1, []MetadataEntry{}},
		{"disagree", `{"data":{` + base + `,"amount":"19.99","amount_paisa":1998,"subtotal_paisa":1}}`, true, 0, 0, nil},
		{"fractional paisa", `{"data":{` + base + `,"amount_paisa":19.5,"subtotal_paisa":1}}`, true, 0, 0, nil},
		{"no amount", `{"data":{` + base + `,"subtotal_paisa":1}}`, true, 0, 0, nil},
		{"no subtotal", `{"data":{` + base + `,"amount_paisa":1}}`, true, 0, 0, nil},
		{"meta non-string", `{"data":{` + base + `,"amount_paisa":1,"subtotal_paisa":1,"meta_data":{"n":1}}}`, true, 0, 0, nil},
		{"no wrapper", `{` + base + `,"amount_paisa":1,"subtotal_paisa":1}`, true, 0, 0, nil},
		{"data null", `{"data":null}`, true, 0, 0, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := jsonServer(t, 200, tt.body)
			c := newClient(t, Config{BaseURL: srv.URL})
			got, err := c.GetCheckoutSession(credCtx(), "s1")
			if tt.wantErr {
				if KindOf(err) != KindUpstream || err == nil || !strings.Contains(err.Error(), "unexpected") {
					t.Fatalf("err = %v; want KindUpstream unexpected", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Amount != tt.wantAmount || got.Subtotal != tt.wantSubtotal || !reflect.DeepEqual(got.Metadata, tt.wantMeta) || got.Metadata == nil {
				t.Errorf("got amount=%d subtotal=%d meta=%#v", got.Amount, got.Subtotal, got.Metadata)
			}
			if got.Currency != "BDT" {
				t.Errorf("currency %q", got.Currency)
			}
		})
	}
}

func TestPaymentBodyVariants(t *testing.T) {
	t.Parallel()
	const good = `"id":"p","status":"FAILED","amount":19.99,"created_at":"2026-11-21T09:30:00.000Z","updated_at":"2026-11-21T09:30:00Z"`
	tests := []struct {
		name    string
		body    string
		wantErr bool
		check   func(*Payment) bool
	}{
		{"minimal; currency defaults to BDT, nulls are nil", `{` + good + `,"transaction_id":null,"customer":null}`, false,
			func(p *Payment) bool {
				return p.Currency == "BDT" && p.TransactionID == nil && p.Customer == (Customer{}) && p.Amount == 1999
			}},
		{"offset timestamp to UTC", `{"id":"p","status":"REFUNDED","amount":1,"created_at":"2026-11-21T15:30:00+06:00","updated_at":"2026-11-21T15:30:00.5+0600"}`, false,
			func(p *Payment) bool {
				return p.CreatedAt.Equal(ts("2026-11-21T09:30:00Z")) && p.CreatedAt.Location() == time.UTC &&
					p.UpdatedAt.Equal(ts("2026-11-21T09:30:00.5Z")) && p.UpdatedAt.Location() == time.UTC
			}},
		{"amount as string", `{"id":"p","status":"CANCELLED","amount":"0.29","created_at":"2026-11-21T09:30:00Z","updated_at":"2026-11-21T09:30:00Z"}`, false,
			func(p *Payment) bool { return p.Amount == 29 }},
		{"unknown fields ignored", `{` + good + `,"extra":{"a":[1,2]}}`, false, func(p *Payment) bool { return p.ID == "p" }},
		{"amount too precise", `{"id":"p","status":"FAILED","amount":1.999,"created_at":"2026-11-21T09:30:00Z","updated_at":"2026-11-21T09:30:00Z"}`, true, nil},
		{"amount huge", `{"id":"p","status":"FAILED","amount":1e300,"created_at":"2026-11-21T09:30:00Z","updated_at":"2026-11-21T09:30:00Z"}`, true, nil},
		{"amount not a number", `{"id":"p","status":"FAILED","amount":"abc","created_at":"2026-11-21T09:30:00Z","updated_at":"2026-11-21T09:30:00Z"}`, true, nil},
		{"amount missing", `{"id":"p","status":"FAILED","created_at":"2026-11-21T09:30:00Z","updated_at":"2026-11-21T09:30:00Z"}`, true, nil},
		{"amount null", `{"id":"p","status":"FAILED","amount":null,"created_at":"2026-11-21T09:30:00Z","updated_at":"2026-11-21T09:30:00Z"}`, true, nil},
		{"id missing", `{"status":"FAILED","amount":1,"created_at":"2026-11-21T09:30:00Z","updated_at":"2026-11-21T09:30:00Z"}`, true, nil},
		{"id wrong type", `{"id":5,"status":"FAILED","amount":1,"created_at":"2026-11-21T09:30:00Z","updated_at":"2026-11-21T09:30:00Z"}`, true, nil},
		{"status unknown", `{"id":"p","status":"succeeded","amount":1,"created_at":"2026-11-21T09:30:00Z","updated_at":"2026-11-21T09:30:00Z"}`, true, nil},
		{"status missing", `{"id":"p","amount":1,"created_at":"2026-11-21T09:30:00Z","updated_at":"2026-11-21T09:30:00Z"}`, true, nil},
		{"bad timestamp", `{"id":"p","status":"FAILED","amount":1,"created_at":"21/11/2026","updated_at":"2026-11-21T09:30:00Z"}`, true, nil},
		{"timestamp without zone", `{"id":"p","status":"FAILED","amount":1,"created_at":"2026-11-21T09:30:00","updated_at":"2026-11-21T09:30:00Z"}`, true, nil},
		{"updated_at missing", `{"id":"p","status":"FAILED","amount":1,"created_at":"2026-11-21T09:30:00Z"}`, true, nil},
		{"customer wrong type", `{` + good + `,"customer":"x"}`, true, nil},
		{"array body", `[]`, true, nil},
		{"null body", `null`, true, nil},
		{"empty body", ``, true, nil},
		{"truncated", `{"id":"p","status":"FA`, true, nil},
		{"not json", `<html>Payment SECRETPAGE</html>`, true, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := jsonServer(t, 200, tt.body)
			c := newClient(t, Config{BaseURL: srv.URL})
			got, err := c.GetPayment(credCtx(), "p")
			if tt.wantErr {
				var e *Error
				if !errors.As(err, &e) || e.Kind != KindUpstream || !strings.Contains(e.Message, "REST API answered something unexpected") {
					t.Fatalf("err = %v; want KindUpstream 'answered something unexpected'", err)
				}
				if strings.Contains(err.Error(), "SECRETPAGE") || strings.Contains(err.Error(), "<html") || strings.Contains(err.Error(), "succeeded") {
					t.Errorf("error echoes the body: %v", err)
				}
				if got != nil {
					t.Errorf("got %+v with error", got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !tt.check(got) {
				t.Errorf("unexpected decode: %+v", got)
			}
		})
	}
}

type statusCase struct {
	status     int
	body       string
	header     string // Retry-After
	wantKind   ErrorKind
	wantMsg    string // "" -> not checked
	wantRetry  time.Duration
	retryDelta time.Duration
}

func TestStatusMapping(t *testing.T) {
	t.Parallel()
	tests := []statusCase{
		{404, `{"error":"Payment not found"}`, "", KindNotFound, "Payment not found", 0, 0},
		{404, ``, "", KindNotFound, "REST API answered 404 Not Found", 0, 0},
		{400, `{"error":"Payment link not found"}`, "", KindNotFound, "Payment link not found", 0, 0},
		{400, `{"error":"invalid limit"}`, "", KindBadRequest, "invalid limit", 0, 0},
		{422, `{"error":"bad"}`, "", KindBadRequest, "bad", 0, 0},
		{418, `teapot`, "", KindBadRequest, "REST API answered 418 I'm a teapot", 0, 0},
		{410, `{"error":"gone"}`, "", KindBadRequest, "gone", 0, 0},
		{401, `{"error":"Invalid API credentials"}`, "", KindUnauthorized, "Invalid API credentials", 0, 0},
		{401, `{"error":"key ` + testKey + ` secret ` + testSecret + ` rejected"}`, "", KindUnauthorized,
			"key [redacted] secret [redacted] rejected", 0, 0},
		{403, `{"error":"Forbidden"}`, "", KindForbidden, "Forbidden", 0, 0},
		{429, `{"error":"Too many requests"}`, "7", KindRateLimited, "Too many requests", 7 * time.Second, 0},
		{429, ``, "", KindRateLimited, "", 0, 0},
		{429, ``, "soon", KindRateLimited, "", 0, 0},
		{429, ``, "in 30s", KindRateLimited, "", 30 * time.Second, 0}, // an HTTP date 30s ahead of the bubble's clock
		{408, ``, "", KindTimeout, "", 0, 0},
		{504, `{"error":"upstream timeout"}`, "", KindTimeout, "upstream timeout", 0, 0},
		{500, `{"error":"Internal server error"}`, "", KindUpstream, "Internal server error", 0, 0},
		{502, `<html>bad gateway</html>`, "", KindUpstream, "REST API answered 502 Bad Gateway", 0, 0},
		{503, `{"error":{"nested":true}}`, "", KindUpstream, "REST API answered 503 Service Unavailable", 0, 0},
		{500, `{"error":"Payment not found"}`, "", KindUpstream, "Payment not found", 0, 0}, // 5xx stays upstream
		{302, ``, "", KindUpstream, "", 0, 0},
		// A 2xx error body.
		{200, `{"error":"Payment not found"}`, "", KindNotFound, "Payment not found", 0, 0},
		{200, `{"error":"something broke"}`, "", KindUpstream, "something broke", 0, 0},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%d %s", tt.status, tt.body), func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) { statusMapping(t, tt) })
		})
	}
}

// statusMapping is one case of TestStatusMapping, in a synctest bubble:
// an HTTP date in Retry-After is exact on its clock (which starts on a
// whole second).
func statusMapping(t *testing.T, tt statusCase) {
	srv := newMemServer(t, func(w http.ResponseWriter, r *http.Request) {
		switch tt.header {
		case "":
		case "in 30s":
			w.Header().Set("Retry-After", time.Now().Add(30*time.Second).UTC().Format(http.TimeFormat))
		default:
			w.Header().Set("Retry-After", tt.header)
		}
		if tt.status == 302 {
			w.Header().Set("Location", "/elsewhere")
		}
		w.WriteHeader(tt.status)
		_, _ = w.Write([]byte(tt.body))
	})
	// Retries are resilience_test.go's subject; here one answer maps to one kind.
	c := newClient(t, Config{BaseURL: srv.URL, HTTPClient: srv.hc}) // the zero Resilience: no retries
	_, err := c.GetPayment(credCtx(), "pay_x")
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("err = %v; want *Error", err)
	}
	if e.Kind != tt.wantKind || KindOf(err) != tt.wantKind {
		t.Errorf("kind = %v; want %v (%v)", e.Kind, tt.wantKind, err)
	}
	if e.Status != tt.status {
		t.Errorf("status = %d; want %d", e.Status, tt.status)
	}
	if tt.wantMsg != "" && e.Message != tt.wantMsg {
		t.Errorf("message = %q; want %q", e.Message, tt.wantMsg)
	}
	if d := e.RetryAfter - tt.wantRetry; d > tt.retryDelta || d < -tt.retryDelta {
		t.Errorf("RetryAfter = %v; want %v", e.RetryAfter, tt.wantRetry)
	}
	if e.Endpoint != EndpointGetPayment {
		t.Errorf("endpoint = %q", e.Endpoint)
	}
	if strings.Contains(err.Error(), testSecret) || strings.Contains(fmt.Sprintf("%+v", e), testSecret) {
		t.Errorf("error leaks the secret: %v", err)
	}
	if n := srv.calls.Load(); n != 1 {
		t.Errorf("server got %d calls; want 1 (redirects are not followed)", n)
	}
}

func TestErrorString(t *testing.T) {
	t.Parallel()
	e := &Error{Kind: KindNotFound, Endpoint: EndpointGetPayment, Status: 404, Message: "Payment not found"}
	if got, want := e.Error(), "restclient: GET /api/v1/payments/{id}: Payment not found (HTTP 404)"; got != want {
		t.Errorf("Error() = %q; want %q", got, want)
	}
	cause := errors.New("cause")
	wrapped := fmt.Errorf("ctx: %w", &Error{Kind: KindTimeout, Err: cause})
	if KindOf(wrapped) != KindTimeout || !errors.Is(wrapped, cause) {
		t.Errorf("KindOf/Unwrap broken")
	}
	if KindOf(errors.New("x")) != KindUpstream || KindOf(nil) != KindUpstream {
		t.Errorf("KindOf of non-*Error should be KindUpstream")
	}
	if KindInvalidID.String() != "invalid_id" || ErrorKind(99).String() != "kind(99)" {
		t.Errorf("ErrorKind.String")
	}
}

func TestMissingCredentials(t *testing.T) {
	t.Parallel()
	srv := jsonServer(t, 200, paymentBody)
	c := newClient(t, Config{BaseURL: srv.URL})
	ctxs := map[string]context.Context{
		"none":      context.Background(),
		"no secret": WithCredentials(context.Background(), Credentials{APIKey: testKey}),
		"no key":    WithCredentials(context.Background(), Credentials{APISecret: testSecret}),
	}
	for name, ctx := range ctxs {
		calls := []func() error{
			func() error { _, err := c.ListPayments(ctx, ListParams{}); return err },
			func() error { _, err := c.GetPayment(ctx, "pay_1"); return err },
			func() error { _, err := c.GetPaymentLink(ctx, "pl_1"); return err },
			func() error { _, err := c.GetCheckoutSession(ctx, "ref"); return err },
		}
		for i, call := range calls {
			err := call()
			var e *Error
			if !errors.As(err, &e) || e.Kind != KindUnauthorized || e.Message != "missing x-api-key or x-api-secret header" {
				t.Errorf("%s call %d: err = %v; want KindUnauthorized", name, i, err)
			}
		}
	}
	if n := srv.calls.Load(); n != 0 {
		t.Errorf("server got %d calls; want 0", n)
	}
}

func TestCredentialsForwardedUnchanged(t *testing.T) {
	t.Parallel()
	srv := jsonServer(t, 200, paymentBody)
	c := newClient(t, Config{BaseURL: srv.URL})
	for _, cr := range []Credentials{
		{APIKey: "ak_prod_X y+Z/=", APISecret: "sk_prod_ünïcode\"quote'"},
		{APIKey: testKey, APISecret: testSecret},
	} {
		if _, err := c.GetPayment(WithCredentials(context.Background(), cr), "pay_prod_0123456789abcdef0123456789abcdef"); err != nil {
			t.Fatal(err)
		}
		if r := srv.last(t); r.Key != cr.APIKey || r.Secret != cr.APISecret {
			t.Errorf("server saw %q/%q; want %q/%q", r.Key, r.Secret, cr.APIKey, cr.APISecret)
		}
	}
}

func TestPathEscaping(t *testing.T) {
	t.Parallel()
	tests := []struct {
		base string // path suffix of the base URL
		id   string
		call string // "payment", "link", "session"
		want string
	}{
		{"", "../payment-links/pl_x", "payment", "/api/v1/payments/..%2Fpayment-links%2Fpl_x"},
		{"", "a?b", "payment", "/api/v1/payments/a%3Fb"},
		{"", "a#b", "payment", "/api/v1/payments/a%23b"},
		{"", "a b", "payment", "/api/v1/payments/a%20b"},
		{"", "a/b", "link", "/api/v1/payment-links/a%2Fb"},
		{"", "%2e%2e", "payment", "/api/v1/payments/%252e%252e"},
		{"", "...", "session", "/api/v1/checkout/sessions/..."},
		{"", "a;b=c&d", "session", "/api/v1/checkout/sessions/a%3Bb=c&d"},
		{"", "pay_ünï", "payment", "/api/v1/payments/pay_%C3%BCn%C3%AF"},
		{"/", "a?b", "payment", "/api/v1/payments/a%3Fb"},
		{"/prefix", "../x", "payment", "/prefix/api/v1/payments/..%2Fx"},
		{"/prefix/", "a?b", "link", "/prefix/api/v1/payment-links/a%3Fb"},
		{"/pre%2Ffix/", "a", "link", "/pre%2Ffix/api/v1/payment-links/a"},
	}
	for _, tt := range tests {
		t.Run(tt.base+" "+tt.id, func(t *testing.T) {
			t.Parallel()
			srv := newTestServer(t, func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(404)
				_, _ = w.Write([]byte(`{"error":"Payment not found"}`))
			})
			c := newClient(t, Config{BaseURL: srv.URL + tt.base})
			var err error
			switch tt.call {
			case "payment":
				_, err = c.GetPayment(credCtx(), tt.id)
			case "link":
				_, err = c.GetPaymentLink(credCtx(), tt.id)
			case "session":
				_, err = c.GetCheckoutSession(credCtx(), tt.id)
			}
			if KindOf(err) != KindNotFound {
				t.Fatalf("err = %v", err)
			}
			r := srv.last(t)
			if r.EscapedPath != tt.want || r.RawQuery != "" {
				t.Errorf("server saw path %q query %q; want %q and no query", r.EscapedPath, r.RawQuery, tt.want)
			}
			if srv.calls.Load() != 1 {
				t.Errorf("calls = %d", srv.calls.Load())
			}
		})
	}
}

func TestInvalidIDs(t *testing.T) {
	t.Parallel()
	srv := echoIDServer(t)
	c := newClient(t, Config{BaseURL: srv.URL})
	ids := []string{"", ".", "..", strings.Repeat("a", MaxIDLength+1), "a\nb", "a\x00b", "a\rb", "\tab", "a\x7fb", "\xff\xfe"}
	for _, id := range ids {
		for i, call := range []func() error{
			func() error { _, err := c.GetPayment(credCtx(), id); return err },
			func() error { _, err := c.GetPaymentLink(credCtx(), id); return err },
			func() error { _, err := c.GetCheckoutSession(credCtx(), id); return err },
		} {
			if err := call(); KindOf(err) != KindInvalidID {
				t.Errorf("id %q call %d: err = %v; want KindInvalidID", id, i, err)
			}
		}
	}
	if n := srv.calls.Load(); n != 0 {
		t.Errorf("server got %d calls; want 0", n)
	}
	if _, err := c.GetPayment(credCtx(), strings.Repeat("a", MaxIDLength)); err != nil {
		t.Errorf("a %d-byte id should be accepted: %v", MaxIDLength, err)
	}
	if _, err := c.ListPayments(credCtx(), ListParams{Limit: -1}); KindOf(err) != KindBadRequest {
		t.Errorf("negative limit: %v", err)
	}
	if n := srv.calls.Load(); n != 1 {
		t.Errorf("server got %d calls; want 1", n)
	}
}

// hangingServer never answers until the test ends (or the client goes away).
func hangingServer(t *testing.T) *testServer {
	release := make(chan struct{})
	srv := newTestServer(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	})
	t.Cleanup(func() { close(release) }) // runs before srv.Close
	return srv
}

func TestTimeout(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		srv := memHangingServer(t)
		c := newClient(t, Config{BaseURL: srv.URL, HTTPClient: srv.hc, Timeout: 100 * time.Millisecond})
		start := time.Now()
		_, err := c.GetPayment(credCtx(), "pay_1")
		elapsed := time.Since(start)
		var e *Error
		if !errors.As(err, &e) || e.Kind != KindTimeout {
			t.Fatalf("err = %v; want KindTimeout", err)
		}
		if e.Message != "REST API did not answer within 100ms" {
			t.Errorf("message = %q", e.Message)
		}
		if elapsed != 100*time.Millisecond {
			t.Errorf("took %v on the bubble's clock; want the timeout, 100ms", elapsed)
		}
		if srv.calls.Load() != 1 {
			t.Errorf("calls = %d", srv.calls.Load())
		}
	})
}

// TestSlowBodyTimeout: a body that stops coming once the REST API has
// answered is cut by the call's timeout and is an upstream error (the
// REST API answered, with a body that stopped short), never a timeout.
func TestSlowBodyTimeout(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	srv := newTestServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(200)
		_, _ = w.Write([]byte(`{"id":"pay_1",`))
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
		case <-release:
		}
	})
	t.Cleanup(func() { close(release) })
	c := newClient(t, Config{BaseURL: srv.URL, Timeout: 100 * time.Millisecond})
	if _, err := c.GetPayment(credCtx(), "pay_1"); KindOf(err) != KindUpstream || !strings.Contains(err.Error(), "stopped short within 100ms") {
		t.Fatalf("err = %v; want KindUpstream, a body that stopped short", err)
	}
}

func TestParentDeadlineAndCancel(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		srv := memHangingServer(t)
		c := newClient(t, Config{BaseURL: srv.URL, HTTPClient: srv.hc, Timeout: 5 * time.Second})

		// On the bubble's clock: the call ends when its parent does, exactly.
		const parent = 100 * time.Millisecond
		ctx, cancel := context.WithTimeout(credCtx(), parent)
		defer cancel()
		start := time.Now()
		if _, err := c.GetPayment(ctx, "pay_1"); KindOf(err) != KindTimeout {
			t.Errorf("parent deadline: err = %v; want KindTimeout", err)
		}
		if took := time.Since(start); took != parent {
			t.Errorf("parent deadline not honoured: the call took %v, want %v", took, parent)
		}

		ctx2, cancel2 := context.WithCancel(credCtx())
		time.AfterFunc(parent, cancel2)
		start = time.Now()
		if _, err := c.GetPayment(ctx2, "pay_1"); KindOf(err) != KindCanceled {
			t.Errorf("parent cancel: err = %v; want KindCanceled", err)
		}
		if took := time.Since(start); took != parent {
			t.Errorf("parent cancel not honoured: the call took %v, want %v", took, parent)
		}

		// Already canceled: no call.
		before := srv.calls.Load()
		ctx3, cancel3 := context.WithCancel(credCtx())
		cancel3()
		if _, err := c.GetPayment(ctx3, "pay_1"); KindOf(err) != KindCanceled {
			t.Errorf("pre-canceled: err = %v; want KindCanceled", err)
		}
		if srv.calls.Load() != before {
			t.Errorf("pre-canceled context made a call")
		}
	})
}

func TestConnectionRefused(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	c := newClient(t, Config{BaseURL: "http://" + addr, Timeout: 2 * time.Second})
	_, err = c.GetPayment(credCtx(), "pay_1")
	var e *Error
	if !errors.As(err, &e) || e.Kind != KindUpstream || !strings.HasPrefix(e.Message, "REST API unreachable: ") {
		t.Fatalf("err = %v; want KindUpstream unreachable", err)
	}
	if strings.Contains(err.Error(), testSecret) || strings.Contains(e.Message, testKey) {
		t.Errorf("error leaks credentials: %v", err)
	}
}

func TestConnectionDropped(t *testing.T) {
	t.Parallel()
	srv := newTestServer(t, func(w http.ResponseWriter, r *http.Request) {
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			conn.Close()
		}
	})
	c := newClient(t, Config{BaseURL: srv.URL})
	_, err := c.GetPayment(credCtx(), "pay_1")
	if KindOf(err) != KindUpstream || !strings.Contains(err.Error(), "REST API unreachable") {
		t.Fatalf("err = %v; want KindUpstream unreachable", err)
	}
}

func TestBodyTooLarge(t *testing.T) {
	t.Parallel()
	srv := newTestServer(t, func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(`{"id":"pay_1","pad":"`))
		_, _ = w.Write([]byte(strings.Repeat("x", DefaultMaxBodyBytes)))
		_, _ = w.Write([]byte(`"}`))
	})
	c := newClient(t, Config{BaseURL: srv.URL})
	_, err := c.GetPayment(credCtx(), "pay_1")
	if KindOf(err) != KindUpstream || !strings.Contains(err.Error(), "larger than") {
		t.Fatalf("err = %v; want KindUpstream too large", err)
	}
}

func TestConnectionReuse(t *testing.T) {
	t.Parallel()
	var newConns atomic.Int64
	bodies := []struct {
		status int
		body   string
	}{
		{200, paymentBody}, {404, `{"error":"Payment not found"}`}, {200, paymentBody + "\n\n   "},
		{500, strings.Repeat("x", 100_000)}, {200, `{"error":"Payment not found"}`}, {200, paymentBody},
	}
	var i atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b := bodies[int(i.Add(1)-1)%len(bodies)]
		w.WriteHeader(b.status)
		_, _ = w.Write([]byte(b.body))
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			newConns.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	c := newClient(t, Config{BaseURL: srv.URL})
	for range 2 * len(bodies) {
		// The id of paymentBody: a record with another id would drop the
		// idle connections (outOfStep).
		_, _ = c.GetPayment(credCtx(), "pay_prod_0123456789abcdef0123456789abcdef")
	}
	if n := newConns.Load(); n != 1 {
		t.Errorf("%d connections opened for sequential calls; want 1 (bodies must be drained)", n)
	}
}

func TestNewValidatesConfig(t *testing.T) {
	t.Parallel()
	bad := []string{"", "   ", "127.0.0.1:9000", "ftp://x", "http://", "/relative", "http://x?q=1", "http://x#f", "http//x", "mailto:a@b"}
	for _, b := range bad {
		if _, err := New(Config{BaseURL: b}); err == nil {
			t.Errorf("New(%q) succeeded; want an error", b)
		}
	}
	if _, err := New(Config{BaseURL: "http://x", Timeout: -time.Second}); err == nil {
		t.Errorf("negative timeout accepted")
	}
	for _, g := range []string{"http://127.0.0.1:9000", "http://127.0.0.1:9000/", "https://x/prefix", "HTTPS://X/prefix/"} {
		c, err := New(Config{BaseURL: g})
		if err != nil {
			t.Errorf("New(%q): %v", g, err)
			continue
		}
		if c.timeout != DefaultTimeout || c.statusParam != "status" || c.hc == nil {
			t.Errorf("defaults not applied: %+v", c)
		}
	}
	// A caller's client is not mutated (redirect policy set on a copy).
	hc := &http.Client{}
	if _, err := New(Config{BaseURL: "http://x", HTTPClient: hc}); err != nil || hc.CheckRedirect != nil {
		t.Errorf("caller's http.Client was modified or rejected: %v", err)
	}
}

func TestConcurrentCallersKeepTheirCredentials(t *testing.T) {
	t.Parallel()
	srv := newTestServer(t, func(w http.ResponseWriter, r *http.Request) {
		// Echo the key back as the customer's name so that each caller can
		// check its own answer (the id must be the one asked for).
		fmt.Fprintf(w, `{"id":"pay_1","status":"PENDING","amount":1,"customer":{"name":%q},"created_at":"2026-11-21T09:30:00Z","updated_at":"2026-11-21T09:30:00Z"}`,
			r.Header.Get("x-api-key")+"|"+r.Header.Get("x-api-secret"))
	})
	c := newClient(t, Config{BaseURL: srv.URL})
	var wg sync.WaitGroup
	for i := range 32 {
		wg.Go(func() {
			cr := Credentials{APIKey: fmt.Sprintf("ak_test_%d", i), APISecret: fmt.Sprintf("sk_test_%d", i)}
			p, err := c.GetPayment(WithCredentials(context.Background(), cr), "pay_1")
			if err != nil || p.Customer.Name == nil || *p.Customer.Name != cr.APIKey+"|"+cr.APISecret {
				t.Errorf("caller %d got %v, %v", i, p, err)
			}
		})
	}
	wg.Wait()
}

func TestParseRetryAfter(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 21, 9, 30, 0, 0, time.UTC)
	tests := []struct {
		in   string
		want time.Duration
	}{
		{"7", 7 * time.Second},
		{" 120 ", 2 * time.Minute},
		{"0", 0},
		{"-3", 0},
		{"", 0},
		{"abc", 0},
		{"1.5", 0},
		{"Sat, 21 Nov 2026 09:30:30 GMT", 30 * time.Second},
		{"Sat, 21 Nov 2026 09:29:00 GMT", 0},
		{"99999999999999999", time.Duration(1<<31) * time.Second},
	}
	for _, tt := range tests {
		if got := parseRetryAfter(tt.in, now); got != tt.want {
			t.Errorf("parseRetryAfter(%q) = %v; want %v", tt.in, got, tt.want)
		}
	}
}

func BenchmarkGetPayment(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(paymentBody))
	}))
	defer srv.Close()
	c, err := New(Config{BaseURL: srv.URL})
	if err != nil {
		b.Fatal(err)
	}
	ctx := credCtx()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.GetPayment(ctx, "pay_prod_0123456789abcdef0123456789abcdef"); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecodeList(b *testing.B) {
	body := []byte(listBody)
	b.ReportAllocs()
	for b.Loop() {
		var w wirePage
		if err := decodeForTest(body, &w); err != nil {
			b.Fatal(err)
		}
		if _, err := w.toPage(); err != nil {
			b.Fatal(err)
		}
	}
}

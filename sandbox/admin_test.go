package sandbox_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"

	"paygraph/sandbox"
)

// post sends an admin request with a body; biz nil sends no credentials.
func (e *env) post(t *testing.T, method, path, body string, biz *sandbox.Business) resp {
	t.Helper()
	req, err := http.NewRequestWithContext(context.Background(), method, e.ts.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range credHeaders(biz) {
		req.Header.Set(k, v)
	}
	res, err := e.client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp{status: res.StatusCode, header: res.Header, body: b}
}

// paymentWith returns a payment of biz with the given status that has a
// checkout session (so that a test sees both change), and that session.
func paymentWith(t *testing.T, sb *sandbox.Server, biz sandbox.Business, status string) (sandbox.Payment, sandbox.CheckoutSession) {
	t.Helper()
	byID := map[string]sandbox.Payment{}
	for _, p := range sb.Payments(biz.APIKey) {
		byID[p.ID] = p
	}
	for _, cs := range sb.CheckoutSessions(biz.APIKey) {
		if p := byID[cs.PaymentID]; p.Status == status {
			return p, cs
		}
	}
	t.Skipf("no %s payment with a session in the demo data", status)
	return sandbox.Payment{}, sandbox.CheckoutSession{}
}

// listIDs returns the ids of every payment of biz in the list filtered by
// status, walking all pages.
func (e *env) listIDs(t *testing.T, biz *sandbox.Business, status string) map[string]string {
	t.Helper()
	out := map[string]string{}
	q := url.Values{"limit": {"100"}, "status": {status}}
	for {
		m := decode(t, e.get(t, "/api/v1/payments?"+q.Encode(), biz).body)
		for _, it := range m["data"].([]any) {
			item := it.(map[string]any)
			out[str(item, "id")] = str(item, "status")
		}
		next, ok := m["next_cursor"].(string)
		if !ok {
			return out
		}
		q.Set("cursor", next)
	}
}

func TestAdminPaymentStatus(t *testing.T) {
	t.Parallel()
	e := newEnv(t, sandbox.Options{})
	p, cs := paymentWith(t, e.sb, e.a, sandbox.StatusPending)
	before := decode(t, e.get(t, "/api/v1/payments/"+p.ID, &e.a).body)
	e.sb.ResetCalls()

	r := e.post(t, http.MethodPost, "/sandbox/payments/"+p.ID+"/status", `{"status":"SUCCEEDED"}`, &e.a)
	if r.status != http.StatusOK {
		t.Fatalf("admin: %d %s", r.status, r.body)
	}
	t.Run("not a REST call", func(t *testing.T) {
		if n := e.sb.CallCount(""); n != 0 {
			t.Errorf("the admin request was recorded as %d REST calls", n)
		}
	})
	after := e.get(t, "/api/v1/payments/"+p.ID, &e.a)
	t.Run("answers the retrieve form", func(t *testing.T) {
		if string(r.body) != string(after.body) {
			t.Errorf("admin answered %s\nGET answers %s", r.body, after.body)
		}
	})
	got := decode(t, after.body)
	t.Run("status and updated_at move", func(t *testing.T) {
		if str(got, "status") != sandbox.StatusSucceeded {
			t.Errorf("status = %q", str(got, "status"))
		}
		if !reTime.MatchString(str(got, "updated_at")) || str(got, "updated_at") <= str(before, "updated_at") {
			t.Errorf("updated_at %q, before %q", str(got, "updated_at"), str(before, "updated_at"))
		}
		for _, k := range []string{"id", "amount", "currency", "payment_method", "customer", "created_at"} {
			if k != "customer" && str(got, k) != str(before, k) {
				t.Errorf("%s changed: %q -> %q", k, str(before, k), str(got, k))
			}
		}
		if obj(got, "customer")["address"] != obj(before, "customer")["address"] {
			t.Error("the customer changed")
		}
	})
	t.Run("list and status filter", func(t *testing.T) {
		if st, ok := e.listIDs(t, &e.a, sandbox.StatusSucceeded)[p.ID]; !ok || st != sandbox.StatusSucceeded {
			t.Errorf("SUCCEEDED filter: present %v, status %q", ok, st)
		}
		if _, ok := e.listIDs(t, &e.a, sandbox.StatusPending)[p.ID]; ok {
			t.Error("still listed under PENDING")
		}
	})
	t.Run("accessor", func(t *testing.T) {
		for _, q := range e.sb.Payments(e.a.APIKey) {
			if q.ID == p.ID && (q.Status != sandbox.StatusSucceeded || q.UpdatedAt != str(got, "updated_at")) {
				t.Errorf("Payments() has %s %s", q.Status, q.UpdatedAt)
			}
		}
	})
	t.Run("checkout session follows", func(t *testing.T) {
		for _, id := range []string{cs.ID, cs.Reference} {
			s := obj(decode(t, e.get(t, "/api/v1/checkout/sessions/"+id, &e.a).body), "data")
			if str(s, "payment_status") != sandbox.StatusSucceeded || str(s, "status") != sandbox.StatusSucceeded {
				t.Errorf("%s: status %q payment_status %q", id, str(s, "status"), str(s, "payment_status"))
			}
			if str(s, "updated_at") != str(got, "updated_at") {
				t.Errorf("%s: updated_at %q, payment's %q", id, str(s, "updated_at"), str(got, "updated_at"))
			}
		}
	})
	t.Run("the same status changes nothing", func(t *testing.T) {
		if err := e.sb.SetPaymentStatus(e.a.APIKey, p.ID, sandbox.StatusSucceeded); err != nil {
			t.Fatal(err)
		}
		if again := e.get(t, "/api/v1/payments/"+p.ID, &e.a); string(again.body) != string(after.body) {
			t.Errorf("body changed: %s", again.body)
		}
	})
	t.Run("each change moves updated_at forward", func(t *testing.T) {
		prev := str(got, "updated_at")
		for _, st := range []string{sandbox.StatusRefunded, sandbox.StatusPending, sandbox.StatusFailed} {
			if err := e.sb.SetPaymentStatus(e.a.APIKey, p.ID, st); err != nil {
				t.Fatal(err)
			}
			m := decode(t, e.get(t, "/api/v1/payments/"+p.ID, &e.a).body)
			if str(m, "status") != st || str(m, "updated_at") <= prev {
				t.Errorf("%s: status %q updated_at %q (before %q)", st, str(m, "status"), str(m, "updated_at"), prev)
			}
			prev = str(m, "updated_at")
		}
	})
}

func TestAdminCheckoutSessionStatus(t *testing.T) {
	t.Parallel()
	e := newEnv(t, sandbox.Options{})
	p, cs := paymentWith(t, e.sb, e.a, sandbox.StatusSucceeded)
	r := e.post(t, http.MethodPost, "/sandbox/checkout/sessions/"+cs.Reference+"/status", `{"status":"REFUNDED"}`, &e.a)
	if r.status != http.StatusOK {
		t.Fatalf("admin: %d %s", r.status, r.body)
	}
	s := obj(decode(t, r.body), "data")
	t.Run("session: checkout completed, payment refunded", func(t *testing.T) {
		if str(s, "status") != sandbox.StatusSucceeded || str(s, "payment_status") != sandbox.StatusRefunded {
			t.Errorf("status %q payment_status %q", str(s, "status"), str(s, "payment_status"))
		}
		if byID := decode(t, e.get(t, "/api/v1/checkout/sessions/"+cs.ID, &e.a).body); str(obj(byID, "data"), "payment_status") != sandbox.StatusRefunded {
			t.Error("the session by id did not change")
		}
	})
	t.Run("payment", func(t *testing.T) {
		m := decode(t, e.get(t, "/api/v1/payments/"+p.ID, &e.a).body)
		if str(m, "status") != sandbox.StatusRefunded || str(m, "updated_at") != str(s, "updated_at") {
			t.Errorf("payment %q %q, session updated_at %q", str(m, "status"), str(m, "updated_at"), str(s, "updated_at"))
		}
	})
}

func TestAdminErrors(t *testing.T) {
	t.Parallel()
	e := newEnv(t, sandbox.Options{})
	p, cs := paymentWith(t, e.sb, e.a, sandbox.StatusPending)
	bad := sandbox.Business{APIKey: e.a.APIKey, APISecret: e.b.APISecret}
	path := "/sandbox/payments/" + p.ID + "/status"
	tests := []struct {
		name         string
		method, path string
		body         string
		biz          *sandbox.Business
		status       int
		msg          string
	}{
		{"unknown admin route", http.MethodPost, "/sandbox/payments/" + p.ID, `{"status":"FAILED"}`, &e.a, 404, sandbox.ErrMsgNotFound},
		{"empty id", http.MethodPost, "/sandbox/payments//status", `{"status":"FAILED"}`, &e.a, 404, sandbox.ErrMsgNotFound},
		{"GET", http.MethodGet, path, "", &e.a, 405, sandbox.ErrMsgMethodNotAllowed},
		{"no credentials", http.MethodPost, path, `{"status":"FAILED"}`, nil, 401, sandbox.ErrMsgMissingCreds},
		{"wrong secret", http.MethodPost, path, `{"status":"FAILED"}`, &bad, 401, sandbox.ErrMsgInvalidCreds},
		{"not JSON", http.MethodPost, path, `status=FAILED`, &e.a, 400, sandbox.ErrMsgInvalidBody},
		{"two values", http.MethodPost, path, `{"status":"FAILED"}{}`, &e.a, 400, sandbox.ErrMsgInvalidBody},
		{"too large", http.MethodPost, path, `{"status":"FAILED","x":"` + strings.Repeat("x", 2000) + `"}`, &e.a, 400, sandbox.ErrMsgInvalidBody},
		{"lower-case status", http.MethodPost, path, `{"status":"failed"}`, &e.a, 400, sandbox.ErrMsgInvalidStatus},
		{"no status", http.MethodPost, path, `{}`, &e.a, 400, sandbox.ErrMsgInvalidStatus},
		{"another business's payment", http.MethodPost, path, `{"status":"FAILED"}`, &e.b, 404, sandbox.ErrMsgPaymentNotFound},
		{"unknown session", http.MethodPost, "/sandbox/checkout/sessions/NOPE/status", `{"status":"FAILED"}`, &e.a, 404, sandbox.ErrMsgSessionNotFound},
		{"another business's session", http.MethodPost, "/sandbox/checkout/sessions/" + cs.Reference + "/status", `{"status":"FAILED"}`, &e.b, 404, sandbox.ErrMsgSessionNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := e.post(t, tt.method, tt.path, tt.body, tt.biz)
			wantError(t, r, tt.status, tt.msg)
			if tt.status == 405 && r.header.Get("Allow") != http.MethodPost {
				t.Errorf("Allow = %q", r.header.Get("Allow"))
			}
		})
	}
	t.Run("nothing changed", func(t *testing.T) {
		if m := decode(t, e.get(t, "/api/v1/payments/"+p.ID, &e.a).body); str(m, "status") != sandbox.StatusPending || str(m, "updated_at") != p.UpdatedAt {
			t.Errorf("payment is now %q %q", str(m, "status"), str(m, "updated_at"))
		}
	})
	t.Run("REST routes do not take POST", func(t *testing.T) {
		wantError(t, e.post(t, http.MethodPost, "/api/v1/payments/"+p.ID+"/status", `{"status":"FAILED"}`, &e.a), 404, sandbox.ErrMsgNotFound)
		wantError(t, e.post(t, http.MethodPost, "/api/v1/payments/"+p.ID, `{"status":"FAILED"}`, &e.a), 405, sandbox.ErrMsgMethodNotAllowed)
	})
}

func TestSetStatusErrors(t *testing.T) {
	t.Parallel()
	sb := sandbox.New(sandbox.Options{})
	a := sb.Businesses()[0]
	pay := sb.Payments(a.APIKey)[0].ID
	tests := []struct {
		name string
		set  func() error
		want error
	}{
		{"unknown key", func() error { return sb.SetPaymentStatus("ak_test_nope", pay, "FAILED") }, sandbox.ErrUnknownBusiness},
		{"unknown payment", func() error { return sb.SetPaymentStatus(a.APIKey, "pay_prod_nope", "FAILED") }, sandbox.ErrPaymentNotFound},
		{"bad status", func() error { return sb.SetPaymentStatus(a.APIKey, pay, "PAID") }, sandbox.ErrInvalidStatus},
		{"session: unknown key", func() error { return sb.SetCheckoutSessionStatus("ak_test_nope", "X", "FAILED") }, sandbox.ErrUnknownBusiness},
		{"session: unknown", func() error { return sb.SetCheckoutSessionStatus(a.APIKey, "NOPE", "FAILED") }, sandbox.ErrSessionNotFound},
		{"session: bad status", func() error { return sb.SetCheckoutSessionStatus(a.APIKey, "NOPE", "") }, sandbox.ErrInvalidStatus},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if err := tt.set(); !errors.Is(err, tt.want) {
				t.Errorf("err = %v, want %v", err, tt.want)
			}
		})
	}
}

// TestAdminNotFaulted: a fault plan aimed at the REST API does not stop a
// test from changing the data it is watching.
func TestAdminNotFaulted(t *testing.T) {
	t.Parallel()
	e := newEnv(t, sandbox.Options{})
	e.sb.SetFaults(func(sandbox.Call) sandbox.Fault { return sandbox.Fault429 })
	p := e.sb.Payments(e.a.APIKey)[0]
	if r := e.post(t, http.MethodPost, "/sandbox/payments/"+p.ID+"/status", `{"status":"CANCELLED"}`, &e.a); r.status != http.StatusOK {
		t.Fatalf("admin under faults: %d %s", r.status, r.body)
	}
	if n := e.sb.CallCount(""); n != 0 {
		t.Errorf("%d calls recorded", n)
	}
}

// TestAdminConcurrentReads changes statuses while lists and records are
// read (run with -race): every page of a status filter holds only payments
// of that status, whatever changes around it.
func TestAdminConcurrentReads(t *testing.T) {
	t.Parallel()
	e := newEnv(t, sandbox.Options{})
	pays := e.sb.Payments(e.a.APIKey)[:20]
	statuses := sandbox.Statuses()
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			p := pays[i%len(pays)]
			if err := e.sb.SetPaymentStatus(e.a.APIKey, p.ID, statuses[i%len(statuses)]); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	for i := range 30 {
		st := statuses[i%len(statuses)]
		for id, got := range e.listIDs(t, &e.a, st) {
			if got != st {
				t.Errorf("%s listed under %s with status %s", id, st, got)
			}
		}
		e.get(t, "/api/v1/checkout/sessions/"+e.sb.CheckoutSessions(e.a.APIKey)[0].Reference, &e.a)
	}
	close(stop)
	wg.Wait()
}

package sandbox_test

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"paygraph/sandbox"
)

var (
	reID        = regexp.MustCompile(`^pay_prod_[0-9a-f]{32}$`)
	reLinkID    = regexp.MustCompile(`^pl_[A-Za-z0-9]+$`)
	reTime      = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$`)
	reRef       = regexp.MustCompile(`^[A-Z0-9]{10}$`)
	reMoney2    = regexp.MustCompile(`^\d+\.\d{2}$`)
	reAmountNum = regexp.MustCompile(`^\d+(\.\d{1,2})?$`)
	reAPIKey    = regexp.MustCompile(`^ak_test_[A-Za-z0-9]{24}$`)
	reAPISecret = regexp.MustCompile(`^sk_test_[A-Za-z0-9]{32}$`)
)

func TestBusinesses(t *testing.T) {
	t.Parallel()
	e := newEnv(t, sandbox.Options{})
	seenKey := map[string]bool{}
	for _, b := range e.sb.Businesses() {
		if !reAPIKey.MatchString(b.APIKey) || !reAPISecret.MatchString(b.APISecret) {
			t.Errorf("%s: bad credentials %q / %q", b.Name, b.APIKey, b.APISecret)
		}
		if seenKey[b.APIKey] {
			t.Errorf("duplicate key %s", b.APIKey)
		}
		seenKey[b.APIKey] = true
		if n := len(e.sb.Payments(b.APIKey)); n < 100 {
			t.Errorf("%s: %d payments", b.Name, n)
		}
		if n := len(e.sb.PaymentLinks(b.APIKey)); n < 5 {
			t.Errorf("%s: %d links", b.Name, n)
		}
		if n := len(e.sb.CheckoutSessions(b.APIKey)); n < 5 {
			t.Errorf("%s: %d sessions", b.Name, n)
		}
	}
	if e.sb.Payments("nope") != nil {
		t.Error("Payments(unknown key) should be nil")
	}
	// ids are never shared between businesses
	ids := map[string]string{}
	for _, b := range e.sb.Businesses() {
		add := func(id string) {
			if prev, ok := ids[id]; ok {
				t.Errorf("id %s used by %s and %s", id, prev, b.Name)
			}
			ids[id] = b.Name
		}
		for _, p := range e.sb.Payments(b.APIKey) {
			add(p.ID)
		}
		for _, l := range e.sb.PaymentLinks(b.APIKey) {
			add(l.ID)
		}
		for _, s := range e.sb.CheckoutSessions(b.APIKey) {
			add(s.ID)
			add(s.Reference)
		}
	}
}

func TestAuth(t *testing.T) {
	t.Parallel()
	e := newEnv(t, sandbox.Options{})
	a, b := e.a, e.b
	pay := e.sb.Payments(a.APIKey)[0].ID
	link := e.sb.PaymentLinks(a.APIKey)[0].ID
	sess := e.sb.CheckoutSessions(a.APIKey)[0].ID
	paths := []string{"/api/v1/payments", "/api/v1/payments/" + pay, "/api/v1/payment-links/" + link, "/api/v1/checkout/sessions/" + sess}
	cases := []struct {
		name   string
		hdr    map[string]string
		status int
		msg    string
	}{
		{"none", nil, 401, "Missing API credentials"},
		{"key only", map[string]string{"x-api-key": a.APIKey}, 401, "Missing API credentials"},
		{"secret only", map[string]string{"x-api-secret": a.APISecret}, 401, "Missing API credentials"},
		{"wrong secret", map[string]string{"x-api-key": a.APIKey, "x-api-secret": "sk_test_wrong"}, 401, "Invalid API credentials"},
		{"wrong key", map[string]string{"x-api-key": "ak_test_wrong", "x-api-secret": a.APISecret}, 401, "Invalid API credentials"},
		{"mixed pair", map[string]string{"x-api-key": a.APIKey, "x-api-secret": b.APISecret}, 401, "Invalid API credentials"},
		{"right", credHeaders(&a), 200, ""},
		{"right, header case", map[string]string{"X-Api-Key": a.APIKey, "X-API-SECRET": a.APISecret}, 200, ""},
	}
	for _, c := range cases {
		for _, p := range paths {
			t.Run(c.name+" "+p, func(t *testing.T) {
				t.Parallel()
				r := e.doHeaders(t, http.MethodGet, p, c.hdr)
				if c.status == 200 {
					if r.status != 200 {
						t.Fatalf("status %d body %s", r.status, r.body)
					}
					return
				}
				wantError(t, r, c.status, c.msg)
			})
		}
	}
}

func TestCrossBusinessNotFound(t *testing.T) {
	t.Parallel()
	e := newEnv(t, sandbox.Options{})
	pay := e.sb.Payments(e.a.APIKey)[3]
	link := e.sb.PaymentLinks(e.a.APIKey)[0]
	sess := e.sb.CheckoutSessions(e.a.APIKey)[0]
	cases := []struct{ path, msg string }{
		{"/api/v1/payments/" + pay.ID, "Payment not found"},
		{"/api/v1/payment-links/" + link.ID, "Payment link not found"},
		{"/api/v1/checkout/sessions/" + sess.ID, "Checkout session not found"},
		{"/api/v1/checkout/sessions/" + sess.Reference, "Checkout session not found"},
	}
	for _, c := range cases {
		if r := e.get(t, c.path, &e.a); r.status != 200 {
			t.Errorf("owner: %s -> %d", c.path, r.status)
		}
		wantError(t, e.get(t, c.path, &e.b), 404, c.msg)
	}
	// A's cursor is not valid for B.
	wantError(t, e.get(t, "/api/v1/payments?cursor="+sandbox.EncodeCursor(pay.ID), &e.b), 400, "Invalid cursor")
}

func TestNotFoundIDs(t *testing.T) {
	t.Parallel()
	e := newEnv(t, sandbox.Options{})
	cases := []struct{ path, msg string }{
		{"/api/v1/payments/pay_prod_00000000000000000000000000000000", "Payment not found"},
		{"/api/v1/payment-links/pl_nope", "Payment link not found"},
		{"/api/v1/checkout/sessions/NOPE000000", "Checkout session not found"},
	}
	for _, c := range cases {
		wantError(t, e.get(t, c.path, &e.a), 404, c.msg)
	}
}

func TestPaymentShapes(t *testing.T) {
	t.Parallel()
	e := newEnv(t, sandbox.Options{})
	for _, biz := range []sandbox.Business{e.a, e.b} {
		pays := e.sb.Payments(biz.APIKey)
		r := e.get(t, "/api/v1/payments?limit=100", &biz)
		if r.status != 200 || r.header.Get("Content-Type") != "application/json" {
			t.Fatalf("list: %d %q", r.status, r.header.Get("Content-Type"))
		}
		list := decode(t, r.body)
		wantKeys(t, "list", list, "data", "has_more", "next_cursor")
		items := list["data"].([]any)
		if len(items) != 100 {
			t.Fatalf("list len %d", len(items))
		}
		for i, it := range items {
			m := it.(map[string]any)
			p := pays[i]
			want := []string{"id", "status", "amount", "currency", "payment_method", "customer", "created_at", "updated_at"}
			if p.TransactionID != "" {
				want = append(want, "transaction_id")
			}
			wantKeys(t, "list item", m, want...)
			wantKeys(t, "list customer", obj(m, "customer"), "name", "email", "phone")
			checkPayment(t, m, p, false)
		}
		// raw text of amount is exactly AmountText
		for _, p := range pays[:100] {
			if !strings.Contains(string(r.body), `"amount":`+string(p.AmountText)+`,`) {
				t.Errorf("amount text %s of %s not in list body", p.AmountText, p.ID)
			}
		}

		for _, p := range []sandbox.Payment{pays[0], pays[len(pays)/2], pays[len(pays)-1]} {
			r := e.get(t, "/api/v1/payments/"+p.ID, &biz)
			if r.status != 200 {
				t.Fatalf("detail %s: %d", p.ID, r.status)
			}
			m := decode(t, r.body)
			if _, wrapped := m["data"]; wrapped {
				t.Error("detail must not have a data wrapper")
			}
			wantKeys(t, "detail customer", obj(m, "customer"), "name", "email", "phone", "address")
			checkPayment(t, m, p, true)
			if !strings.Contains(string(r.body), `"amount":`+string(p.AmountText)+`,`) {
				t.Errorf("detail amount text %s not in %s", p.AmountText, r.body)
			}
		}
	}
}

func checkPayment(t *testing.T, m map[string]any, p sandbox.Payment, detail bool) {
	t.Helper()
	if !reID.MatchString(str(m, "id")) || str(m, "id") != p.ID {
		t.Errorf("id %q vs %q", m["id"], p.ID)
	}
	if !slices.Contains(sandbox.Statuses(), str(m, "status")) || str(m, "status") != p.Status {
		t.Errorf("status %q", m["status"])
	}
	if n, ok := m["amount"].(json.Number); !ok || n != p.AmountText {
		t.Errorf("amount %#v, want number %s", m["amount"], p.AmountText)
	}
	if str(m, "currency") != "BDT" {
		t.Errorf("currency %q", m["currency"])
	}
	if str(m, "transaction_id") != p.TransactionID {
		t.Errorf("transaction_id %q vs %q", m["transaction_id"], p.TransactionID)
	}
	if !slices.Contains(append(slices.Clone(sandbox.WalletMethods), sandbox.GatewayMethods...), str(m, "payment_method")) {
		t.Errorf("payment_method %q", m["payment_method"])
	}
	for _, k := range []string{"created_at", "updated_at"} {
		if !reTime.MatchString(str(m, k)) {
			t.Errorf("%s %q", k, m[k])
		}
	}
	if str(m, "created_at") != p.CreatedAt || str(m, "updated_at") != p.UpdatedAt || str(m, "updated_at") < str(m, "created_at") {
		t.Errorf("timestamps %q %q", m["created_at"], m["updated_at"])
	}
	c := obj(m, "customer")
	if str(c, "name") != p.Customer.Name || str(c, "email") != p.Customer.Email || str(c, "phone") != p.Customer.Phone {
		t.Errorf("customer %v vs %+v", c, p.Customer)
	}
	if detail && str(c, "address") != p.Customer.Address {
		t.Errorf("address %q vs %q", c["address"], p.Customer.Address)
	}
}

// The data must contain the variety the gateway has to cope with.
func TestPaymentDataVariety(t *testing.T) {
	t.Parallel()
	e := newEnv(t, sandbox.Options{})
	for _, biz := range []sandbox.Business{e.a, e.b} {
		pays := e.sb.Payments(biz.APIKey)
		statuses, methods, texts := map[string]bool{}, map[string]bool{}, map[string]bool{}
		var noDot, oneDigit, twoZero, noTxn, withTxn, millis000, ties int
		for i, p := range pays {
			statuses[p.Status] = true
			methods[p.PaymentMethod] = true
			texts[string(p.AmountText)] = true
			if !reAmountNum.MatchString(string(p.AmountText)) {
				t.Errorf("amount text %q", p.AmountText)
			}
			v, err := strconv.ParseFloat(string(p.AmountText), 64)
			if err != nil || int64(v*100+0.5) != p.AmountPaisa {
				t.Errorf("amount text %q vs paisa %d", p.AmountText, p.AmountPaisa)
			}
			switch _, frac, ok := strings.Cut(string(p.AmountText), "."); {
			case !ok:
				noDot++
			case len(frac) == 1:
				oneDigit++
			case frac == "00":
				twoZero++
			}
			if p.TransactionID == "" {
				noTxn++
			} else {
				withTxn++
			}
			if strings.HasSuffix(p.CreatedAt, ".000Z") {
				millis000++
			}
			if i > 0 && pays[i-1].CreatedAt == p.CreatedAt {
				ties++
			}
			if !strings.HasPrefix(p.CreatedAt, "2026-") || p.CreatedAt >= "2026-11-01T00:00:00.000Z" {
				t.Errorf("created_at %s outside the window", p.CreatedAt)
			}
		}
		if len(statuses) != 5 {
			t.Errorf("%s: statuses %v", biz.Name, statuses)
		}
		var wallet, gateway bool
		for m := range methods {
			wallet = wallet || slices.Contains(sandbox.WalletMethods, m)
			gateway = gateway || slices.Contains(sandbox.GatewayMethods, m)
		}
		if !wallet || !gateway {
			t.Errorf("%s: methods %v", biz.Name, methods)
		}
		if noDot == 0 || oneDigit == 0 || twoZero == 0 || noTxn == 0 || withTxn == 0 || millis000 == 0 || ties == 0 {
			t.Errorf("%s: noDot=%d oneDigit=%d twoZero=%d noTxn=%d withTxn=%d .000=%d ties=%d",
				biz.Name, noDot, oneDigit, twoZero, noTxn, withTxn, millis000, ties)
		}
		nasty := 0
		for _, v := range []string{"19.99", "0.29", "100.1", "0.01", "1.15", "4.35", "8.2", "99999999.99", "8.20", "100.10"} {
			if texts[v] {
				nasty++
			}
		}
		if nasty < 6 {
			t.Errorf("%s: only %d nasty amounts", biz.Name, nasty)
		}
	}
}

func TestPaymentLinkShape(t *testing.T) {
	t.Parallel()
	e := newEnv(t, sandbox.Options{PayURL: "https://pay.test.invalid/"})
	var noDesc, nullMax, nullExp, withMax, withExp int
	for _, biz := range []sandbox.Business{e.a, e.b} {
		for _, l := range e.sb.PaymentLinks(biz.APIKey) {
			r := e.get(t, "/api/v1/payment-links/"+l.ID, &biz)
			if r.status != 200 {
				t.Fatalf("%s: %d", l.ID, r.status)
			}
			m := decode(t, r.body)
			want := []string{"id", "url", "slug", "title", "amount", "currency", "is_reusable", "is_active",
				"current_uses", "max_uses", "expires_at", "success_url", "created_at", "updated_at"}
			if l.Description != "" {
				want = append(want, "description")
			} else {
				noDesc++
			}
			wantKeys(t, "link", m, want...)
			if !reLinkID.MatchString(str(m, "id")) || str(m, "id") != l.ID {
				t.Errorf("id %q", m["id"])
			}
			if str(m, "url") != "https://pay.test.invalid/"+str(m, "slug") || str(m, "slug") != l.Slug {
				t.Errorf("url %q slug %q", m["url"], m["slug"])
			}
			if n, ok := m["amount"].(json.Number); !ok || n != l.AmountText {
				t.Errorf("amount %#v vs %s", m["amount"], l.AmountText)
			}
			if _, ok := m["is_reusable"].(bool); !ok {
				t.Errorf("is_reusable %#v", m["is_reusable"])
			}
			if _, ok := m["is_active"].(bool); !ok {
				t.Errorf("is_active %#v", m["is_active"])
			}
			if _, ok := m["current_uses"].(json.Number); !ok {
				t.Errorf("current_uses %#v", m["current_uses"])
			}
			switch v := m["max_uses"].(type) {
			case nil:
				nullMax++
			case json.Number:
				withMax++
			default:
				t.Errorf("max_uses %#v", v)
			}
			switch v := m["expires_at"].(type) {
			case nil:
				nullExp++
			case string:
				withExp++
				if !reTime.MatchString(v) {
					t.Errorf("expires_at %q", v)
				}
			default:
				t.Errorf("expires_at %#v", v)
			}
			for _, k := range []string{"created_at", "updated_at"} {
				if !reTime.MatchString(str(m, k)) {
					t.Errorf("%s %q", k, m[k])
				}
			}
		}
	}
	if noDesc == 0 || nullMax == 0 || nullExp == 0 || withMax == 0 || withExp == 0 {
		t.Errorf("variety: noDesc=%d nullMax=%d withMax=%d nullExp=%d withExp=%d", noDesc, nullMax, withMax, nullExp, withExp)
	}
}

func TestCheckoutSessionShape(t *testing.T) {
	t.Parallel()
	e := newEnv(t, sandbox.Options{})
	var emptyMeta, unsortedMeta int
	for _, biz := range []sandbox.Business{e.a, e.b} {
		pays := map[string]sandbox.Payment{}
		for _, p := range e.sb.Payments(biz.APIKey) {
			pays[p.ID] = p
		}
		for _, s := range e.sb.CheckoutSessions(biz.APIKey) {
			byID := e.get(t, "/api/v1/checkout/sessions/"+s.ID, &biz)
			byRef := e.get(t, "/api/v1/checkout/sessions/"+s.Reference, &biz)
			if byID.status != 200 || byRef.status != 200 {
				t.Fatalf("session %s/%s: %d %d", s.ID, s.Reference, byID.status, byRef.status)
			}
			if string(byID.body) != string(byRef.body) {
				t.Errorf("by id and by reference differ")
			}
			top := decode(t, byID.body)
			wantKeys(t, "session wrapper", top, "data")
			m := obj(top, "data")
			wantKeys(t, "session", m, "id", "payment_id", "reference", "status", "payment_status", "amount", "amount_paisa",
				"subtotal", "subtotal_paisa", "currency", "customer", "success_url", "cancel_url", "transaction_id",
				"payment_method", "meta_data", "created_at", "updated_at")
			wantKeys(t, "session customer", obj(m, "customer"), "name", "email", "phone", "address", "city")
			if !reID.MatchString(str(m, "id")) || !reRef.MatchString(str(m, "reference")) {
				t.Errorf("id %q ref %q", m["id"], m["reference"])
			}
			p, ok := pays[str(m, "payment_id")]
			if !ok {
				t.Fatalf("payment_id %q is not a payment of %s", m["payment_id"], biz.Name)
			}
			if r := e.get(t, "/api/v1/payments/"+p.ID, &biz); r.status != 200 {
				t.Errorf("payment %s of session: %d", p.ID, r.status)
			}
			if str(m, "payment_status") != p.Status {
				t.Errorf("payment_status %q vs %q", m["payment_status"], p.Status)
			}
			for _, f := range []struct{ text, paisa string }{{"amount", "amount_paisa"}, {"subtotal", "subtotal_paisa"}} {
				txt := str(m, f.text)
				if !reMoney2.MatchString(txt) {
					t.Errorf("%s %#v", f.text, m[f.text])
				}
				n, ok := m[f.paisa].(json.Number)
				iv, err := n.Int64()
				if !ok || err != nil || strings.Replace(txt, ".", "", 1) != fmt.Sprintf("%03d", iv) {
					t.Errorf("%s=%q vs %s=%v", f.text, txt, f.paisa, m[f.paisa])
				}
			}
			if n, _ := m["amount_paisa"].(json.Number); string(n) != strconv.FormatInt(p.AmountPaisa, 10) {
				t.Errorf("amount_paisa %v vs payment %d", n, p.AmountPaisa)
			}
			meta, ok := m["meta_data"].(map[string]any)
			if !ok {
				t.Fatalf("meta_data %#v", m["meta_data"])
			}
			for k, v := range meta {
				if _, ok := v.(string); !ok {
					t.Errorf("meta_data[%s] = %#v", k, v)
				}
			}
			if len(meta) == 0 {
				emptyMeta++
			}
			var order []string
			for _, kv := range s.MetaData {
				order = append(order, kv.Key)
			}
			if len(order) > 1 && !slices.IsSorted(order) {
				unsortedMeta++
				// rendered in insertion order
				var quoted []string
				for _, k := range order {
					quoted = append(quoted, `"`+k+`":`)
				}
				body := string(byID.body)
				last := -1
				for _, q := range quoted {
					i := strings.Index(body, q)
					if i < last {
						t.Errorf("meta_data not in insertion order %v: %s", order, body)
					}
					last = i
				}
			}
			for _, k := range []string{"created_at", "updated_at"} {
				if !reTime.MatchString(str(m, k)) {
					t.Errorf("%s %q", k, m[k])
				}
			}
		}
	}
	if emptyMeta == 0 || unsortedMeta == 0 {
		t.Errorf("meta variety: empty=%d unsorted=%d", emptyMeta, unsortedMeta)
	}
}

type page struct {
	ids     []string
	hasMore bool
	next    *string
}

func (e *env) listPage(t *testing.T, biz *sandbox.Business, q url.Values) page {
	t.Helper()
	r := e.get(t, "/api/v1/payments?"+q.Encode(), biz)
	if r.status != 200 {
		t.Fatalf("list %s: %d %s", q.Encode(), r.status, r.body)
	}
	m := decode(t, r.body)
	var p page
	data, ok := m["data"].([]any)
	if !ok {
		t.Fatalf("data is %#v", m["data"])
	}
	for _, it := range data {
		p.ids = append(p.ids, str(it.(map[string]any), "id"))
	}
	p.hasMore = m["has_more"].(bool)
	if s, ok := m["next_cursor"].(string); ok {
		p.next = &s
	} else if m["next_cursor"] != nil {
		t.Fatalf("next_cursor %#v", m["next_cursor"])
	}
	return p
}

func TestListWalk(t *testing.T) {
	t.Parallel()
	for _, param := range []string{"", "payment_status"} {
		e := newEnv(t, sandbox.Options{StatusParam: param})
		if param == "" {
			param = "status"
		}
		for _, biz := range []sandbox.Business{e.a, e.b} {
			all := e.sb.Payments(biz.APIKey)
			// the documented order: created_at desc, ties by id desc
			for i := 1; i < len(all); i++ {
				p, q := all[i-1], all[i]
				if p.CreatedAt < q.CreatedAt || (p.CreatedAt == q.CreatedAt && p.ID < q.ID) {
					t.Fatalf("order broken at %d", i)
				}
			}
			for _, status := range append([]string{""}, sandbox.Statuses()...) {
				var want []string
				for _, p := range all {
					if status == "" || p.Status == status {
						want = append(want, p.ID)
					}
				}
				for _, limit := range []int{1, 7, 20, 100} {
					t.Run(fmt.Sprintf("%s/%s/%s/%d", param, biz.Name, status, limit), func(t *testing.T) {
						t.Parallel()
						var got []string
						q := url.Values{"limit": {strconv.Itoa(limit)}}
						if status != "" {
							q.Set(param, status)
						}
						for n := 0; ; n++ {
							if n > len(all)+1 {
								t.Fatal("walk does not terminate")
							}
							p := e.listPage(t, &biz, q)
							got = append(got, p.ids...)
							if len(p.ids) > limit {
								t.Fatalf("page of %d with limit %d", len(p.ids), limit)
							}
							if !p.hasMore {
								if p.next != nil {
									t.Fatalf("has_more false but next_cursor %q", *p.next)
								}
								break
							}
							if p.next == nil || len(p.ids) != limit {
								t.Fatalf("has_more true, next=%v, %d items", p.next, len(p.ids))
							}
							q.Set("cursor", *p.next)
						}
						if !slices.Equal(got, want) {
							t.Fatalf("walk got %d ids, want %d (equal=%v)", len(got), len(want), slices.Equal(got, want))
						}
					})
				}
			}
		}
	}
}

func TestStatusParamName(t *testing.T) {
	t.Parallel()
	e := newEnv(t, sandbox.Options{StatusParam: "payment_status"})
	if got := e.sb.StatusParam(); got != "payment_status" {
		t.Errorf("StatusParam() = %q", got)
	}
	// "status" is just an unknown parameter now
	p := e.listPage(t, &e.a, url.Values{"status": {"BOGUS"}, "limit": {"100"}})
	if len(p.ids) != 100 {
		t.Errorf("unknown param should be ignored, got %d", len(p.ids))
	}
	wantError(t, e.get(t, "/api/v1/payments?payment_status=BOGUS", &e.a), 400, "Invalid status")
}

func TestCursorIndependentOfLimit(t *testing.T) {
	t.Parallel()
	e := newEnv(t, sandbox.Options{})
	first := e.listPage(t, &e.a, url.Values{"limit": {"7"}})
	if first.next == nil {
		t.Fatal("no cursor")
	}
	all := e.sb.Payments(e.a.APIKey)
	if *first.next != sandbox.EncodeCursor(all[6].ID) {
		t.Errorf("cursor %q is not EncodeCursor(last id)", *first.next)
	}
	for _, limit := range []string{"1", "3", "20", "100"} {
		p := e.listPage(t, &e.a, url.Values{"limit": {limit}, "cursor": {*first.next}})
		n, _ := strconv.Atoi(limit)
		var want []string
		for _, pp := range all[7:min(7+n, len(all))] {
			want = append(want, pp.ID)
		}
		if !slices.Equal(p.ids, want) {
			t.Errorf("limit %s after cursor: got %v want %v", limit, p.ids, want)
		}
	}
	// the cursor of the last payment gives an empty last page
	last := e.listPage(t, &e.a, url.Values{"cursor": {sandbox.EncodeCursor(all[len(all)-1].ID)}})
	if len(last.ids) != 0 || last.hasMore || last.next != nil {
		t.Errorf("after last: %+v", last)
	}
	r := e.get(t, "/api/v1/payments?cursor="+sandbox.EncodeCursor(all[len(all)-1].ID), &e.a)
	if !strings.Contains(string(r.body), `"data":[]`) {
		t.Errorf("empty page must render data as [], got %s", r.body)
	}
}

func TestListParams(t *testing.T) {
	t.Parallel()
	e := newEnv(t, sandbox.Options{})
	other := e.sb.Payments(e.b.APIKey)[0].ID
	cases := []struct {
		query  string
		status int
		n      int
		msg    string
	}{
		{"", 200, 20, ""},
		{"limit=", 200, 20, ""},
		{"limit=1", 200, 1, ""},
		{"limit=100", 200, 100, ""},
		{"limit=101", 200, 100, ""},
		{"limit=5000", 200, 100, ""},
		{"limit=99999999999999999999999", 200, 100, ""},
		{"limit=0", 400, 0, "Invalid limit"},
		{"limit=-3", 400, 0, "Invalid limit"},
		{"limit=abc", 400, 0, "Invalid limit"},
		{"limit=1.5", 400, 0, "Invalid limit"},
		{"limit=10abc", 400, 0, "Invalid limit"},
		{"cursor=", 200, 20, ""},
		{"cursor=garbage!!", 400, 0, "Invalid cursor"},
		{"cursor=" + base64.RawURLEncoding.EncodeToString([]byte("pay_prod_nope")), 400, 0, "Invalid cursor"},
		{"cursor=" + sandbox.EncodeCursor(other), 400, 0, "Invalid cursor"},
		{"status=", 200, 20, ""},
		{"status=PENDING", 200, -1, ""},
		{"status=pending", 400, 0, "Invalid status"},
		{"status=EXPIRED", 400, 0, "Invalid status"},
		{"unknown=1", 200, 20, ""},
	}
	for _, c := range cases {
		t.Run(c.query, func(t *testing.T) {
			t.Parallel()
			r := e.get(t, "/api/v1/payments?"+c.query, &e.a)
			if c.status != 200 {
				wantError(t, r, c.status, c.msg)
				return
			}
			if r.status != 200 {
				t.Fatalf("status %d %s", r.status, r.body)
			}
			m := decode(t, r.body)
			data := m["data"].([]any)
			if c.n >= 0 && len(data) != c.n {
				t.Errorf("got %d items, want %d", len(data), c.n)
			}
			for _, it := range data {
				if _, has := obj(it.(map[string]any), "customer")["address"]; has {
					t.Error("list item has customer.address")
				}
			}
		})
	}
}

func TestEscapedPaths(t *testing.T) {
	t.Parallel()
	e := newEnv(t, sandbox.Options{})
	pay := e.sb.Payments(e.a.APIKey)[0].ID
	link := e.sb.PaymentLinks(e.a.APIKey)[0].ID
	cases := []struct {
		path   string
		route  string
		status int
		msg    string
	}{
		{"/api/v1/payments/..%2Fpayment-links%2F" + link, sandbox.RoutePayment, 404, "Payment not found"},
		{"/api/v1/payments/..%2Fpayment-links%2Fpl_x", sandbox.RoutePayment, 404, "Payment not found"},
		{"/api/v1/payments/a%3Fb", sandbox.RoutePayment, 404, "Payment not found"},
		{"/api/v1/payments/" + pay + "%3Flimit=1", sandbox.RoutePayment, 404, "Payment not found"},
		{"/api/v1/payments/" + pay + "%2F", sandbox.RoutePayment, 404, "Payment not found"},
		{"/api/v1/payment-links/a%2Fb", sandbox.RoutePaymentLink, 404, "Payment link not found"},
		{"/api/v1/payment-links/..%2F..%2Fpayments", sandbox.RoutePaymentLink, 404, "Payment link not found"},
		{"/api/v1/checkout/sessions/x%2F..", sandbox.RouteCheckoutSession, 404, "Checkout session not found"},
		{"/api/v1/payments/%70" + pay[1:], sandbox.RoutePayment, 200, ""}, // escaped 'p' is the same id
		{"/api/v1/payments%2F" + pay, "", 404, "Not found"},
		{"/api/v1/payments/", "", 404, "Not found"},
		{"/api/v1/payments/" + pay + "/", "", 404, "Not found"},
		{"/api/v1/payments/" + pay + "/x", "", 404, "Not found"},
		{"/api/v1/payments/../payment-links/" + link, "", 404, "Not found"},
		{"/api/v1/checkout/sessions", "", 404, "Not found"},
		{"/api/v1", "", 404, "Not found"},
		{"/api/v2/payments", "", 404, "Not found"},
		{"/", "", 404, "Not found"},
		{"/API/V1/PAYMENTS", "", 404, "Not found"},
	}
	for _, c := range cases {
		t.Run(c.path, func(t *testing.T) {
			e.sb.ResetCalls()
			r := e.get(t, c.path, &e.a)
			if c.status == 200 {
				if r.status != 200 {
					t.Fatalf("status %d %s", r.status, r.body)
				}
			} else {
				wantError(t, r, c.status, c.msg)
			}
			calls := e.sb.Calls()
			if len(calls) != 1 || calls[0].Route != c.route || calls[0].EscapedPath != c.path {
				t.Errorf("calls = %+v, want route %q path %q", calls, c.route, c.path)
			}
		})
	}
}

func TestMethodNotAllowed(t *testing.T) {
	t.Parallel()
	e := newEnv(t, sandbox.Options{})
	pay := e.sb.Payments(e.a.APIKey)[0].ID
	for _, path := range []string{"/api/v1/payments", "/api/v1/payments/" + pay, "/api/v1/payment-links/pl_x", "/api/v1/checkout/sessions/x"} {
		for _, m := range []string{http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete, http.MethodHead} {
			r := e.do(t, m, path, &e.a)
			if m == http.MethodHead {
				if r.status != 405 {
					t.Errorf("HEAD %s: %d", path, r.status)
				}
				continue
			}
			wantError(t, r, 405, "Method not allowed")
			if r.header.Get("Allow") != "GET" {
				t.Errorf("Allow = %q", r.header.Get("Allow"))
			}
		}
	}
}

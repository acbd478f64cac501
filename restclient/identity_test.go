package restclient

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"path"
	"strings"
	"testing"
)

// echoIDServer answers every retrieve with a payment whose id is the one
// the path asked for.
func echoIDServer(t *testing.T) *testServer {
	return newTestServer(t, func(w http.ResponseWriter, r *http.Request) {
		id, _ := json.Marshal(path.Base(r.URL.Path))
		fmt.Fprintf(w, `{"id":%s,"status":"PENDING","amount":1,"created_at":"2026-11-21T09:30:00Z","updated_at":"2026-11-21T09:30:00Z"}`, id)
	})
}

// TestRecordIsTheOneAsked: a REST record whose id (or, for a checkout
// session asked by reference, whose reference) is not the one asked for
// is KindUpstream, whose message names neither id; the one asked for is
// returned. Each case makes exactly one REST call (nothing is retried).
func TestRecordIsTheOneAsked(t *testing.T) {
	t.Parallel()
	const otherPayment = `{"id":"pay_prod_ffffffffffffffffffffffffffffffff","status":"PENDING","amount":1,"created_at":"2026-11-21T09:30:00Z","updated_at":"2026-11-21T09:30:00Z"}`
	for _, tc := range []struct {
		name   string
		body   string
		call   func(c *Client) error
		wantOK bool
	}{
		{"payment with the id asked", paymentBody, func(c *Client) error {
			_, err := c.GetPayment(credCtx(), "pay_prod_0123456789abcdef0123456789abcdef")
			return err
		}, true},
		{"payment with another id", otherPayment, func(c *Client) error {
			_, err := c.GetPayment(credCtx(), "pay_prod_0123456789abcdef0123456789abcdef")
			return err
		}, false},
		{"payment id differing only in case", strings.Replace(paymentBody, "pay_prod_0123456789abcdef", "pay_prod_0123456789ABCDEF", 1), func(c *Client) error {
			_, err := c.GetPayment(credCtx(), "pay_prod_0123456789abcdef0123456789abcdef")
			return err
		}, false},
		{"payment link with the id asked", linkNullsBody, func(c *Client) error {
			_, err := c.GetPaymentLink(credCtx(), "pl_abc123")
			return err
		}, true},
		{"payment link with another id", linkFullBody, func(c *Client) error {
			_, err := c.GetPaymentLink(credCtx(), "pl_abc123")
			return err
		}, false},
		{"checkout session asked by id", sessionBody, func(c *Client) error {
			_, err := c.GetCheckoutSession(credCtx(), "pay_prod_0123456789abcdef0123456789abcdef")
			return err
		}, true},
		{"checkout session asked by reference", sessionBody, func(c *Client) error {
			_, err := c.GetCheckoutSession(credCtx(), "REF12345")
			return err
		}, true},
		{"checkout session with another id and reference", sessionBody, func(c *Client) error {
			_, err := c.GetCheckoutSession(credCtx(), "REF99999")
			return err
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := jsonServer(t, 200, tc.body)
			c := newClient(t, Config{BaseURL: srv.URL})
			err := tc.call(c)
			if tc.wantOK {
				if err != nil {
					t.Fatalf("err %v", err)
				}
			} else {
				var e *Error
				if !errors.As(err, &e) || e.Kind != KindUpstream || e.Status != 0 ||
					!strings.Contains(e.Message, "asked for") {
					t.Fatalf("err %v, want KindUpstream naming the mismatch", err)
				}
				for _, id := range []string{"pay_prod_", "pl_", "REF"} {
					if strings.Contains(e.Error(), id) {
						t.Errorf("message %q quotes an id", e.Error())
					}
				}
			}
			if n := srv.calls.Load(); n != 1 {
				t.Errorf("%d REST calls, want 1", n)
			}
		})
	}
}

// TestCursorMustAdvance: a page fetched with cursor C that says has_more
// with next_cursor C would have a client ask for the same page forever;
// it is KindUpstream. A first page, a last page repeating the cursor
// (has_more false: the walk ends anyway) and an advancing page are
// answered.
func TestCursorMustAdvance(t *testing.T) {
	t.Parallel()
	page := func(hasMore bool, next string) string {
		n := "null"
		if next != "" {
			n = `"` + next + `"`
		}
		return strings.Replace(strings.Replace(listBody, `"has_more": true`, fmt.Sprintf(`"has_more": %v`, hasMore), 1),
			`"next_cursor": "cur_2"`, `"next_cursor": `+n, 1)
	}
	for _, tc := range []struct {
		name   string
		cursor string
		body   string
		wantOK bool
	}{
		{"next cursor repeats the cursor sent", "cur_2", page(true, "cur_2"), false},
		{"next cursor advances", "cur_1", page(true, "cur_2"), true},
		{"first page", "", page(true, "cur_2"), true},
		{"last page repeating the cursor", "cur_2", page(false, "cur_2"), true},
		{"last page without a cursor", "cur_2", page(false, ""), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := jsonServer(t, 200, tc.body)
			c := newClient(t, Config{BaseURL: srv.URL})
			p, err := c.ListPayments(credCtx(), ListParams{Limit: 2, Cursor: tc.cursor})
			if tc.wantOK {
				if err != nil || len(p.Data) != 2 {
					t.Fatalf("got %+v, %v", p, err)
				}
			} else if KindOf(err) != KindUpstream || !strings.Contains(err.Error(), "next_cursor is the cursor just sent") ||
				strings.Contains(err.Error(), "cur_2") {
				t.Fatalf("err %v, want KindUpstream about the cursor, not quoting it", err)
			}
			if n := srv.calls.Load(); n != 1 {
				t.Errorf("%d REST calls, want 1", n)
			}
		})
	}
}

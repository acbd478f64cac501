package restclient

import (
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// cannedTransport answers every request with one canned outcome and
// counts the requests it gets.
type cannedTransport struct {
	respond func(*http.Request) (*http.Response, error)
	calls   int
}

func (c *cannedTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.calls++
	return c.respond(r)
}

// The client calls its transport directly when http.Client.Do would add
// nothing: every answer, redirect and failure comes out as Do's would.
// Each case runs through both paths (a client whose Do cannot be skipped,
// since its http.Client has a cookie jar, is the reference).
func TestDirectRoundTripSameAsClientDo(t *testing.T) {
	t.Parallel()
	answer := func(status int, header http.Header, body io.ReadCloser, length int64) func(*http.Request) (*http.Response, error) {
		return func(r *http.Request) (*http.Response, error) {
			return &http.Response{StatusCode: status, Header: header, Body: body, ContentLength: length, Request: r}, nil
		}
	}
	for _, tt := range []struct {
		name    string
		respond func() func(*http.Request) (*http.Response, error)
	}{
		{"payment", func() func(*http.Request) (*http.Response, error) {
			return answer(200, http.Header{"Content-Type": {"application/json"}}, io.NopCloser(strings.NewReader(paymentBody)), -1)
		}},
		{"not found", func() func(*http.Request) (*http.Response, error) {
			return answer(404, http.Header{}, io.NopCloser(strings.NewReader(`{"error":"Payment not found"}`)), -1)
		}},
		{"redirect not followed", func() func(*http.Request) (*http.Response, error) {
			return answer(302, http.Header{"Location": {"http://elsewhere.example/x"}}, http.NoBody, 0)
		}},
		{"nil body, no length", func() func(*http.Request) (*http.Response, error) {
			return answer(200, http.Header{}, nil, 0)
		}},
		{"nil body with a length", func() func(*http.Request) (*http.Response, error) {
			return answer(200, http.Header{}, nil, 10)
		}},
		{"nil response", func() func(*http.Request) (*http.Response, error) {
			return func(*http.Request) (*http.Response, error) { return nil, nil }
		}},
		{"transport error", func() func(*http.Request) (*http.Response, error) {
			return func(*http.Request) (*http.Response, error) { return nil, io.ErrUnexpectedEOF }
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			type outcome struct {
				id, kind, msg string
				status        int
			}
			run := func(hc *http.Client, tr *cannedTransport, wantDirect bool) outcome {
				c := newClient(t, Config{BaseURL: "http://rest.invalid", HTTPClient: hc})
				if (c.rt != nil) != wantDirect {
					t.Fatalf("direct round trip = %v, want %v", c.rt != nil, wantDirect)
				}
				p, err := c.GetPayment(credCtx(), "pay_prod_0123456789abcdef0123456789abcdef")
				if tr.calls != 1 {
					t.Errorf("transport called %d times, want 1", tr.calls)
				}
				var o outcome
				if p != nil {
					o.id = p.ID
				}
				var e *Error
				if errors.As(err, &e) {
					o.kind, o.msg, o.status = e.Kind.String(), e.Message, e.Status
				} else if err != nil {
					o.msg = err.Error()
				}
				return o
			}
			direct := &cannedTransport{respond: tt.respond()}
			viaDo := &cannedTransport{respond: tt.respond()}
			got := run(&http.Client{Transport: direct}, direct, true)
			want := run(&http.Client{Transport: viaDo, Jar: noCookies{}}, viaDo, false)
			if tt.name == "payment" && got.id == "" {
				t.Errorf("no payment: %+v", got)
			}
			if got != want {
				t.Errorf("direct %+v\n  Do %+v", got, want)
			}
		})
	}
}

// noCookies is a cookie jar that keeps nothing: it makes the client use
// http.Client.Do.
type noCookies struct{}

func (noCookies) SetCookies(*url.URL, []*http.Cookie) {}
func (noCookies) Cookies(*url.URL) []*http.Cookie     { return nil }

package restclient

import (
	"errors"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestTransportErrorsNameNoAddress: a connection failure's message (what
// a GraphQL caller reads) says what failed in fixed words and never names
// the REST API's address; the error chain keeps the net error for logs.
func TestTransportErrorsNameNoAddress(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := ln.Addr().String()
	ln.Close()
	dropped := newTestServer(t, func(w http.ResponseWriter, r *http.Request) {
		if conn, _, err := w.(http.Hijacker).Hijack(); err == nil {
			conn.Close()
		}
	})
	for _, tc := range []struct {
		name, baseURL, want string
	}{
		{"connection refused", "http://" + refused, "REST API unreachable: connection refused"},
		{"connection dropped", dropped.URL, "REST API unreachable: connection closed by the REST API"},
		{"host not resolved", "http://paygraph-no-such-host.invalid", "REST API unreachable: host name not resolved"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := newClient(t, Config{BaseURL: tc.baseURL, Timeout: 2 * time.Second})
			_, err := c.GetPayment(credCtx(), "pay_1")
			var e *Error
			if !errors.As(err, &e) || e.Kind != KindUpstream {
				t.Fatalf("err = %v; want KindUpstream", err)
			}
			if e.Message != tc.want {
				t.Errorf("message %q, want %q", e.Message, tc.want)
			}
			host := strings.TrimPrefix(tc.baseURL, "http://")
			if strings.Contains(e.Message, host) || strings.Contains(e.Message, "127.0.0.1") || strings.Contains(e.Message, "dial tcp") {
				t.Errorf("message names the REST API's address: %q", e.Message)
			}
			if e.Err == nil {
				t.Errorf("the cause is not kept for the logs")
			}
		})
	}
}

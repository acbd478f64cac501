package gateway_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests when goroutines are left running
// after all of them have finished: a leaked REST call, loader, server or
// connection. fasthttp's two cleaners (REST_TRANSPORT=fasthttp) are not
// leaks: one a client and one a host, not a call, each sleeping until
// its idle connections expire (90 s) before it ends; a call's own
// goroutines would still show.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		goleak.IgnoreAnyFunction("github.com/valyala/fasthttp.(*Client).mCleaner"),
		goleak.IgnoreAnyFunction("github.com/valyala/fasthttp.(*HostClient).connsCleaner"))
}

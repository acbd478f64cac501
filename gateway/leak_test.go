package gateway_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests when goroutines are left running
// after all of them have finished: a leaked REST call, loader, server or
// connection. fasthttp's idle-connection cleaners (one a REST pool's
// host client, fasttransport) are not leaks: each sleeps until its idle
// connections expire (90 s) before it ends.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreAnyFunction("github.com/valyala/fasthttp.(*HostClient).connsCleaner"))
}

package gateway_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests when goroutines are left running
// after all of them have finished: a leaked REST call, loader, server or
// connection.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

package main

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"
)

// TestMain fails the package's tests when goroutines are left running
// after all of them have finished (a leaked REST call, loader, server or
// connection). It is goleak's VerifyTestMain in a few lines, without the
// dependency.
func TestMain(m *testing.M) {
	code := m.Run()
	if code == 0 {
		if leaked := leakedGoroutines(5 * time.Second); leaked != "" {
			fmt.Fprintf(os.Stderr, "leak check: goroutines still running after the tests:\n%s\n", leaked)
			code = 1
		}
	}
	os.Exit(code)
}

// leakIgnored are goroutines that outlive tests by design.
var leakIgnored = []string{
	"testing.(*M).", "testing.tRunner", "runtime.goexit0", "os/signal.signal_recv", "os/signal.loop",
	"runtime/pprof.", "created by runtime.gc", "runtime.ensureSigM",
}

// leakedGoroutines waits up to wait for every goroutine but the caller
// and the ignored ones to end, and returns the stacks of those that do not.
func leakedGoroutines(wait time.Duration) string {
	deadline := time.Now().Add(wait)
	for {
		var leaked []string
		buf := make([]byte, 1<<20)
		buf = buf[:runtime.Stack(buf, true)]
		for i, g := range strings.Split(string(buf), "\n\n") {
			if i == 0 || strings.TrimSpace(g) == "" { // the first is this goroutine
				continue
			}
			ignored := false
			for _, s := range leakIgnored {
				if strings.Contains(g, s) {
					ignored = true
					break
				}
			}
			if !ignored {
				leaked = append(leaked, g)
			}
		}
		if len(leaked) == 0 {
			return ""
		}
		if time.Now().After(deadline) {
			return strings.Join(leaked, "\n\n")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

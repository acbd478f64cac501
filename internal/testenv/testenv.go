// Package testenv holds what tests in several packages need from the
// machine: the external tools that scripts/ci-setup.sh installs, free
// loopback ports, a log sink safe to read while it is written, and the
// process's CPU time for benchmarks that report it.
package testenv

import (
	"bytes"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"runtime/debug"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Tool returns the path of the named program (looked up in PATH, or
// absolute). When it is missing the test fails under CI (CI set) and is
// skipped elsewhere, so that CI never passes by skipping.
func Tool(t testing.TB, name string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err == nil {
		return path
	}
	if os.Getenv("CI") != "" {
		t.Fatalf("%s is not installed (scripts/ci-setup.sh installs it): %v", name, err)
	}
	t.Skipf("%s is not installed; scripts/ci-setup.sh installs it", name)
	return ""
}

// FreeLoopbackPort returns a TCP port on 127.0.0.1 that was free a moment
// ago (for a process the test starts, which must be told its port).
func FreeLoopbackPort(t testing.TB) int {
	t.Helper()
	// From 20000 up to Linux's ephemeral range (32768), so that a test
	// dialling thousands of connections cannot take the port between the pick
	// and the bind.
	for range 200 {
		port := 20000 + rand.IntN(32768-20000)
		ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
		if err != nil {
			continue
		}
		ln.Close()
		return port
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// RaceEnabled reports whether the test binary was built with -race, which
// changes allocation counts (allocation budgets are checked without it).
func RaceEnabled() bool {
	bi, ok := debug.ReadBuildInfo()
	return ok && slices.Contains(bi.Settings, debug.BuildSetting{Key: "-race", Value: "true"})
}

// LockedBuffer is a bytes.Buffer safe for concurrent writers and readers:
// a gateway's log that a test searches while the gateway still writes.
type LockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *LockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// String returns everything written so far.
func (l *LockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// SilentServer listens on a loopback port, accepts every connection and
// never answers (a hung Redis, say); it returns the address, and
// everything closes when the test ends.
func SilentServer(t testing.TB) string {
	t.Helper()
	return acceptAll(t, func(net.Conn) {})
}

// ProcessCPU is the process's user and system CPU time so far
// (getrusage), every goroutine's, for benchmarks that report CPU per op.
func ProcessCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// Package testenv holds what tests in several packages need from the
// machine: the external tools that scripts/ci-setup.sh installs, and free
// loopback ports.
package testenv

import (
	"net"
	"os"
	"os/exec"
	"runtime/debug"
	"testing"
)

// Tool returns the path of the named program (a name looked up in PATH,
// or an absolute path). When it is missing the test fails under CI (the
// CI variable set, as scripts/test.sh sets it) and is skipped elsewhere,
// so that a bare `go test` on a laptop still runs, but CI never passes by
// skipping.
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
	if !ok {
		return false
	}
	for _, s := range bi.Settings {
		if s.Key == "-race" && s.Value == "true" {
			return true
		}
	}
	return false
}

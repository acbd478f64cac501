package e2e

// The log's gathered writes (observe.LogBuffer, their wait raised to an
// hour by the test-only PAYGRAPH_TEST_LOG_FLUSH_INTERVAL) lose
// no line when the process ends as it should: on SIGTERM, and when an
// error stops it, every line logged is written before it exits.

import (
	"net"
	"net/http"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestLogFlushedOnExit(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs the gateway binary: not in -short")
	}
	t.Run("SIGTERM writes the lines held", func(t *testing.T) {
		fake := newRESTFake(t)
		// An hour: nothing but the exit writes the request's line.
		p := startGateway(t, map[string]string{"REST_BASE_URL": fake.URL, "PAYGRAPH_TEST_LOG_FLUSH_INTERVAL": "1h"})
		const id = "e2e-log-flush-sigterm"
		p.do(t.Context(), gqlReq{Query: `{ __typename }`, Header: http.Header{"X-Request-Id": {id}}})
		time.Sleep(200 * time.Millisecond) // past the default interval
		if strings.Contains(p.Output(), id) {
			t.Fatal("the access line was written before the exit with PAYGRAPH_TEST_LOG_FLUSH_INTERVAL=1h: the check below proves nothing")
		}
		if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		select {
		case <-p.exited:
		case <-time.After(15 * time.Second):
			t.Fatal("the gateway did not exit within 15 s of SIGTERM")
		}
		if n := strings.Count(p.Output(), `"request_id":"`+id+`"`); n != 1 {
			t.Fatalf("the access line held at SIGTERM written %d times, want 1:\n%s", n, p.Output())
		}
	})
	t.Run("an error that stops the gateway writes its line", func(t *testing.T) {
		// The port is taken: the gateway logs "paygraph stopped" and exits 1.
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		cmd := exec.Command(gatewayBinary(t))
		cmd.Env = []string{"PORT=" + strconv.Itoa(ln.Addr().(*net.TCPAddr).Port), "HOST=127.0.0.1", "HEALTH_PORT=0", "PAYGRAPH_TEST_LOG_FLUSH_INTERVAL=1h", "GOMEMLIMIT=" + gatewayMemLimit}
		out, err := cmd.CombinedOutput()
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
			t.Fatalf("exit: %v, want status 1:\n%s", err, out)
		}
		if !strings.Contains(string(out), `"msg":"paygraph stopped"`) || !strings.Contains(string(out), "address already in use") {
			t.Fatalf("no \"paygraph stopped\" line saying why:\n%s", out)
		}
	})
}

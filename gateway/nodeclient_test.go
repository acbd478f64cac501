package gateway_test

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestSubscriptionNodeClient: graphql-sse's own client (Node, pinned in
// testdata/nodeclient, installed by scripts/install-nodeclient.sh)
// receives the current state, a change made in the sandbox, and the
// completion at a terminal state. Skipped without node or the client,
// except under CI (scripts/test.sh), where ci-setup installs them.
func TestSubscriptionNodeClient(t *testing.T) {
	node, err := exec.LookPath("node")
	if _, statErr := os.Stat("testdata/nodeclient/node_modules/graphql-sse"); err != nil || statErr != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("node or the graphql-sse client is missing: run scripts/install-nodeclient.sh")
		}
		t.Skip("node or the graphql-sse client is missing: run scripts/install-nodeclient.sh")
	}
	g := startGateway(t, setup{env: fastPolls(nil)})
	b := g.Biz[0]
	id := pendingPayment(t, g.Sandbox, b, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second) // a hang guard
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "subscribe.mjs", g.URL, id)
	cmd.Dir = "testdata/nodeclient"
	cmd.Env = append(os.Environ(), "PAYGRAPH_KEY="+b.APIKey, "PAYGRAPH_SECRET="+b.APISecret)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewScanner(out)
	status := func() string {
		t.Helper()
		if !lines.Scan() {
			t.Fatalf("the client ended early; stderr: %s", stderr.String())
		}
		if lines.Text() == "complete" {
			return "complete"
		}
		var ev struct {
			Data struct{ PaymentUpdated struct{ ID, Status string } }
		}
		if err := json.Unmarshal(lines.Bytes(), &ev); err != nil || ev.Data.PaymentUpdated.ID != id {
			t.Fatalf("client printed %q, want an event of %s", lines.Text(), id)
		}
		return ev.Data.PaymentUpdated.Status
	}
	if got := status(); got != "PENDING" {
		t.Fatalf("first event %s, want PENDING", got)
	}
	if err := g.Sandbox.SetPaymentStatus(b.APIKey, id, "CANCELLED"); err != nil {
		t.Fatal(err)
	}
	if got := status(); got != "CANCELLED" {
		t.Fatalf("second event %s, want CANCELLED", got)
	}
	if got := status(); got != "complete" {
		t.Fatalf("after CANCELLED: %s, want complete", got)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("client: %v; stderr: %s", err, stderr.String())
	}
}

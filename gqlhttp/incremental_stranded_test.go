package gqlhttp

import (
	"context"
	"testing"

	"github.com/99designs/gqlgen/graphql"
)

// TestStrandedReadersCounted: a reader still waiting for a result when its
// stream ended is counted while it waits (gqlgen's executor may never
// answer it: readResults), and past maxStrandedReaders @defer is no longer
// streamed.
func TestStrandedReadersCounted(t *testing.T) {
	before := strandedReaders.Load()
	release := make(chan struct{})
	entered := make(chan struct{})
	responses := func(ctx context.Context) *graphql.Response {
		close(entered)
		<-release // as the executor waits for a deferred result nobody sends
		return nil
	}
	results, stop := readResults(context.Background(), responses)
	<-entered
	stop()
	if got := strandedReaders.Load() - before; got != 1 {
		t.Fatalf("stranded readers: %d more, want 1", got)
	}
	close(release)
	for range results { // the reader returns and closes its channel
	}
	if got := strandedReaders.Load() - before; got != 0 {
		t.Errorf("stranded readers after it returned: %d more, want 0", got)
	}

	strandedReaders.Add(maxStrandedReaders)
	defer strandedReaders.Add(-maxStrandedReaders)
	if deferAvailable() {
		t.Error("deferAvailable with maxStrandedReaders stranded")
	}
}

// StrandedReaders is strandedReaders for the package's black-box tests.
func StrandedReaders() int64 { return strandedReaders.Load() }

package observe

// LogBuffer (logbuffer.go): the same bytes in the same order, whole lines
// in fewer writes, bounded memory, no line dropped when the writer is
// slow, and what Flush, Close and the interval write.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// writesRecorder keeps every Write it is given, one entry each.
type writesRecorder struct {
	mu     sync.Mutex
	writes []string
	gate   chan struct{} // when set, each Write waits for a receive
}

func (w *writesRecorder) Write(p []byte) (int, error) {
	if w.gate != nil {
		<-w.gate
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.writes = append(w.writes, string(p))
	return len(p), nil
}

func (w *writesRecorder) got() (all string, writes int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return strings.Join(w.writes, ""), len(w.writes)
}

// eachWholeLines fails unless every write is whole lines.
func (w *writesRecorder) eachWholeLines(t *testing.T) {
	t.Helper()
	w.mu.Lock()
	defer w.mu.Unlock()
	for i, s := range w.writes {
		if !strings.HasSuffix(s, "\n") {
			t.Fatalf("write %d does not end a line: %q", i, s)
		}
	}
}

func line(i int) string {
	return fmt.Sprintf(`{"msg":"request","n":%d,"pad":"%s"}`+"\n", i, strings.Repeat("x", i%17))
}

func TestLogBuffer(t *testing.T) {
	for _, tc := range []struct {
		name     string
		interval time.Duration
		size     int
		lines    []string
		// writes is how many Writes w gets before Flush; -1: don't check.
		writes int
	}{
		{name: "interval 0 writes each line at once", interval: 0, size: 100, lines: []string{line(1), line(2), line(3)}, writes: 3},
		{name: "lines held until the buffer fills", interval: time.Hour, size: 1 << 10, lines: []string{line(1), line(2), line(3)}, writes: 0},
		{name: "a full buffer is one write of whole lines", interval: time.Hour, size: 120, lines: []string{line(1), line(2), line(3), line(4), line(5), line(6), line(7)}, writes: -1},
		{name: "a line longer than the buffer is written alone, after those before it", interval: time.Hour, size: 60,
			lines: []string{line(1), `{"msg":"` + strings.Repeat("y", 200) + `"}` + "\n", line(2)}, writes: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := &writesRecorder{}
			b := NewLogBuffer(w, tc.interval, tc.size)
			for _, l := range tc.lines {
				if n, err := b.Write([]byte(l)); n != len(l) || err != nil {
					t.Fatalf("Write: %d, %v", n, err)
				}
			}
			if _, n := w.got(); tc.writes >= 0 && n != tc.writes {
				t.Errorf("%d writes before Flush, want %d", n, tc.writes)
			}
			if err := b.Flush(); err != nil {
				t.Fatal(err)
			}
			all, n := w.got()
			if want := strings.Join(tc.lines, ""); all != want {
				t.Errorf("written:\n%s\nwant:\n%s", all, want)
			}
			if n > len(tc.lines) {
				t.Errorf("%d writes for %d lines", n, len(tc.lines))
			}
			w.eachWholeLines(t)
			w.mu.Lock()
			for i, s := range w.writes {
				if len(s) > tc.size && strings.Count(s, "\n") > 1 {
					t.Errorf("write %d holds %d bytes in %d lines, more than the buffer's %d", i, len(s), strings.Count(s, "\n"), tc.size)
				}
			}
			w.mu.Unlock()
		})
	}
}

func TestLogBufferInterval(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		const interval = 20 * time.Millisecond
		w := &writesRecorder{}
		b := NewLogBuffer(w, interval, 1<<10)
		defer b.Close()
		_, _ = b.Write([]byte(line(1)))
		_, _ = b.Write([]byte(line(2)))
		time.Sleep(interval - time.Millisecond)
		synctest.Wait()
		if all, _ := w.got(); all != "" {
			t.Fatalf("written before the interval: %q", all)
		}
		time.Sleep(time.Millisecond)
		synctest.Wait()
		if all, n := w.got(); all != line(1)+line(2) || n != 1 {
			t.Fatalf("at the interval: %d writes of %q, want the two lines in one", n, all)
		}
		// Idle for long: nothing to write; then a line is held for an
		// interval, as the first ones were.
		time.Sleep(time.Hour)
		_, _ = b.Write([]byte(line(3)))
		time.Sleep(interval)
		synctest.Wait()
		if all, n := w.got(); all != line(1)+line(2)+line(3) || n != 2 {
			t.Fatalf("after an idle spell: %d writes of %q, want the third line in a second", n, all)
		}
	})
}

func TestLogBufferClose(t *testing.T) {
	w := &writesRecorder{}
	b := NewLogBuffer(w, time.Hour, 1<<10)
	_, _ = b.Write([]byte(line(1)))
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if all, _ := w.got(); all != line(1) {
		t.Fatalf("Close wrote %q, want the held line", all)
	}
	_, _ = b.Write([]byte(line(2)))
	if all, n := w.got(); all != line(1)+line(2) || n != 2 {
		t.Fatalf("after Close: %q in %d writes, want the line written at once", all, n)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
}

// A slow reader makes Writes wait once both buffers are held (bounded
// memory), never drops a line.
func TestLogBufferSlowWriterBlocks(t *testing.T) {
	w := &writesRecorder{gate: make(chan struct{})}
	b := NewLogBuffer(w, time.Hour, 100)
	// Lines 1-2 fill one buffer (handed to the stuck writer when line 3
	// comes), lines 3-4 the other.
	for i := 1; i <= 4; i++ {
		_, _ = b.Write([]byte(line(i)))
	}
	done := make(chan struct{})
	go func() {
		_, _ = b.Write([]byte(line(5))) // both buffers held: waits for w
		close(done)
	}()
	select {
	case <-done:
		t.Fatal("a Write past both buffers returned while the writer was stuck: its line was dropped or held past the bound")
	case <-time.After(50 * time.Millisecond):
	}
	close(w.gate)
	<-done
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if all, _ := w.got(); all != line(1)+line(2)+line(3)+line(4)+line(5) {
		t.Fatalf("written %q", all)
	}
}

// Lines logged from many goroutines through NewLogger's JSON logger come
// out whole, each once, each goroutine's in its order, in far fewer
// writes than lines.
func TestLogBufferConcurrentLines(t *testing.T) {
	w := &writesRecorder{}
	b := NewLogBuffer(w, time.Millisecond, 4<<10)
	logger := NewLogger(b, "json", slog.LevelInfo, Options{})
	const goroutines, each = 8, 300
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				logger.LogAttrs(context.Background(), slog.LevelInfo, "request", slog.Int("g", g), slog.Int("i", i))
			}
		}()
	}
	wg.Wait()
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	all, writes := w.got()
	w.eachWholeLines(t)
	next := make([]int, goroutines)
	lines := strings.Split(strings.TrimSuffix(all, "\n"), "\n")
	for _, l := range lines {
		var g, i int
		k := strings.Index(l, `"g":`)
		if k < 0 {
			t.Fatalf("torn line %q", l)
		}
		if _, err := fmt.Sscanf(l[k:], `"g":%d,"i":%d}`, &g, &i); err != nil {
			t.Fatalf("torn line %q: %v", l, err)
		}
		if i != next[g] {
			t.Fatalf("goroutine %d: line %d after %d", g, i, next[g]-1)
		}
		next[g]++
	}
	if len(lines) != goroutines*each {
		t.Fatalf("%d lines, want %d", len(lines), goroutines*each)
	}
	if writes*10 > len(lines) {
		t.Errorf("%d writes for %d lines: not gathered", writes, len(lines))
	}
	t.Logf("%d lines in %d writes", len(lines), writes)
}

// failingWriter fails every Write.
type failingWriter struct{ n atomic.Int64 }

func (f *failingWriter) Write(p []byte) (int, error) {
	f.n.Add(1)
	return 0, errors.New("stderr closed")
}

// A failed write loses its batch (as a failed write of one line lost that
// line), says so to the next Write or Flush, and blocks nothing.
func TestLogBufferWriteError(t *testing.T) {
	f := &failingWriter{}
	b := NewLogBuffer(f, time.Hour, 100)
	var errs int
	for i := range 20 {
		if _, err := b.Write([]byte(line(i))); err != nil {
			errs++
		}
	}
	if err := b.Flush(); err == nil && errs == 0 {
		t.Fatal("no Write or Flush told of the failed writes")
	}
	if f.n.Load() == 0 {
		t.Fatal("nothing was written")
	}
	if err := b.Close(); err != nil {
		t.Fatalf("Close after Flush reported %v: nothing was held", err)
	}
}

// Close waits for a stuck writer only so long: a process stopping does
// not hang on a stderr nobody reads.
func TestLogBufferCloseBounded(t *testing.T) {
	defer func(d time.Duration) { closeWait = d }(closeWait)
	closeWait = 50 * time.Millisecond
	w := &writesRecorder{gate: make(chan struct{})}
	defer close(w.gate)
	b := NewLogBuffer(w, time.Hour, 100)
	_, _ = b.Write([]byte(line(1)))
	if err := b.Close(); !errors.Is(err, ErrLogNotWritten) {
		t.Fatalf("Close with a stuck writer: %v, want ErrLogNotWritten", err)
	}
}

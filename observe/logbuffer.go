package observe

// LogBuffer gathers whole log lines and writes them to stderr in one Write
// when its buffer is full, its interval has passed since its first line,
// or on Flush and Close. Lines are never torn, reordered or dropped (a
// Write waits for a slow reader: memory is bounded, at most twice the
// size); a crash that runs no deferred code loses at most the last
// interval's lines, and a clean exit writes them first (server.go).

import (
	"errors"
	"io"
	"sync"
	"time"
)

// LogBufferSize is the most bytes a LogBuffer gathers before it writes
// them: PIPE_BUF, so each write to a pipe (a container's stderr) is atomic
// whoever else writes to it.
const LogBufferSize = 4 << 10

// LogBuffer gathers log lines and writes them to w in batches
// (NewLogBuffer). It is safe for concurrent use. Writes append to cur
// under mu; a full cur is handed to the one writer goroutine, which alone
// writes to w while open, in order, and gives the buffer back through
// free.
type LogBuffer struct {
	mu       sync.Mutex
	w        io.Writer
	cur      []byte
	size     int
	interval time.Duration
	timer    *time.Timer
	armed    bool // the timer will hand over what cur holds
	closed   bool
	work     chan []byte // to the writer goroutine: a buffer to write
	free     chan []byte // from it: the buffer written, emptied
	done     chan struct{}
	errMu    sync.Mutex
	err      error // the last failed write's error, for the next Write or Flush
}

// NewLogBuffer returns a writer that gathers the lines written to it and
// writes them to w at most interval after the first of them, or sooner
// when size bytes are gathered. An interval of 0 (or less) writes each
// line at once, as w would. Close it before the process exits.
func NewLogBuffer(w io.Writer, interval time.Duration, size int) *LogBuffer {
	b := &LogBuffer{w: w, size: size, interval: interval}
	if interval <= 0 || size <= 0 {
		b.closed = true // nothing held: every Write goes straight to w
		return b
	}
	b.cur = make([]byte, 0, size)
	b.work, b.free = make(chan []byte, 1), make(chan []byte, 1)
	b.done = make(chan struct{})
	b.free <- make([]byte, 0, size)
	b.timer = time.AfterFunc(time.Hour, b.tick)
	b.timer.Stop()
	go b.writeLoop()
	return b
}

// writeLoop writes each buffer handed over, in order.
func (b *LogBuffer) writeLoop() {
	defer close(b.done)
	for buf := range b.work {
		_, err := b.w.Write(buf)
		if err != nil {
			// Not under mu: a Write may hold it, waiting for free.
			b.errMu.Lock()
			b.err = err
			b.errMu.Unlock()
		}
		b.free <- buf[:0]
	}
}

// Write holds p, a whole line (or writes it, see NewLogBuffer).
func (b *LogBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return b.w.Write(p)
	}
	if len(b.cur)+len(p) > b.size {
		b.handOverLocked()
		if len(p) > b.size {
			// Alone, after every line before it.
			b.waitWrittenLocked()
			return b.w.Write(p)
		}
	}
	b.cur = append(b.cur, p...)
	if !b.armed {
		b.armed = true
		b.timer.Reset(b.interval)
	}
	// An earlier batch's error: its lines were lost.
	return len(p), b.takeErr()
}

// handOverLocked gives cur to the writer goroutine and takes the other
// buffer, waiting while it is still being written.
func (b *LogBuffer) handOverLocked() {
	if len(b.cur) == 0 {
		return
	}
	b.work <- b.cur
	b.cur = <-b.free
}

// waitWrittenLocked waits until the writer goroutine has written every
// buffer handed over (it has given the other one back).
func (b *LogBuffer) waitWrittenLocked() {
	buf := <-b.free
	b.free <- buf
}

// tick is the interval's hand-over.
func (b *LogBuffer) tick() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.armed = false
	if !b.closed {
		b.handOverLocked()
	}
}

// Flush writes what is held now, and returns when it is written.
func (b *LogBuffer) Flush() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil
	}
	b.handOverLocked()
	b.waitWrittenLocked()
	return b.takeErr()
}

// takeErr returns the last failed write's error, once.
func (b *LogBuffer) takeErr() error {
	b.errMu.Lock()
	defer b.errMu.Unlock()
	err := b.err
	b.err = nil
	return err
}

// closeWait bounds how long Close waits for the lines held to be
// written: a process stopping must not hang on a stderr nobody reads.
var closeWait = 5 * time.Second

// ErrLogNotWritten is Close's error when stderr took no line within
// closeWait: the lines held are then lost.
var ErrLogNotWritten = errors.New("observe: the log's last lines were not written within 5s (stderr blocked)")

// Close writes what is held and stops holding: later Writes go straight
// to w, so a line logged while the process ends is not lost. It waits at
// most closeWait for w (ErrLogNotWritten).
func (b *LogBuffer) Close() error {
	finished := make(chan error, 1)
	go func() { finished <- b.close() }()
	t := time.NewTimer(closeWait)
	defer t.Stop()
	select {
	case err := <-finished:
		return err
	case <-t.C:
		return ErrLogNotWritten
	}
}

func (b *LogBuffer) close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil
	}
	b.handOverLocked()
	b.closed = true
	b.timer.Stop()
	b.armed = false
	close(b.work)
	<-b.done
	return b.takeErr()
}

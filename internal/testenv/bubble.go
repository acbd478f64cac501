package testenv

import (
	"bytes"
	"runtime"
	"slices"
)

// BubbleGoroutines counts the goroutines of the caller's synctest bubble
// (0 outside one): the ones a test in the bubble started, whatever other
// tests of the process are doing, which runtime.NumGoroutine counts too.
func BubbleGoroutines() int {
	self := make([]byte, 256)
	self = self[:runtime.Stack(self, false)]
	// The first line: "goroutine 7 [running, synctest bubble 1]:".
	header, _, _ := bytes.Cut(self, []byte("\n"))
	i := bytes.Index(header, []byte("synctest bubble "))
	if i < 0 {
		return 0
	}
	bubble, _, _ := bytes.Cut(header[i:], []byte("]"))
	// Match "bubble 1]" or "bubble 1,", so that bubble 1 is not 12.
	closed, listed := append(slices.Clip(bubble), ']'), append(slices.Clip(bubble), ',')
	all := make([]byte, 1<<20)
	for {
		n := runtime.Stack(all, true)
		if n < len(all) {
			all = all[:n]
			break
		}
		all = make([]byte, 2*len(all))
	}
	count := 0
	for _, line := range bytes.Split(all, []byte("\n")) {
		if bytes.HasPrefix(line, []byte("goroutine ")) && (bytes.Contains(line, closed) || bytes.Contains(line, listed)) {
			count++
		}
	}
	return count
}

// Package growstack grows the calling goroutine's stack at once, while
// the goroutine is still shallow, to what its deepest call will need.
// A goroutine's stack otherwise doubles when that call reaches its end,
// and each doubling copies (and walks) every frame of the call so far;
// once the GC has shrunk an idle goroutine's stack, its next request
// pays that again. Growing it at a shallow point copies a few frames
// instead. What each gains is in docs/performance.md ("Mirror code kept").
package growstack

// Request is called at the entry of an HTTP request's handling: a REST
// call made on the request's own goroutine (the root fast path's) is
// deeper than 16 KB.
//
//go:noinline
func Request() {
	var buf [16 << 10]byte
	sink(buf[:])
}

// Call is called by a goroutine started for REST calls, before the
// first: one REST call needs about 8 KB.
//
//go:noinline
func Call() {
	var buf [8 << 10]byte
	sink(buf[:])
}

//go:noinline
func sink(b []byte) { b[0] = 0 }

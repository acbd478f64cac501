package fasttransport

// The caller's answer: an http.Response over fasthttp's, pooled again on
// Close; one allocation.

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"strconv"
	"sync"

	"github.com/klauspost/compress/gzip"
	"github.com/valyala/fasthttp"
)

// response makes the caller's answer from c's (gz: a gzip body decompressed as
// read); readErr ends the body's bytes (errTooLarge: none of them are handed
// over).
func (t *Transport) response(r *http.Request, c *call, gz bool, readErr error) *http.Response {
	h := &c.resp.Header
	b := &body{c: c}
	code := h.StatusCode()
	res := &b.res
	res.StatusCode = code
	res.Status = statusText(code)
	res.Proto, res.ProtoMajor, res.ProtoMinor = "HTTP/1.1", 1, 1
	if !h.IsHTTP11() {
		res.Proto, res.ProtoMinor = "HTTP/1.0", 0
	}
	res.Request = r
	res.Header = c.header(h)
	res.Body = b
	res.ContentLength = int64(max(h.ContentLength(), -1)) // -2 (to the close): unknown too
	if code/100 == 1 || code == http.StatusNoContent || code == http.StatusNotModified {
		res.ContentLength = 0 // no body, whatever the headers say (as net/http)
	}
	if readErr == errTooLarge { // see Config.MaxResponseBytes
		res.ContentLength = max(res.ContentLength, int64(c.maxBody)+1)
		b.rd.Reset(nil)
		return res
	}
	b.err = readErr
	raw := c.resp.Body()
	b.rd.Reset(raw)
	if gz && len(raw) > 0 && bytes.EqualFold(h.ContentEncoding(), []byte("gzip")) {
		b.gzip = true // as net/http: of unknown length; the caller's limit bounds a gzip bomb
		res.Header.Del("Content-Encoding")
		res.Header.Del("Content-Length")
		res.ContentLength = -1
		res.Uncompressed = true
	}
	return res
}

// header copies h, but Transfer-Encoding and Connection: close as net/http,
// into an http.Header (canonical names, every name and value in one string,
// the values in one slice).
func (c *call) header(h *fasthttp.ResponseHeader) http.Header {
	c.hdr, c.ends = c.hdr[:0], c.ends[:0]
	for k, v := range h.All() {
		switch {
		case string(k) == "Transfer-Encoding":
			continue
		case string(k) == "Connection" && bytes.Contains(bytes.ToLower(v), []byte("close")):
			continue
		}
		c.hdr = append(c.hdr, k...)
		c.ends = append(c.ends, len(c.hdr))
		c.hdr = append(c.hdr, v...)
		c.ends = append(c.ends, len(c.hdr))
	}
	n := len(c.ends) / 2
	out := make(http.Header, n)
	if n == 0 {
		return out
	}
	all := string(c.hdr)
	vals := make([]string, n)
	start := 0
	for i := 0; i < n; i++ {
		k := http.CanonicalHeaderKey(all[start:c.ends[2*i]])
		vals[i] = all[c.ends[2*i]:c.ends[2*i+1]]
		start = c.ends[2*i+1]
		if prev, ok := out[k]; ok {
			out[k] = append(prev, vals[i])
			continue
		}
		out[k] = vals[i : i+1 : i+1]
	}
	return out
}

// statusTexts are net/http's status lines ("200 OK"), made once.
var statusTexts = func() (s [600]string) {
	for code := 100; code < len(s); code++ {
		if t := http.StatusText(code); t != "" {
			s[code] = strconv.Itoa(code) + " " + t
		}
	}
	return s
}()

func statusText(code int) string {
	if code >= 0 && code < len(statusTexts) && statusTexts[code] != "" {
		return statusTexts[code]
	}
	return strconv.Itoa(code)
}

// body is the caller's body and its response in one allocation.
type body struct {
	res  http.Response
	c    *call // nil once closed
	rd   bytes.Reader
	err  error // instead of io.EOF
	gzip bool
	gz   *gzip.Reader // made on the first read, as net/http's
}

var errClosed = errors.New("fasttransport: read on closed response body")

func (b *body) Read(p []byte) (int, error) {
	if b.c == nil {
		return 0, errClosed
	}
	if !b.gzip {
		return b.readRaw(p)
	}
	if b.gz == nil {
		zr := gzipReaders.Get().(*gzip.Reader)
		if err := zr.Reset(rawReader{b}); err != nil {
			gzipReaders.Put(zr)
			return 0, err
		}
		b.gz = zr
	}
	return b.gz.Read(p)
}

func (b *body) readRaw(p []byte) (int, error) {
	n, err := b.rd.Read(p)
	if err == io.EOF && b.err != nil {
		err = b.err
	}
	return n, err
}

type rawReader struct{ b *body }

func (r rawReader) Read(p []byte) (int, error) { return r.b.readRaw(p) }

var gzipReaders = sync.Pool{New: func() any { return new(gzip.Reader) }}

// Close gives fasthttp's response back; the body reads no more after it.
func (b *body) Close() error {
	c := b.c
	if c == nil {
		return nil
	}
	b.c = nil
	b.rd.Reset(nil)
	if b.gz != nil {
		gzipReaders.Put(b.gz)
		b.gz = nil
	}
	c.release()
	return nil
}

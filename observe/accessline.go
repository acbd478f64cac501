package observe

// The access log's "request" line written by hand, byte for byte as NewLogger's JSON logger would
// write it through slog (keys, order, escapes, redaction) without slog's allocations.

import (
	"context"
	"io"
	"log/slog"
	"math"
	"net/netip"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"
)

// lineWriter serialises the writes of a logger's JSON handler and of its access lines: one line a Write.
type lineWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lineWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// accessLine is one "request" line's fields, in the line's order (the last
// four when known).
type accessLine struct {
	level              slog.Level
	time               time.Time
	requestID          string
	method, path       string
	status             int
	durationMS         float64
	operation, outcome string
	restCalls, bytes   int64
	merchant           string     // the merchant's tag, "" for none
	client             netip.Addr // the caller's address, if known
	refusedBy          string     // the budget that refused it, if one did
	traceID            string     // "" when the request is not traced
}

// accessMessage is the line's message.
const accessMessage = "request"

// attrs are the line's attributes for slog, in the line's order.
func (l *accessLine) attrs() []slog.Attr {
	attrs := []slog.Attr{
		slog.String("request_id", l.requestID),
		slog.String("method", l.method),
		slog.String("path", l.path),
		slog.Int("status", l.status),
		slog.Float64("duration_ms", l.durationMS),
		slog.String("operation", l.operation),
		slog.String("outcome", l.outcome),
		slog.Int64("rest_calls", l.restCalls),
		slog.Int64("bytes", l.bytes),
	}
	attrs = tailAttrs(attrs, l.merchant, l.client, l.refusedBy)
	if l.traceID != "" {
		attrs = append(attrs, slog.String("trace_id", l.traceID))
	}
	return attrs
}

// tailAttrs appends the attributes a request's and an operation's line end with, those known.
func tailAttrs(attrs []slog.Attr, merchant string, client netip.Addr, refusedBy string) []slog.Attr {
	if merchant != "" {
		attrs = append(attrs, slog.String("merchant", merchant))
	}
	if client.IsValid() {
		attrs = append(attrs, slog.String("client", client.String()))
	}
	if refusedBy != "" {
		attrs = append(attrs, slog.String("refused_by", refusedBy))
	}
	return attrs
}

// log writes l through logger, enabled at l.level: by hand when it is NewLogger's JSON logger, else through slog.
func (l *accessLine) log(ctx context.Context, logger *slog.Logger) {
	if rh, ok := logger.Handler().(*redactingHandler); ok && rh.lines != nil && l.plain() {
		rh.writeAccessLine(ctx, l)
		return
	}
	logger.LogAttrs(ctx, l.level, accessMessage, l.attrs()...)
}

// plain reports whether l has nothing slog writes as an error (a year outside
// [0, 9999], NaN, ±Inf).
func (l *accessLine) plain() bool {
	return secondOf(l.time).plain && !math.IsNaN(l.durationMS) && !math.IsInf(l.durationMS, 0)
}

// lineSecond is one second of one location in RFC3339Nano, formatted once: the
// text around the fraction.
type lineSecond struct {
	sec   int64          // t.Unix()
	loc   *time.Location // t.Location()
	head  []byte         // "2006-01-02T15:04:05"
	zone  []byte         // "Z07:00"
	plain bool           // the year is in [0, 9999] (slog writes an error else)
}

// lastSecond is the last line's second (lines come nearly in time order).
var lastSecond atomic.Pointer[lineSecond]

// secondOf is t's second, from lastSecond when it is t's.
func secondOf(t time.Time) *lineSecond {
	sec, loc := t.Unix(), t.Location()
	if s := lastSecond.Load(); s != nil && s.sec == sec && s.loc == loc {
		return s
	}
	y := t.Year()
	s := &lineSecond{sec: sec, loc: loc, plain: y >= 0 && y < 10000,
		head: t.AppendFormat(nil, "2006-01-02T15:04:05"), zone: t.AppendFormat(nil, "Z07:00")}
	lastSecond.Store(s)
	return s
}

// appendLineTime is t.AppendFormat(b, time.RFC3339Nano), as slog writes it,
// through its lineSecond.
func appendLineTime(b []byte, t time.Time) []byte {
	s := secondOf(t)
	b = append(b, s.head...)
	if ns := t.Nanosecond(); ns != 0 {
		var f [10]byte
		f[0] = '.'
		for i := 9; i >= 1; i-- {
			f[i] = byte('0' + ns%10)
			ns /= 10
		}
		n := len(f)
		for f[n-1] == '0' {
			n--
		}
		b = append(b, f[:n]...)
	}
	return append(b, s.zone...)
}

// linePool holds the lines' buffers; one past maxPooledLine is dropped.
var linePool = sync.Pool{New: func() any { b := make([]byte, 0, 512); return &b }}

const maxPooledLine = 16 << 10

// writeAccessLine writes l as the JSON handler beneath r would after r's redaction: the message
// and every string through the request's redactor (no key is a credential's name; numbers pass).
func (r *redactingHandler) writeAccessLine(ctx context.Context, l *accessLine) {
	rd := redactor{o: r.o, known: r.o.secrets(ctx)}
	bp := linePool.Get().(*[]byte)
	b := append((*bp)[:0], `{"time":"`...)
	b = appendLineTime(b, l.time)
	b = append(b, `","level":`...)
	b = appendJSONString(b, l.level.String())
	str := func(key, v string) { // key is `,"name":`; v is redacted
		b = append(b, key...)
		b = appendJSONString(b, rd.str(v))
	}
	num := func(key string, v int64) {
		b = append(b, key...)
		b = strconv.AppendInt(b, v, 10)
	}
	str(`,"msg":`, accessMessage)
	str(`,"request_id":`, l.requestID)
	str(`,"method":`, l.method)
	str(`,"path":`, l.path)
	num(`,"status":`, int64(l.status))
	b = append(b, `,"duration_ms":`...)
	b = appendJSONFloat(b, l.durationMS)
	str(`,"operation":`, l.operation)
	str(`,"outcome":`, l.outcome)
	num(`,"rest_calls":`, l.restCalls)
	num(`,"bytes":`, l.bytes)
	if l.merchant != "" {
		str(`,"merchant":`, l.merchant)
	}
	if l.client.IsValid() {
		if l.client.Zone() == "" {
			// Without a zone it needs no escaping and redacts to itself.
			b = append(b, `,"client":"`...)
			b = l.client.AppendTo(b)
			b = append(b, '"')
		} else { // a zone is any text (from X-Forwarded-For, say)
			str(`,"client":`, l.client.String())
		}
	}
	if l.refusedBy != "" {
		str(`,"refused_by":`, l.refusedBy)
	}
	if l.traceID != "" {
		str(`,"trace_id":`, l.traceID)
	}
	b = append(b, "}\n"...)
	_, _ = r.lines.Write(b) // as slog.Logger does, a failed write is not the request's
	if cap(b) <= maxPooledLine {
		*bp = b
		linePool.Put(bp)
	}
}

// appendJSONString is slog's JSON string: s quoted, '"', '\\', \n, \r and \t escaped, other
// control bytes as \u00XX, invalid UTF-8 bytes as \ufffd, and U+2028 and U+2029 escaped.
func appendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= ' ' && c != '"' && c != '\\' { // slog's safeSet
				i++
				continue
			}
			b = append(b, s[start:i]...)
			b = append(b, '\\')
			switch c {
			case '\\', '"':
				b = append(b, c)
			case '\n':
				b = append(b, 'n')
			case '\r':
				b = append(b, 'r')
			case '\t':
				b = append(b, 't')
			default:
				b = append(b, 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		c, size := utf8.DecodeRuneInString(s[i:])
		if c == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if c == '\u2028' || c == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, `\u202`...)
			b = append(b, hexDigits[c&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

const hexDigits = "0123456789abcdef"

// appendMilli is appendJSONFloat of float64(k)/1000 for 0 <= k < 1e15: k/1000 without trailing
// zeros is then the shortest decimal that reads back as that float.
func appendMilli(b []byte, k int64) []byte {
	b = strconv.AppendInt(b, k/1000, 10)
	if frac := k % 1000; frac != 0 {
		d := [4]byte{'.', byte('0' + frac/100), byte('0' + frac/10%10), byte('0' + frac%10)}
		n := len(d)
		for d[n-1] == '0' {
			n--
		}
		b = append(b, d[:n]...)
	}
	return b
}

// appendJSONFloat is encoding/json's finite float64: 'f', 'e' below 1e-6 or
// from 1e21, "e-09" as "e-9".
func appendJSONFloat(b []byte, f float64) []byte {
	if k := f * 1000; !math.Signbit(f) && k == math.Trunc(k) && k < 1e15 && float64(int64(k))/1000 == f {
		return appendMilli(b, int64(k))
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}

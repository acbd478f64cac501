package observe

import (
	"context"
	"encoding"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	mrand "math/rand/v2"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"time"

	"go.opentelemetry.io/otel/trace"

	"paygraph/internal/opscope"
	"paygraph/internal/unsafeconv"
)

// NewLogger returns a logger writing JSON lines (format "json" or "") or text
// ("text") of level and above to w, behind a redactingHandler told o. A JSON
// logger writes one whole line a Write.
func NewLogger(w io.Writer, format string, level slog.Level, o Options) *slog.Logger {
	opts := &slog.HandlerOptions{Level: level}
	if strings.EqualFold(format, "text") {
		return slog.New(&redactingHandler{h: slog.NewTextHandler(w, opts), o: o})
	}
	lw := &lineWriter{w: w}
	return slog.New(&redactingHandler{h: slog.NewJSONHandler(lw, opts), o: o, lines: lw})
}

// Redacted stands for a value that was taken out.
const Redacted = "[redacted]"

// keyKind tells whether a key names a credential: 0 no, 1 an API key (its prefix stays), 2 a secret.
func keyKind(key string) int {
	k := normKey(key)
	switch {
	case k == "x_api_key" || k == "api_key" || k == "apikey":
		return 1
	case strings.Contains(k, "secret"), strings.Contains(k, "password"), strings.Contains(k, "passwd"),
		k == "authorization", k == "proxy_authorization", k == "cookie", k == "set_cookie",
		k == "token", strings.HasSuffix(k, "_token"), k == "credentials":
		return 2
	}
	return 0
}

// keyNormalizer maps '-', '.' and ' ' onto '_'.
var keyNormalizer = strings.NewReplacer("-", "_", ".", "_", " ", "_")

// normKey is an attribute key lower-cased with '-', '.' and ' ' as '_' (without a copy when it is already).
func normKey(key string) string {
	for i := 0; i < len(key); i++ {
		if c := key[i]; 'A' <= c && c <= 'Z' || c == '-' || c == '.' || c == ' ' || c >= 0x80 {
			return keyNormalizer.Replace(strings.ToLower(key))
		}
	}
	return key
}

// redactingHandler wraps h so that no record it passes on holds a credential:
// o.Redact rewrites credential-shaped runs of the message and every attribute
// (strings, errors, formatted values, groups), attributes named like a
// credential (x-api-secret, authorization, …) are replaced (an API key's by
// o.RedactKey), and o.Secrets' values for the record's context are taken out
// anywhere. Attributes added with With are redacted by shape and name only.
type redactingHandler struct {
	h slog.Handler
	o Options
	// lines is what h writes to when it is NewLogger's JSON handler, for the hand-written access line; else nil.
	lines *lineWriter
}

func (r *redactingHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return r.h.Enabled(ctx, l)
}

func (r *redactingHandler) Handle(ctx context.Context, rec slog.Record) error {
	rd := redactor{o: r.o, known: r.o.secrets(ctx)}
	out := slog.NewRecord(rec.Time, rec.Level, rd.str(rec.Message), rec.PC)
	rec.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(rd.attr(a))
		return true
	})
	return r.h.Handle(ctx, out)
}

func (r *redactingHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &redactingHandler{h: r.h.WithAttrs(redactor{o: r.o}.attrs(attrs)), o: r.o}
}

func (r *redactingHandler) WithGroup(name string) slog.Handler {
	return &redactingHandler{h: r.h.WithGroup(name), o: r.o}
}

type redactor struct {
	o     Options
	known []string // the request's own credentials (Options.Secrets)
}

func (rd redactor) str(s string) string {
	for _, k := range rd.known {
		// A "secret" shorter than 4 bytes would blank out ordinary text.
		if len(k) >= 4 && strings.Contains(s, k) {
			s = strings.ReplaceAll(s, k, Redacted)
		}
	}
	return rd.o.redact(s)
}

func (rd redactor) attr(a slog.Attr) slog.Attr {
	a.Value = a.Value.Resolve()
	switch keyKind(a.Key) {
	case 1:
		if a.Value.Kind() == slog.KindString && rd.o.RedactKey != nil {
			return slog.String(a.Key, rd.o.RedactKey(a.Value.String()))
		}
		return slog.String(a.Key, Redacted)
	case 2:
		if a.Value.Kind() == slog.KindString && a.Value.String() == "" {
			return a // an empty value says "absent", which is fine to tell
		}
		return slog.String(a.Key, Redacted)
	}
	switch a.Value.Kind() {
	case slog.KindString:
		s := a.Value.String()
		if r := rd.str(s); r != s {
			return slog.String(a.Key, r)
		}
	case slog.KindGroup:
		return slog.Attr{Key: a.Key, Value: slog.GroupValue(rd.attrs(a.Value.Group())...)}
	case slog.KindAny:
		if s, changed := rd.anyValue(a.Value.Any()); changed {
			return slog.String(a.Key, s)
		}
	}
	return a
}

func (rd redactor) attrs(as []slog.Attr) []slog.Attr {
	red := make([]slog.Attr, len(as))
	for i, a := range as {
		red[i] = rd.attr(a)
	}
	return red
}

// anyValue checks every form a handler could print v in (error text, %+v, JSON, text, bytes);
// when one holds a secret, it returns a redacted text to log instead.
func (rd redactor) anyValue(v any) (string, bool) {
	var forms []string
	switch x := v.(type) {
	case nil:
		return "", false
	case []byte:
		forms = append(forms, string(x))
	case error:
		forms = append(forms, x.Error())
	}
	if tm, ok := v.(encoding.TextMarshaler); ok {
		if b, err := safeCall(tm.MarshalText); err == nil {
			forms = append(forms, string(b))
		}
	}
	forms = append(forms, fmt.Sprintf("%+v", v))
	if b, err := safeCall(func() ([]byte, error) { return json.Marshal(v) }); err == nil {
		forms = append(forms, string(b))
	}
	for _, f := range forms {
		if rd.str(f) != f {
			return rd.str(forms[0]), true
		}
	}
	return "", false
}

// safeCall runs a marshaller, turning a panic into an error.
func safeCall(f func() ([]byte, error)) (b []byte, err error) {
	defer func() {
		if p := recover(); p != nil {
			b, err = nil, fmt.Errorf("panic: %v", p)
		}
	}()
	return f()
}

// holdsSecret: v contains one of secrets or is a piece of one of 4 bytes or
// more (it names nothing).
func holdsSecret(v string, secrets []string) bool {
	for _, s := range secrets {
		if s != "" && (strings.Contains(v, s) || len(v) >= 4 && strings.Contains(s, v)) {
			return true
		}
	}
	return false
}

type requestIDKey struct{}

// RequestID is the request's id, as AccessLog set it; "" outside a request.
func RequestID(ctx context.Context) string {
	switch id := ctx.Value(requestIDKey{}).(type) {
	case *string: // AccessLog's, in its record: no string boxed per request
		return *id
	case string:
		return id
	}
	return ""
}

// SaneRequestID: a caller's X-Request-Id of 1 to 64 [A-Za-z0-9._-], which
// corrupts no log line or header.
func SaneRequestID(id string) bool {
	return bytesOK(id, 64, func(_ int, c byte) bool {
		return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-'
	})
}

// putRequestID writes a random id of 16 hex digits into b (math/rand: an id
// guards nothing).
func putRequestID(b *[16]byte) {
	v := mrand.Uint64()
	for i := 15; i >= 0; i-- {
		b[i] = hexDigits[v&0xF]
		v >>= 4
	}
}

// maxLoggedPath bounds the path printed in an access line.
const maxLoggedPath = 256

// AccessLog gives every request an id (a sane X-Request-Id holding no piece of
// o.Secrets, else a new one) in the response's X-Request-Id and the context,
// with a RequestStats, and logs one "request" line (accessLine's fields) at
// info, debug for o.DebugPaths, in the request's context (so NewLogger's
// logger takes the caller's credentials out), never headers, bodies or the
// query string.
func AccessLog(logger *slog.Logger, o Options) func(http.Handler) http.Handler {
	debugPaths := slices.Clone(o.DebugPaths)
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			start := time.Now()
			level := slog.LevelInfo
			if slices.Contains(debugPaths, r.URL.Path) {
				level = slog.LevelDebug
			}
			// The recorder, stats, header value and id bytes: one allocation.
			acc := &accessRecord{statusRecorder: statusRecorder{ResponseWriter: w}}
			var id string
			if v := r.Header["X-Request-Id"]; len(v) > 0 { // Header.Get without canonicalising a canonical key
				id = v[0]
			}
			if !SaneRequestID(id) || holdsSecret(id, o.secrets(r.Context())) {
				// acc's bytes, written once: no string allocated.
				putRequestID(&acc.newID)
				id = unsafeconv.String(acc.newID[:])
			}
			acc.requestID[0] = id
			w.Header()["X-Request-Id"] = acc.requestID[:]
			rec, stats := &acc.statusRecorder, &acc.stats
			if o.ClientAddr != nil {
				stats.client = o.ClientAddr(r)
			}
			ctx := opscope.WithValue(opscope.WithValue(r.Context(), requestIDKey{}, &acc.requestID[0]), statsKey{}, stats)
			defer func() {
				// Logged even when next panics (net/http recovers it).
				status := rec.status
				if p := recover(); p != nil {
					if status == 0 {
						status = http.StatusInternalServerError
					}
					defer panic(p)
				}
				if status == 0 {
					status = http.StatusOK
				}
				if !logger.Enabled(ctx, level) {
					return
				}
				path := r.URL.Path
				if len(path) > maxLoggedPath {
					path = path[:maxLoggedPath] + "…"
				}
				l := accessLine{level: level, time: time.Now(), requestID: id, method: r.Method, path: path, status: status,
					restCalls: stats.RESTCalls(), bytes: rec.bytes, client: stats.client, refusedBy: stats.RefusedBy()}
				if o.MerchantTag != nil {
					l.merchant = o.MerchantTag(ctx)
				}
				l.durationMS = float64(l.time.Sub(start).Microseconds()) / 1000
				l.operation, l.outcome = stats.Operation()
				if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
					// Under TraceHandler: the line names its trace.
					l.traceID = sc.TraceID().String()
				}
				l.log(ctx, logger)
			}()
			next.ServeHTTP(rec, opscope.Request(r, ctx))
		})
	}
}

// accessRecord is what AccessLog keeps of one request.
type accessRecord struct {
	statusRecorder
	stats     RequestStats
	requestID [1]string // the X-Request-Id header's values
	newID     [16]byte  // a new id's characters, when the caller sent none that can be kept
}

// statusRecorder remembers the status and size of a response.
type statusRecorder struct {
	http.ResponseWriter
	status int
	bytes  int64
}

func (s *statusRecorder) WriteHeader(code int) {
	if s.status == 0 && code >= 200 {
		s.status = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusRecorder) Write(b []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	n, err := s.ResponseWriter.Write(b)
	s.bytes += int64(n)
	return n, err
}

// Flush passes a flush on when the underlying writer can.
func (s *statusRecorder) Flush() {
	if f, ok := s.ResponseWriter.(http.Flusher); ok {
		if s.status == 0 {
			s.status = http.StatusOK
		}
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (s *statusRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// OperationLog is the access log of the operations sharing one HTTP request (a
// WebSocket's): it gives an operation's context a request id and RequestStats
// of its own, and the func it returns logs its "operation" line (connection_id
// is the upgrade's request_id) in that context when it ends.
func OperationLog(logger *slog.Logger, o Options) func(ctx context.Context, transport string) (context.Context, func()) {
	return func(ctx context.Context, transport string) (context.Context, func()) {
		start := time.Now()
		conn := RequestID(ctx)
		var client netip.Addr
		if s := StatsFrom(ctx); s != nil {
			client = s.client // the upgrade request's
		}
		var idb [16]byte
		putRequestID(&idb)
		id := string(idb[:])
		ctx, stats := WithRequestStats(opscope.WithValue(ctx, requestIDKey{}, id))
		stats.client = client
		return ctx, func() {
			op, outcome := stats.Operation()
			attrs := []slog.Attr{slog.String("request_id", id), slog.String("connection_id", conn),
				slog.String("transport", transport),
				slog.Float64("duration_ms", float64(time.Since(start).Microseconds())/1000),
				slog.String("operation", op), slog.String("outcome", outcome), slog.Int64("rest_calls", stats.RESTCalls())}
			var merchant string
			if o.MerchantTag != nil {
				merchant = o.MerchantTag(ctx)
			}
			attrs = tailAttrs(attrs, merchant, client, stats.RefusedBy())
			logger.LogAttrs(ctx, slog.LevelInfo, "operation", attrs...)
		}
	}
}

package observe

// The hand-written access line (accessline.go): every line, hostile
// values included, decodes as JSON to exactly its fields' values, redacted
// as RedactingHandler redacts them; and the middleware's line holds the
// same values whether it is written by hand or through slog.

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"math"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// handLine is l as writeAccessLine writes it behind NewLogger's JSON
// logger, with o and the request's secrets.
func handLine(t testing.TB, l accessLine, o Options, ctx context.Context) string {
	t.Helper()
	var b bytes.Buffer
	rh, ok := NewLogger(&b, "json", slog.LevelDebug, o).Handler().(*redactingHandler)
	if !ok || rh.lines == nil {
		t.Fatal("NewLogger's JSON handler has no line writer")
	}
	rh.writeAccessLine(ctx, &l)
	return b.String()
}

// decodeLine decodes line, one JSON object in UTF-8 and a newline, into
// its members (numbers as json.Number), each key once.
func decodeLine(t testing.TB, line string) map[string]any {
	t.Helper()
	body, ok := strings.CutSuffix(line, "\n")
	if !ok || strings.Contains(body, "\n") {
		t.Fatalf("not one line: %q", line)
	}
	if !utf8.Valid([]byte(line)) {
		t.Fatalf("not UTF-8: %q", line)
	}
	dec := json.NewDecoder(strings.NewReader(body))
	dec.UseNumber()
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		t.Fatalf("not a JSON object (%v): %q", err, line)
	}
	m := map[string]any{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			t.Fatalf("bad JSON (%v): %q", err, line)
		}
		key := tok.(string)
		if _, dup := m[key]; dup {
			t.Fatalf("key %q twice: %q", key, line)
		}
		var v any
		if err := dec.Decode(&v); err != nil {
			t.Fatalf("bad JSON (%v): %q", err, line)
		}
		m[key] = v
	}
	if tok, err := dec.Token(); err != nil || tok != json.Delim('}') || dec.More() {
		t.Fatalf("not one JSON object (%v): %q", err, line)
	}
	if _, err := dec.Token(); err != io.EOF {
		t.Fatalf("bytes after the object: %q", line)
	}
	return m
}

// wantLine is what l's line must decode to: each string redacted (as
// RedactingHandler does, told ctx's secrets) and read back from JSON (an
// invalid UTF-8 byte is U+FFFD), the time in RFC 3339 with nanoseconds,
// the duration the same float.
func wantLine(l accessLine, o Options, ctx context.Context) map[string]any {
	rd := redactor{o: o, known: o.secrets(ctx)}
	str := func(s string) string { return string([]rune(rd.str(s))) }
	num := func(n int64) json.Number { return json.Number(strconv.FormatInt(n, 10)) }
	m := map[string]any{
		"time": l.time.Format(time.RFC3339Nano), "level": l.level.String(), "msg": accessMessage,
		"request_id": str(l.requestID), "method": str(l.method), "path": str(l.path),
		"status": num(int64(l.status)), "duration_ms": l.durationMS,
		"operation": str(l.operation), "outcome": str(l.outcome),
		"rest_calls": num(l.restCalls), "bytes": num(l.bytes),
	}
	if l.merchant != "" {
		m["merchant"] = str(l.merchant)
	}
	if l.client.IsValid() {
		m["client"] = str(l.client.String())
	}
	if l.refusedBy != "" {
		m["refused_by"] = str(l.refusedBy)
	}
	if l.traceID != "" {
		m["trace_id"] = str(l.traceID)
	}
	return m
}

// checkLine: l's hand-written line decodes to exactly wantLine's values.
func checkLine(t testing.TB, l accessLine, o Options, ctx context.Context) string {
	t.Helper()
	line := handLine(t, l, o, ctx)
	got := decodeLine(t, line)
	if d, ok := got["duration_ms"].(json.Number); ok {
		f, err := strconv.ParseFloat(string(d), 64)
		if err != nil {
			t.Fatalf("duration_ms %q: %v", d, err)
		}
		got["duration_ms"] = f
	}
	if want := wantLine(l, o, ctx); !reflect.DeepEqual(got, want) {
		t.Errorf("line %q\ndecodes to %v\nwant       %v", line, got, want)
	}
	return line
}

func TestAccessLineDecodes(t *testing.T) {
	t.Parallel()
	const known = "Zq-any-shape-Secret-91" // the caller's own, of no known shape
	o := wired(func(context.Context) []string { return []string{known, "", "ab", testKey} })
	base := accessLine{
		level: slog.LevelInfo, time: time.Date(2026, 11, 26, 3, 4, 5, 123456789, time.UTC),
		requestID: "0123456789abcdef", method: "POST", path: "/graphql", status: 200,
		durationMS: 1.234, operation: "GetPayment", outcome: "ok", restCalls: 1, bytes: 345,
	}
	var ascii []byte // every byte below 0x80, and the rest
	for c := range 256 {
		ascii = append(ascii, byte(c))
	}
	long := strings.Repeat("a\"b\\c\x01é\u2028", 2000) // past the pooled buffer's bound
	ist := time.FixedZone("IST", 5*3600+1800)
	for _, tc := range []struct {
		name string
		edit func(*accessLine)
	}{
		{"plain", func(*accessLine) {}},
		{"debug", func(l *accessLine) { l.level = slog.LevelDebug }},
		{"traced", func(l *accessLine) { l.traceID = "4bf92f3577b34da6a3ce929d0e0e4736" }},
		{"merchant, client and refusal", func(l *accessLine) {
			l.merchant, l.client, l.refusedBy = "m_3f2a", netip.MustParseAddr("203.0.113.7"), "merchant_requests"
		}},
		{"an IPv6 client", func(l *accessLine) { l.client = netip.MustParseAddr("2001:db8::1") }},
		{"a client with a hostile zone", func(l *accessLine) {
			l.client = netip.MustParseAddr("fe80::1%a\"b\n\\c\x01\xff" + testSecret)
		}},
		{"hostile merchant and refusal", func(l *accessLine) { l.merchant, l.refusedBy = "m\"\n\xff\u2028", known }},
		{"empty strings", func(l *accessLine) { l.requestID, l.method, l.path, l.operation, l.outcome = "", "", "", "", "" }},
		{"quotes and backslashes", func(l *accessLine) { l.path = `/a"b\c"` + `\"` }},
		{"every byte", func(l *accessLine) { l.path = string(ascii) }},
		{"spaces", func(l *accessLine) { l.operation = " a b " }},
		{"control characters", func(l *accessLine) { l.path = "/\x00\x01\x08\t\n\v\f\r\x1b\x1f\x7f/" }},
		{"invalid UTF-8", func(l *accessLine) { l.path = "/\xff\xfe/\xc3/\xe2\x82/ok\xed\xa0\x80" }},
		{"line and paragraph separators", func(l *accessLine) { l.method = "A\u2028B\u2029C\u2027" }},
		{"HTML and non-ASCII", func(l *accessLine) { l.path = "/<script>&amp;</script>/café/日本/😀" }},
		{"a path cut mid-rune", func(l *accessLine) { l.path = strings.Repeat("é", 128)[:maxLoggedPath-1] + "…" }},
		{"very long values", func(l *accessLine) { l.path, l.operation = long, long }},
		{"a secret by shape", func(l *accessLine) { l.requestID = testSecret; l.path = "/x/" + testSecret }},
		{"the caller's own secret", func(l *accessLine) { l.path = "/p/" + known + "/q"; l.operation = known }},
		{"the caller's key", func(l *accessLine) { l.outcome = testKey }},
		{"a session token", func(l *accessLine) { l.method = "pgt_1.abcdefghijklmnop.qrstuvwx" }},
		{"zero duration", func(l *accessLine) { l.durationMS = 0 }},
		{"whole milliseconds", func(l *accessLine) { l.durationMS = 30000 }},
		{"a microsecond", func(l *accessLine) { l.durationMS = 0.001 }},
		{"below 1e-6", func(l *accessLine) { l.durationMS = 1e-7 }},
		{"1e21 and over", func(l *accessLine) { l.durationMS = 1.5e21 }},
		{"negative", func(l *accessLine) { l.durationMS = -2.5e-8 }},
		{"big integers", func(l *accessLine) { l.status, l.restCalls, l.bytes = -1, math.MaxInt64, math.MinInt64 }},
		{"whole second", func(l *accessLine) { l.time = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC) }},
		{"trailing zeros in nanoseconds", func(l *accessLine) { l.time = time.Date(2026, 1, 2, 3, 4, 5, 120000000, time.UTC) }},
		{"a zone with an offset", func(l *accessLine) { l.time = l.time.In(ist) }},
		{"local time with a monotonic reading", func(l *accessLine) { l.time = time.Now() }},
		{"year 0", func(l *accessLine) { l.time = time.Date(0, 1, 1, 0, 0, 0, 1, time.UTC) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			l := base
			tc.edit(&l)
			if !l.plain() {
				t.Fatal("not a line the hand-written path takes")
			}
			line := checkLine(t, l, o, context.Background())
			if strings.Contains(line, known) || strings.Contains(line, testSecret) || strings.Contains(line, testKey[8:]) {
				t.Errorf("a secret reached the line: %s", line)
			}
		})
	}
}

// TestAccessLinePlain: what the hand-written path leaves to slog (slog
// writes an error into the line for them).
func TestAccessLinePlain(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*accessLine)
	}{
		{"NaN", func(l *accessLine) { l.durationMS = math.NaN() }},
		{"+Inf", func(l *accessLine) { l.durationMS = math.Inf(1) }},
		{"year 10000", func(l *accessLine) { l.time = time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC) }},
		{"year -1", func(l *accessLine) { l.time = time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := accessLine{time: time.Now()}
			tc.edit(&l)
			if l.plain() {
				t.Error("taken by the hand-written path")
			}
		})
	}
}

func FuzzAccessLine(f *testing.F) {
	f.Add("0123456789abcdef", "POST", "/graphql", "GetPayment", "ok", "m_1", "203.0.113.7", 1.234, int64(1))
	f.Add("\"\\\x00\u2028", "\xff", "/\xe2\x82", "<&>", "\x7f\t", "\n", "fe80::1%\"\xff", 1e-7, int64(-5))
	f.Add(testSecret, "GET", "/"+testKey, "pgt_1.aaaaaaaaaaaaaaaa.bbbbbbbb", "", testSecret, "::1", 1.5e21, int64(0))
	o := wired(func(context.Context) []string { return []string{"Zq-any-shape-Secret-91"} })
	f.Fuzz(func(t *testing.T, id, method, path, op, outcome, merchant, client string, d float64, n int64) {
		addr, _ := netip.ParseAddr(client)
		l := accessLine{level: slog.LevelInfo, time: time.Unix(0, n).UTC(), requestID: id, method: method,
			path: path, status: int(n), durationMS: d, operation: op, outcome: outcome, restCalls: n, bytes: -n,
			merchant: merchant, client: addr, refusedBy: outcome}
		if !l.plain() {
			return
		}
		checkLine(t, l, o, context.Background())
	})
}

// TestAccessLineKeys: no key of the line is one whose value the redacting
// handler replaces whatever it is, which the hand-written path relies on
// (it redacts the values by their text only, as slog's path does for
// these keys).
func TestAccessLineKeys(t *testing.T) {
	t.Parallel()
	l := accessLine{traceID: "x"}
	for _, a := range l.attrs() {
		if k := keyKind(a.Key); k != 0 {
			t.Errorf("key %q is redacted by name (%d): writeAccessLine must redact it so", a.Key, k)
		}
	}
}

// TestAccessLogSameEitherPath: AccessLog's line through NewLogger (the
// hand-written path) and through a logger NewLogger did not make (slog's
// path) decode to the same values but for the time and the duration.
func TestAccessLogSameEitherPath(t *testing.T) {
	t.Parallel()
	o := wired(func(context.Context) []string { return []string{testSecret} })
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		st := StatsFrom(r.Context())
		st.AddRESTCall()
		st.SetOperation("GetPayment", "NOT_FOUND")
		w.WriteHeader(http.StatusTeapot)
		_, _ = io.WriteString(w, "hello")
	})
	for _, tc := range []struct{ name, path, id string }{
		{"plain", "/graphql", "req-1"},
		{"hostile path", "/a\"b\\\x01\xff\u2028/" + testSecret + "/" + strings.Repeat("z", 300), ""},
		{"a secret as id", "/graphql", testSecret},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var lines [2]map[string]any
			for i, newLogger := range []func(io.Writer) *slog.Logger{
				func(w io.Writer) *slog.Logger { return NewLogger(w, "json", slog.LevelInfo, o) },
				func(w io.Writer) *slog.Logger {
					return slog.New(RedactingHandler(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: slog.LevelInfo}), o))
				},
			} {
				var buf bytes.Buffer
				req := httptest.NewRequest(http.MethodPut, "/", nil)
				req.URL.Path = tc.path
				req.Header.Set("X-Request-Id", tc.id)
				w := httptest.NewRecorder()
				AccessLog(newLogger(&buf), o)(handler).ServeHTTP(w, req)
				line := buf.String()
				if strings.Contains(line, testSecret) {
					t.Errorf("a secret reached the line: %q", line)
				}
				m := decodeLine(t, line)
				if tc.id == "req-1" && m["request_id"] != "req-1" {
					t.Errorf("the caller's id is not in the line: %s", line)
				}
				if id := w.Header().Get("X-Request-Id"); m["request_id"] != id {
					t.Errorf("request_id %v, the header's %q", m["request_id"], id)
				}
				for _, k := range []string{"time", "duration_ms", "request_id"} { // the id is new each time
					if _, ok := m[k]; !ok {
						t.Errorf("no %s in %s", k, line)
					}
					delete(m, k)
				}
				lines[i] = m
			}
			if !reflect.DeepEqual(lines[0], lines[1]) {
				t.Errorf("lines differ:\nhand: %v\nslog: %v", lines[0], lines[1])
			}
		})
	}
}

// TestAppendLineTime: the line's time, from its second's cached head and
// zone, is time.RFC3339Nano's, for whole and fractional seconds, every
// zone shape, years at both ends and before 1970, seconds in turn and
// out of order, and two locations alternating (each a miss).
func TestAppendLineTime(t *testing.T) {
	zones := []*time.Location{time.UTC, time.Local, time.FixedZone("IST", 5*3600+1800),
		time.FixedZone("west", -(3*3600 + 30*60)), time.FixedZone("odd", 3600+61), time.FixedZone("zero", 0)}
	if ny, err := time.LoadLocation("America/New_York"); err == nil {
		zones = append(zones, ny)
	}
	base := []time.Time{
		time.Date(2026, 11, 26, 3, 4, 5, 123456789, time.UTC),
		time.Date(2026, 3, 8, 6, 59, 59, 999999999, time.UTC), // New York's clocks go forward at 07:00 UTC
		time.Date(2026, 3, 8, 7, 0, 0, 0, time.UTC),
		time.Date(0, 1, 1, 0, 0, 0, 1, time.UTC),
		time.Date(9999, 12, 31, 23, 59, 59, 100, time.UTC),
		time.Date(1969, 12, 31, 23, 59, 59, 500000000, time.UTC),
		time.Now(),
	}
	for _, nanos := range []int{0, 1, 10, 120000000, 100000000, 999999999, 5000} {
		base = append(base, time.Date(2026, 1, 2, 3, 4, 5, nanos, time.UTC))
	}
	var got []byte
	check := func(tm time.Time) {
		t.Helper()
		got = appendLineTime(got[:0], tm)
		if want := tm.Round(0).AppendFormat(nil, time.RFC3339Nano); string(got) != string(want) {
			t.Errorf("%v: %q, want %q", tm, got, want)
		}
		if y := tm.Year(); secondOf(tm).plain != (y >= 0 && y < 10000) {
			t.Errorf("%v: plain %v", tm, secondOf(tm).plain)
		}
	}
	for _, b := range base {
		for _, z := range zones {
			for _, step := range []time.Duration{0, time.Nanosecond, 999 * time.Millisecond, time.Second, -time.Second, 7 * time.Microsecond} {
				check(b.In(z).Add(step))
			}
			check(b.In(z))
			check(b.In(time.UTC)) // another location, same second
			check(b.In(z))
		}
	}
}

// TestAppendMilliAsEncodingJSON: the line's float, by its fast path for
// whole microseconds in milliseconds (appendMilli) or strconv's, is
// encoding/json's for every duration up to an hour in microseconds,
// random ones up to the fast path's bound, and floats of other shapes.
func TestAppendMilliAsEncodingJSON(t *testing.T) {
	t.Parallel()
	var got []byte
	check := func(f float64) {
		got = appendJSONFloat(got[:0], f)
		want, err := json.Marshal(f)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want) {
			t.Fatalf("%v (%b): %s, want %s", f, math.Float64bits(f), got, want)
		}
	}
	for k := range int64(3_600_000_000 / 9973) { // an hour in microseconds, every 9973rd, and the first second
		check(float64(k*9973) / 1000)
	}
	for k := range int64(1_000_000) {
		check(float64(k) / 1000)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 50_000 {
		k := rng.Int64N(1e15)
		check(float64(k) / 1000)
		check(float64(k>>rng.IntN(50)) / 1000)
		check(math.Float64frombits(rng.Uint64()&^(0x7ff<<52) | uint64(rng.IntN(0x7fe)+1)<<52)) // any finite
	}
	for _, f := range []float64{0, math.Copysign(0, -1), -1.5, -0.001, 1e-7, 1.5e21, 1e15 / 1000, 999_999_999_999.999,
		1_000_000_000_000.001, math.MaxFloat64, math.SmallestNonzeroFloat64, 0.1 + 0.2, 1.0000000000000002} {
		check(f)
	}
}

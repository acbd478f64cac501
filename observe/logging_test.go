package observe

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"testing"
)

type creds struct {
	Key    string
	Secret string
}

type wrapper struct{ Inner *creds } // %v shows a pointer, JSON the secret

type stringer struct{}

func (stringer) String() string { return "token " + testSecret }

// logTime matches the time attribute that starts each JSON or text line.
var logTime = regexp.MustCompile(`(?m)^(\{"time":"[^"]*",|time=\S+ )`)

func TestLoggerRedacts(t *testing.T) {
	t.Parallel()
	for _, format := range []string{"json", "text"} {
		t.Run(format, func(t *testing.T) {
			var buf bytes.Buffer
			logger := NewLogger(&buf, format, slog.LevelDebug, wired(nil))
			c := &creds{Key: testKey, Secret: testSecret}
			err := fmt.Errorf("call failed: %w", errors.New("REST said: bad secret "+testSecret))

			logger.Info("caller sent "+testSecret+" with "+testKey, "n", 1)
			logger.Warn("attrs",
				"plain", "secret="+testSecret,
				"err", err,
				"struct", *c,
				"pointer", c,
				"nested", wrapper{Inner: c},
				"bytes", []byte("x-api-secret: "+testSecret),
				"stringer", stringer{},
				"x-api-secret", "hunter2-of-no-known-shape",
				"X-Api-Key", testKey,
				"api_key", "no-prefix-key",
				"Authorization", "Bearer abc.def.ghi",
				"password", "pw-Xy9plain",
				"db_password", 4242,
				"headers", map[string]string{"x-api-secret": testSecret},
				slog.Group("req", slog.String("x-api-key", testKey), slog.Group("deep", slog.Any("e", err))),
			)
			logger.With("with", testSecret, "x-api-secret", "hunter2-of-no-known-shape").WithGroup("g").
				Error("child", "k", testKey, slog.Any("list", []string{testSecret}))
			logger.Debug("debug", "v", slog.AnyValue(fmt.Sprintf("%v", c)))

			out := buf.String()
			if n := strings.Count(out, "\n"); n != 4 {
				t.Fatalf("%d lines, want 4:\n%s", n, out)
			}
			// The timestamp is dropped first: its digits can hold "4242".
			untimed := logTime.ReplaceAllString(out, "")
			assertAbsent(t, "logs", untimed, "R0d7", "sk_test_R", testKey[8:], "Q3kz9", "hunter2", "no-prefix-key", "abc.def.ghi", "pw-Xy9plain", "4242")
			for _, want := range []string{"ak_test_…", "sk_…[redacted]", "[redacted]", "call failed: REST said: bad secret"} {
				if !strings.Contains(out, want) {
					t.Errorf("logs lack %q:\n%s", want, out)
				}
			}
			// Ordinary values are untouched.
			if format == "json" {
				lines := logLines(t, out)
				if lines[0]["n"] != float64(1) {
					t.Errorf("n = %v", lines[0]["n"])
				}
				if _, ok := lines[2]["g"].(map[string]any); !ok {
					t.Errorf("group lost: %v", lines[2])
				}
			}
		})
	}
}

func TestRedactingHandlerWithKnownSecrets(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	type ctxKey struct{}
	h := RedactingHandler(slog.NewJSONHandler(&buf, nil), wired(func(ctx context.Context) []string {
		s, _ := ctx.Value(ctxKey{}).(string)
		return []string{s, "", "ab"} // empty and too-short values are ignored
	}))
	ctx := context.WithValue(context.Background(), ctxKey{}, "Zq-any-shape-Secret-91")
	slog.New(h).InfoContext(ctx, "about Zq-any-shape-Secret-91", "detail", "was Zq-any-shape-Secret-91", "other", "ab cd")
	out := buf.String()
	assertAbsent(t, "logs", out, "Zq-any-shape")
	if !strings.Contains(out, `"other":"ab cd"`) {
		t.Errorf("short value blanked: %s", out)
	}
}

var hex16 = regexp.MustCompile(`^[0-9a-f]{16}$`)

func TestAccessLog(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, reqID string
		keep        bool
	}{
		{"sane id kept", "req-123_abc.DEF", true},
		{"none", "", false},
		{"hostile", "../\n<script>", false},
		{"too long", strings.Repeat("a", 65), false},
		{"secret as id", testSecret, true}, // sane, so kept and echoed, but redacted in the log
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf syncBuffer
			var seenID string
			h := AccessLog(NewLogger(&buf, "json", slog.LevelInfo, wired(nil)), wired(nil))(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				seenID = RequestID(r.Context())
				st := StatsFrom(r.Context())
				st.AddRESTCall()
				st.AddRESTCall()
				st.SetOperation("GetPayment", "NOT_FOUND")
				w.WriteHeader(http.StatusTeapot)
				_, _ = w.Write([]byte("hello"))
			}))
			req := httptest.NewRequest(http.MethodGet, "/graphql?query=%7Bpayment(id:%22pay_prod_abc%22)%7D&secret="+testSecret, nil)
			req.Header.Set("x-api-key", testKey)
			req.Header.Set("x-api-secret", testSecret)
			if tc.reqID != "" {
				req.Header["X-Request-Id"] = []string{tc.reqID}
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)

			echoed := rec.Header().Get("X-Request-Id")
			if tc.keep && echoed != tc.reqID || !tc.keep && !hex16.MatchString(echoed) {
				t.Errorf("X-Request-Id %q (sent %q)", echoed, tc.reqID)
			}
			if seenID != echoed {
				t.Errorf("RequestID in context %q, header %q", seenID, echoed)
			}
			out := buf.String()
			lines := logLines(t, out)
			if len(lines) != 1 {
				t.Fatalf("%d lines: %s", len(lines), out)
			}
			l := lines[0]
			wantID := echoed
			if tc.reqID == testSecret {
				wantID = "sk_…[redacted]"
			}
			want := map[string]any{
				"msg": "request", "request_id": wantID, "method": "GET", "path": "/graphql",
				"status": float64(418), "operation": "GetPayment", "outcome": "NOT_FOUND",
				"rest_calls": float64(2), "bytes": float64(5),
			}
			// Every field above, whatever else the line holds (time, level,
			// duration_ms: checked below).
			onlyWanted := cmpopts.IgnoreMapEntries(func(k string, _ any) bool { _, ok := want[k]; return !ok })
			if diff := cmp.Diff(want, l, onlyWanted); diff != "" {
				t.Errorf("access log line (-want +got):\n%s", diff)
			}
			if _, ok := l["duration_ms"].(float64); !ok {
				t.Errorf("duration_ms = %v", l["duration_ms"])
			}
			assertAbsent(t, "access log", out, "query", "pay_prod", "R0d7", "Q3kz9", "script", "\\n")
		})
	}
}

func TestAccessLogDefaultsAndPanics(t *testing.T) {
	t.Parallel()
	var buf syncBuffer
	logger := NewLogger(&buf, "text", slog.LevelInfo, wired(nil))
	silent := AccessLog(logger, wired(nil))(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	silent.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/healthz", nil))
	if out := buf.String(); !strings.Contains(out, "status=200") || !strings.Contains(out, "rest_calls=0") {
		t.Errorf("default status: %s", out)
	}

	buf = syncBuffer{}
	panicky := AccessLog(logger, wired(nil))(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic("boom") }))
	func() {
		defer func() {
			if p := recover(); p != "boom" {
				t.Errorf("panic not passed on: %v", p)
			}
		}()
		panicky.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodPost, "/graphql", nil))
	}()
	if out := buf.String(); !strings.Contains(out, "status=500") {
		t.Errorf("panic not logged as 500: %s", out)
	}
}

// TestAccessLogDebugPaths: the access lines of Options.DebugPaths are
// debug, so a logger at info writes none for them and one for every other
// request; at debug it writes both.
func TestAccessLogDebugPaths(t *testing.T) {
	t.Parallel()
	quiet := []string{"/healthz", "/readyz", "/metrics"}
	paths := []string{"/healthz", "/readyz", "/metrics", "/graphql", "/healthz/x", "/"}
	for _, tc := range []struct {
		name  string
		level slog.Level
		want  []string // paths logged, in order
	}{
		{"info", slog.LevelInfo, []string{"/graphql", "/healthz/x", "/"}},
		{"debug", slog.LevelDebug, paths},
		{"warn", slog.LevelWarn, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			o := Options{DebugPaths: quiet}
			h := AccessLog(NewLogger(&buf, "json", tc.level, o), o)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path == "/readyz" {
					w.WriteHeader(http.StatusServiceUnavailable) // a failing probe is still a probe
				}
			}))
			for _, p := range paths {
				h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, p, nil))
			}
			var got []string
			for _, l := range logLines(t, buf.String()) {
				got = append(got, l["path"].(string))
				if want := map[bool]string{true: "DEBUG", false: "INFO"}[slices.Contains(quiet, l["path"].(string))]; l["level"] != want {
					t.Errorf("%s logged at %v, want %s", l["path"], l["level"], want)
				}
			}
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("paths logged (-want +got):\n%s", diff)
			}
		})
	}
}

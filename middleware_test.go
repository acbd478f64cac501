package main

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestRequestIDAndAccessLog(t *testing.T) {
	var logs bytes.Buffer
	h := accessLog(slog.New(slog.NewJSONHandler(&logs, nil)))(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if requestID(r.Context()) == "" {
			t.Error("no request id in the context")
		}
		w.WriteHeader(http.StatusTeapot)
	}))
	for _, tc := range []struct{ sent, want string }{
		{"abc-123.DEF_9", "abc-123.DEF_9"},
		{"", ""},
		{"../\n<script>", ""},
		{strings.Repeat("a", 65), ""},
	} {
		logs.Reset()
		req := httptest.NewRequest(http.MethodPost, "/graphql?query=secret-ish", nil)
		req.Header.Set("X-Request-Id", tc.sent)
		req.Header.Set("x-api-secret", "sk_test_must_not_be_logged")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		got := rec.Header().Get("X-Request-Id")
		if tc.want != "" && got != tc.want || tc.want == "" && (!saneRequestID(got) || got == tc.sent) {
			t.Errorf("sent %q: X-Request-Id %q", tc.sent, got)
		}
		var line map[string]any
		if err := json.Unmarshal(logs.Bytes(), &line); err != nil {
			t.Fatalf("log %q: %v", logs.String(), err)
		}
		if line["request_id"] != got || line["path"] != "/graphql" || line["status"] != float64(http.StatusTeapot) {
			t.Errorf("log line %v", line)
		}
		if strings.Contains(logs.String(), "sk_test_") || strings.Contains(logs.String(), "secret-ish") {
			t.Errorf("log line holds a header or the query string: %s", logs.String())
		}
	}
}

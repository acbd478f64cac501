package gateway_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"paygraph/internal/gqltest"
	"strings"
	"testing"

	"paygraph/sandbox"
)

// TestDuplicateCredentialHeadersRefused: a credential header sent in two
// header lines is refused with
// UNAUTHENTICATED before any REST call, with a message naming the header
// and never a value; one of each is served.
func TestDuplicateCredentialHeadersRefused(t *testing.T) {
	t.Parallel()
	g := startGateway(t, setup{})
	a, b := g.Biz[0], g.Biz[1]
	pay := g.Sandbox.Payments(a.APIKey)[0].ID
	query := `{ payment(id: "` + pay + `") { id } payments(first: 1) { nodes { id } } }`

	for _, tc := range []struct {
		name       string
		keys, secs []string
		method     string
		refused    string // the header the message names; "" served
	}{
		{"one of each (served)", []string{a.APIKey}, []string{a.APISecret}, http.MethodPost, ""},
		{"the same key twice", []string{a.APIKey, a.APIKey}, []string{a.APISecret}, http.MethodPost, "x-api-key"},
		{"two merchants' keys", []string{b.APIKey, a.APIKey}, []string{a.APISecret}, http.MethodPost, "x-api-key"},
		{"two secrets", []string{a.APIKey}, []string{a.APISecret, b.APISecret}, http.MethodPost, "x-api-secret"},
		{"both twice", []string{a.APIKey, b.APIKey}, []string{a.APISecret, b.APISecret}, http.MethodPost, "x-api-key"},
		{"an empty second key", []string{a.APIKey, ""}, []string{a.APISecret}, http.MethodPost, "x-api-key"},
		{"two keys and no secret", []string{a.APIKey, b.APIKey}, nil, http.MethodPost, "x-api-key"},
		{"two secrets over GET", []string{a.APIKey}, []string{b.APISecret, a.APISecret}, http.MethodGet, "x-api-secret"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g.Sandbox.ResetCalls()
			h := http.Header{}
			for _, k := range tc.keys {
				h.Add("X-Api-Key", k)
			}
			for _, s := range tc.secs {
				h.Add("X-Api-Secret", s)
			}
			var req *http.Request
			if tc.method == http.MethodGet {
				req, _ = http.NewRequest(http.MethodGet, g.URL+"/graphql?"+url.Values{"query": {query}}.Encode(), nil)
			} else {
				body, _ := json.Marshal(map[string]string{"query": query})
				req, _ = http.NewRequest(http.MethodPost, g.URL+"/graphql", bytes.NewReader(body))
				h.Set("Content-Type", "application/json")
			}
			req.Header = h
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			raw, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			var out gqltest.Response
			if err := json.Unmarshal(raw, &out); err != nil {
				t.Fatalf("status %d, body %q: %v", resp.StatusCode, raw, err)
			}
			calls := g.Sandbox.CallCount("")
			if tc.refused == "" {
				if resp.StatusCode != http.StatusOK || len(out.Errors) != 0 || calls != 2 {
					t.Fatalf("status %d, errors %+v, %d REST calls; want 200, none, 2", resp.StatusCode, out.Errors, calls)
				}
				return
			}
			if calls != 0 {
				t.Errorf("%d REST calls for a refused request", calls)
			}
			if resp.StatusCode != http.StatusBadRequest || len(out.Errors) != 1 || out.Codes()[0] != "UNAUTHENTICATED" || out.Data != nil {
				t.Fatalf("status %d, data %s, errors %+v; want 400 and one UNAUTHENTICATED", resp.StatusCode, out.Data, out.Errors)
			}
			msg := out.Errors[0].Message
			if !strings.HasPrefix(msg, tc.refused+" was sent more than once") {
				t.Errorf("message %q does not name %s", msg, tc.refused)
			}
			for _, biz := range []sandbox.Business{a, b} {
				for _, v := range []string{biz.APIKey, biz.APISecret, biz.APIKey[:12], biz.APISecret[:12]} {
					if strings.Contains(string(raw), v) {
						t.Errorf("the answer holds a credential value %q: %s", v, raw)
					}
				}
			}
		})
	}
}

// TestCredentialWithCommaForwarded: one header line is one value, so a key
// and a secret holding commas, quotes and spaces reach the REST API
// exactly as sent, once each (issue 22: they were refused as a list).
func TestCredentialWithCommaForwarded(t *testing.T) {
	t.Parallel()
	const key, secret = `ak gamma, "x"`, `sk gamma/+=;,secret~"x`
	var got [][]string
	rest := &countingREST{handle: func(w http.ResponseWriter, r *http.Request) {
		got = append(got, r.Header.Values("X-Api-Key"), r.Header.Values("X-Api-Secret"))
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, paymentJSON("10.00", "2026-11-21T09:30:00.000Z"))
	}}
	g := startGateway(t, setup{rest: rest})
	h := http.Header{"X-Api-Key": {key}, "X-Api-Secret": {secret}}
	g.Post(t, h, `{ payment(id: "pay_prod_0123456789abcdef0123456789abcdef") { id } }`, nil).WantNoErrors(t)
	if len(got) != 2 || len(got[0]) != 1 || got[0][0] != key || len(got[1]) != 1 || got[1][0] != secret {
		t.Errorf("the REST API got key and secret %q, want [[%s] [%s]]", got, key, secret)
	}
}

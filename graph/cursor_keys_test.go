package graph_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"paygraph/graph/errcode"
	"testing"

	"paygraph/graph"
	"paygraph/graph/relay"
	"paygraph/restclient"
	"paygraph/sandbox"
)

// gqlAnswer is a GraphQL response body.
type gqlAnswer struct {
	Data   json.RawMessage `json:"data"`
	Errors []struct {
		Message    string         `json:"message"`
		Path       []any          `json:"path"`
		Extensions map[string]any `json:"extensions"`
	} `json:"errors"`
}

func (a gqlAnswer) codes() []string {
	var out []string
	for _, e := range a.Errors {
		c, _ := e.Extensions["code"].(string)
		out = append(out, c)
	}
	return out
}

// gqlPost sends query to h as the caller with the given credential pair
// and decodes the answer.
func gqlPost(t testing.TB, h http.Handler, biz sandbox.Business, query string, vars map[string]any) (gqlAnswer, int) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"query": query, "variables": vars})
	req := httptest.NewRequest(http.MethodPost, "/graphql", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(restclient.HeaderAPIKey, biz.APIKey)
	req.Header.Set(restclient.HeaderAPISecret, biz.APISecret)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	var a gqlAnswer
	if err := json.Unmarshal(rec.Body.Bytes(), &a); err != nil {
		t.Fatalf("answer %.200q is not JSON: %v", rec.Body.Bytes(), err)
	}
	return a, rec.Body.Len()
}

func cursorKeys(t testing.TB, fill ...byte) *relay.Keys {
	t.Helper()
	var raw [][]byte
	for _, b := range fill {
		raw = append(raw, bytes.Repeat([]byte{b}, relay.MinKeyBytes))
	}
	k, err := relay.NewKeys(raw...)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// TestForgedCursorsNeverReachREST: a cursor is accepted only byte for
// byte as the gateway made it, for the merchant it made it for, under a
// key it still holds. Anything else is BAD_USER_INPUT before any REST
// call (the sandbox counts them): a forged cursor cannot make the gateway
// send the REST API a cursor of the forger's choosing, nor, through REST
// errors, open the shared circuit breaker.
func TestForgedCursorsNeverReachREST(t *testing.T) {
	t.Parallel()
	keyA, keyB := cursorKeys(t, 0xA1), cursorKeys(t, 0xB2)
	onKeyA, rig := serveGraphQL(t, graph.RigConfig{OverHTTP: true, Server: graph.ServerConfig{CursorKeys: keyA}})
	sb := rig.Sandbox
	a, b := sb.Businesses()[0], sb.Businesses()[1]
	handler := func(k *relay.Keys) http.Handler { // sharing onKeyA's REST client and its circuit breaker
		h, _ := serveGraphQL(t, graph.RigConfig{REST: rig.REST, Sandbox: sb, Server: graph.ServerConfig{CursorKeys: k}})
		return h
	}
	onKeyB, rotated := handler(keyB), handler(cursorKeys(t, 0xB2, 0xA1))

	const page = `query($after: String) { payments(first: 3, after: $after) { nodes { id } pageInfo { endCursor } } }`
	var first struct {
		Payments struct {
			Nodes    []struct{ ID string }
			PageInfo struct{ EndCursor string }
		}
	}
	ans, _ := gqlPost(t, onKeyA, a, page, nil)
	if len(ans.Errors) > 0 || json.Unmarshal(ans.Data, &first) != nil || first.Payments.PageInfo.EndCursor == "" {
		t.Fatalf("first page: %s %+v", ans.Data, ans.Errors)
	}
	cursorA := first.Payments.PageInfo.EndCursor
	raw, err := base64.RawURLEncoding.DecodeString(cursorA)
	if err != nil {
		t.Fatal(err)
	}
	wrongTag := bytes.Clone(raw)
	wrongTag[len(wrongTag)-1] ^= 0x01
	// A cursor of the earlier format: version 1, body and a 4-byte
	// unkeyed SHA-256 prefix, which anyone could compute.
	v1 := append([]byte{1, 0, 0}, sandbox.EncodeCursor(first.Payments.Nodes[2].ID)...)
	sum := sha256.Sum256(v1)
	v1 = append(v1, sum[:4]...)
	// A REST cursor of the forger's choosing in a well-formed cursor
	// whose tag is made up.
	forged := append([]byte{2, 0, 0}, "../../admin?x=1"...)
	forged = append(forged, make([]byte, relay.TagLen)...)

	for _, tc := range []struct {
		name   string
		h      http.Handler
		caller sandbox.Business
		cursor string
	}{
		{"valid base64, wrong tag", onKeyA, a, base64.RawURLEncoding.EncodeToString(wrongTag)},
		{"forged REST cursor, made-up tag", onKeyA, a, base64.RawURLEncoding.EncodeToString(forged)},
		{"version 1 cursor (unkeyed checksum)", onKeyA, a, base64.RawURLEncoding.EncodeToString(v1)},
		{"merchant A's cursor used by merchant B", onKeyA, b, cursorA},
		{"cursor signed with a retired key", onKeyB, a, cursorA},
		{"merchant A's cursor used by B after rotation", rotated, b, cursorA},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sb.ResetCalls()
			ans, _ := gqlPost(t, tc.h, tc.caller, page, map[string]any{"after": tc.cursor})
			if codes := ans.codes(); len(codes) != 1 || codes[0] != errcode.BadUserInput {
				t.Errorf("errors %+v, want one BAD_USER_INPUT", ans.Errors)
			}
			if n := sb.CallCount(""); n != 0 {
				t.Errorf("%d REST calls, want none (first: %s?%s)", n, sb.Calls()[0].EscapedPath, sb.Calls()[0].RawQuery)
			}
		})
	}

	t.Run("rotated keys [B, A] accept A's cursor", func(t *testing.T) {
		sb.ResetCalls()
		var next struct {
			Payments struct{ Nodes []struct{ ID string } }
		}
		ans, _ := gqlPost(t, rotated, a, page, map[string]any{"after": cursorA})
		if len(ans.Errors) > 0 || json.Unmarshal(ans.Data, &next) != nil {
			t.Fatalf("%s %+v", ans.Data, ans.Errors)
		}
		want := sb.Payments(a.APIKey)[3:6]
		for i, n := range next.Payments.Nodes {
			if i >= len(want) || n.ID != want[i].ID {
				t.Fatalf("continued with %+v, want the 4th to 6th payments", next.Payments.Nodes)
			}
		}
		if len(next.Payments.Nodes) != 3 || sb.CallCount(sandbox.RoutePayments) != 1 {
			t.Errorf("%d nodes, %d REST calls", len(next.Payments.Nodes), sb.CallCount(sandbox.RoutePayments))
		}
	})
	t.Run("rotated keys sign with B", func(t *testing.T) {
		ans, _ := gqlPost(t, rotated, a, page, nil)
		var p struct {
			Payments struct{ PageInfo struct{ EndCursor string } }
		}
		if len(ans.Errors) > 0 || json.Unmarshal(ans.Data, &p) != nil {
			t.Fatalf("%s %+v", ans.Data, ans.Errors)
		}
		sb.ResetCalls()
		if ans, _ := gqlPost(t, onKeyB, a, page, map[string]any{"after": p.Payments.PageInfo.EndCursor}); len(ans.Errors) > 0 {
			t.Errorf("a handler with B alone refuses a cursor [B, A] made: %+v", ans.Errors)
		}
		if ans, _ := gqlPost(t, onKeyA, a, page, map[string]any{"after": p.Payments.PageInfo.EndCursor}); fmt.Sprint(ans.codes()) != "[BAD_USER_INPUT]" {
			t.Errorf("a handler with A alone accepts a cursor signed with B: %+v", ans.Errors)
		}
		if n := sb.CallCount(""); n != 1 {
			t.Errorf("%d REST calls, want 1 (the accepted cursor's)", n)
		}
	})
}

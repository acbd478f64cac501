package gqlhttp

import (
	"net/http"
	"net/http/httptest"
	"paygraph/graph/errcode"
	"slices"
	"strings"
	"testing"

	"paygraph/restclient"
)

func TestCredentialHeaders(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		header    http.Header
		pair      bool     // a usable pair reaches the REST client
		ambiguous string   // the header refused, "" none
		secrets   []string // what CallerSecrets returns
	}{
		{"one of each", http.Header{"X-Api-Key": {"k1"}, "X-Api-Secret": {"s1"}}, true, "", []string{"k1", "s1"}},
		{"none", http.Header{}, false, "", nil},
		{"key only", http.Header{"X-Api-Key": {"k1"}}, false, "", []string{"k1"}},
		{"secret only", http.Header{"X-Api-Secret": {"s1"}}, false, "", []string{"s1"}},
		{"empty secret", http.Header{"X-Api-Key": {"k1"}, "X-Api-Secret": {""}}, false, "", []string{"k1"}},
		{"key twice", http.Header{"X-Api-Key": {"k1", "k2"}, "X-Api-Secret": {"s1"}}, false, restclient.HeaderAPIKey, []string{"k1", "k2", "s1"}},
		{"secret twice", http.Header{"X-Api-Key": {"k1"}, "X-Api-Secret": {"s1", "s1"}}, false, restclient.HeaderAPISecret, []string{"k1", "s1", "s1"}},
		// One header line is one value, commas included (issue 22).
		{"a comma in the key", http.Header{"X-Api-Key": {"k1, k2"}, "X-Api-Secret": {"s1"}}, true, "", []string{"k1, k2", "s1"}},
		{"a comma in the secret", http.Header{"X-Api-Key": {"ak"}, "X-Api-Secret": {`sk gamma/+=;,secret~"x`}}, true, "", []string{"ak", `sk gamma/+=;,secret~"x`}},
		{"secret with a comma, no key", http.Header{"X-Api-Secret": {"s1,s2"}}, false, "", []string{"s1,s2", "s1", "s2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var reached *http.Request
			h := Credentials(SingleCredentials(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
				reached = r
			})))
			req := httptest.NewRequest(http.MethodPost, "/graphql", nil)
			req.Header = tc.header
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if tc.ambiguous != "" {
				if reached != nil || rec.Code != http.StatusBadRequest ||
					!strings.Contains(rec.Body.String(), `"`+tc.ambiguous+` was sent more than once`) ||
					!strings.Contains(rec.Body.String(), errcode.Unauthenticated) {
					t.Fatalf("not refused: reached %v, %d %s", reached != nil, rec.Code, rec.Body)
				}
				for _, v := range tc.secrets {
					if strings.Contains(rec.Body.String(), v) {
						t.Errorf("the refusal holds %q: %s", v, rec.Body)
					}
				}
				return
			}
			if reached == nil {
				t.Fatalf("refused: %d %s", rec.Code, rec.Body)
			}
			if _, ok := restclient.CredentialsFrom(reached.Context()); ok != tc.pair {
				t.Errorf("pair in the context: %v, want %v", ok, tc.pair)
			}
			if got := CallerSecrets(reached.Context()); !slices.Equal(got, tc.secrets) {
				t.Errorf("CallerSecrets %q, want %q", got, tc.secrets)
			}
		})
	}
}

// TestCredentialsReadOnce: under an outer Credentials, SingleCredentials'
// read changes nothing (no second copy of the request); used alone, it
// reads the headers itself.
func TestCredentialsReadOnce(t *testing.T) {
	t.Parallel()
	req := httptest.NewRequest(http.MethodPost, "/graphql", nil)
	req.Header.Set("X-Api-Key", "k1")
	req.Header.Set("X-Api-Secret", "s1")
	var outer, inner *http.Request
	h := Credentials(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		outer = r
		SingleCredentials(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) { inner = r })).ServeHTTP(w, r)
	}))
	h.ServeHTTP(httptest.NewRecorder(), req)
	if outer == nil || inner != outer {
		t.Errorf("the inner read copied the request again")
	}
	SingleCredentials(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) { inner = r })).ServeHTTP(httptest.NewRecorder(), req)
	if c, ok := restclient.CredentialsFrom(inner.Context()); !ok || c.APIKey != "k1" || c.APISecret != "s1" {
		t.Errorf("alone, SingleCredentials did not read the pair")
	}
}

package gqlhttp

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"paygraph/restclient"
	"paygraph/sessiontoken"
)

type scopeKeyT struct{}

// bearerRig runs Bearer's two middlewares around a handler that records
// what reached it.
type bearerRig struct {
	verified []string // tokens Verify was given
	reached  bool
	creds    restclient.Credentials
	hasCreds bool
	scope    any
	secrets  []string
	refused  []string // "status code msg"
}

var goodPair = sessiontoken.Credentials{APIKey: "ak_test_bearer", APISecret: "sk_test_bearerSecret"}

func (rig *bearerRig) serve(t *testing.T, cfg BearerConfig, h http.Header) *httptest.ResponseRecorder {
	t.Helper()
	if cfg.WithScope == nil {
		cfg.WithScope = func(ctx context.Context, s sessiontoken.Scope) context.Context {
			return context.WithValue(ctx, scopeKeyT{}, s)
		}
	}
	cfg.KeyHeader, cfg.SecretHeader = "x-api-key", "x-api-secret"
	cfg.Refuse = func(w http.ResponseWriter, r *http.Request, status int, code, msg string) {
		rig.refused = append(rig.refused, fmt.Sprint(status, " ", code, " ", msg))
		w.WriteHeader(status)
	}
	read, refuse := Bearer(cfg)
	final := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rig.reached = true
		rig.creds, rig.hasCreds = restclient.CredentialsFrom(r.Context())
		rig.scope = r.Context().Value(scopeKeyT{})
		rig.secrets = BearerSecrets(r.Context())
	})
	// read never answers: what it lets through reaches the layers between
	// it and refuse (the access log), recorded here.
	var between bool
	h2 := read(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		between = true
		refuse(final).ServeHTTP(w, r)
	}))
	req := httptest.NewRequest(http.MethodPost, "/graphql", nil)
	req.Header = h
	w := httptest.NewRecorder()
	h2.ServeHTTP(w, req)
	if !between {
		t.Error("read answered the request itself")
	}
	return w
}

func TestBearer(t *testing.T) {
	t.Parallel()
	all := sessiontoken.AllReads()
	verify := func(rig *bearerRig, err error) func(string) (sessiontoken.Claims, error) {
		return func(tok string) (sessiontoken.Claims, error) {
			rig.verified = append(rig.verified, tok)
			if err != nil {
				return sessiontoken.Claims{}, err
			}
			return sessiontoken.Claims{Credentials: goodPair, Scope: all}, nil
		}
	}
	tests := []struct {
		name      string
		h         http.Header
		verifyErr error
		off       bool
		refusal   string // "" when the request passes
		verified  bool
	}{
		{"no Authorization", http.Header{}, nil, false, "", false},
		{"a good token", http.Header{"Authorization": {"Bearer tok1"}}, nil, false, "", true},
		{"scheme in any case", http.Header{"Authorization": {"bearer  tok1 "}}, nil, false, "", true},
		{"expired", http.Header{"Authorization": {"Bearer tok1"}}, fmt.Errorf("%w at 09:45", sessiontoken.ErrExpired), false, "session token has expired at 09:45", true},
		{"tampered", http.Header{"Authorization": {"Bearer tok1"}}, sessiontoken.ErrTampered, false, "was modified", true},
		{"foreign", http.Header{"Authorization": {"Bearer tok1"}}, sessiontoken.ErrForeign, false, "not made with a key of this gateway", true},
		{"malformed", http.Header{"Authorization": {"Bearer tok1"}}, sessiontoken.ErrMalformed, false, "malformed", true},
		{"an unexpected error's text is not told", http.Header{"Authorization": {"Bearer tok1"}}, errors.New("internal tok1 detail"), false, "session token is malformed", true},
		{"twice", http.Header{"Authorization": {"Bearer tok1", "Bearer tok2"}}, nil, false, "more than once", false},
		{"not Bearer", http.Header{"Authorization": {"Basic dXNlcjpwYXNz"}}, nil, false, "must be Bearer", false},
		{"empty", http.Header{"Authorization": {""}}, nil, false, "must be Bearer", false},
		{"Bearer alone", http.Header{"Authorization": {"Bearer"}}, nil, false, "must be Bearer", false},
		{"with x-api-key", http.Header{"Authorization": {"Bearer tok1"}, "X-Api-Key": {"k"}}, nil, false, "not both", false},
		{"with x-api-secret", http.Header{"Authorization": {"Bearer tok1"}, "X-Api-Secret": {"s"}}, nil, false, "not both", false},
		{"tokens off", http.Header{"Authorization": {"Bearer tok1"}}, nil, true, "TOKEN_KEYS is not set", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rig := &bearerRig{}
			cfg := BearerConfig{Verify: verify(rig, tc.verifyErr)}
			if tc.off {
				cfg.Verify = nil
			}
			w := rig.serve(t, cfg, tc.h)
			if got := len(rig.verified) > 0; got != tc.verified {
				t.Errorf("verified: %v, want %v", got, tc.verified)
			}
			if rig.verified != nil && rig.verified[0] != "tok1" {
				t.Errorf("Verify got %q, want the token alone", rig.verified[0])
			}
			if tc.refusal == "" {
				if len(rig.refused) > 0 || !rig.reached {
					t.Fatalf("refused %v", rig.refused)
				}
				if tc.verified != rig.hasCreds || tc.verified && (rig.creds != restclient.Credentials(goodPair) || rig.scope == nil) {
					t.Errorf("credentials %v (%v), scope %v", rig.creds, rig.hasCreds, rig.scope)
				}
				if tc.verified && (len(rig.secrets) != 1 || !strings.Contains(rig.secrets[0], "tok1")) {
					t.Errorf("BearerSecrets %q, want the Authorization value", rig.secrets)
				}
				return
			}
			if rig.reached || len(rig.refused) != 1 || !strings.HasPrefix(rig.refused[0], "401 UNAUTHENTICATED ") || !strings.Contains(rig.refused[0], tc.refusal) {
				t.Fatalf("reached %v, refused %q; want one 401 UNAUTHENTICATED saying %q", rig.reached, rig.refused, tc.refusal)
			}
			if strings.Contains(rig.refused[0], "tok1") || strings.Contains(rig.refused[0], "dXNlcjpwYXNz") {
				t.Errorf("the refusal echoes the token: %q", rig.refused[0])
			}
			if w.Header().Get("WWW-Authenticate") == "" {
				t.Error("no WWW-Authenticate on a 401")
			}
		})
	}
}

func TestBearerConfigRequired(t *testing.T) {
	t.Parallel()
	defer func() {
		if recover() == nil {
			t.Error("Bearer without WithScope, Refuse and the header names did not panic")
		}
	}()
	Bearer(BearerConfig{})
}

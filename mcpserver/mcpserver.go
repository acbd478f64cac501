// Package mcpserver serves the Model Context Protocol at /mcp over
// streamable HTTP with the official Go SDK: one tool per query of the
// trusted documents' manifest and four built-ins for the read paths. A
// tool call is served in-process by the gateway's router as a POST to
// /graphql with the caller's credentials, so that no tool can do what the
// same credentials could not do there. The server is stateless: every
// request is authorised again and no session outlives its token.
package mcpserver

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"github.com/vektah/gqlparser/v2/ast"

	"paygraph/graph/errcode"
	"paygraph/graph/receipt"
	"paygraph/sessiontoken"
	"paygraph/trusteddocs"
)

// Path is the endpoint's path; MetadataPath its RFC 9728 protected
// resource metadata (the well-known prefix before the resource's path).
const (
	Path         = "/mcp"
	MetadataPath = "/.well-known/oauth-protected-resource" + Path
)

// Config is what the endpoint needs from its owners.
type Config struct {
	GraphQL     http.Handler // serves a POST to GraphQLPath: the gateway's router
	GraphQLPath string
	Schema      *ast.Schema // what the tools' inputs are read against
	// Documents is the trusted documents store (nil: none); under enforce
	// the built-ins, whose text is not listed, are not offered.
	Documents *trusteddocs.Store
	Arbitrary bool // offer the graphql tool, any query text (never under enforce)
	// Verify checks a session token (sessiontoken.Keyring.Verify); nil:
	// tokens are off and only the pair is accepted.
	Verify                  func(token string) (sessiontoken.Claims, error)
	KeyHeader, SecretHeader string // the pair's headers
	// Admit charges every /mcp request but a tool call (whose operation is
	// charged) to its caller's budgets (gqlhttp.Admission.Middleware).
	Admit        func(http.Handler) http.Handler
	MaxBodyBytes int64  // bounds the body read to tell a tool call
	Version      string // the implementation version the server announces
	Logger       *slog.Logger
}

// New returns the /mcp handler and its protected resource metadata's.
func New(cfg Config) (endpoint, metadata http.Handler) {
	if cfg.GraphQL == nil || cfg.Schema == nil || cfg.KeyHeader == "" || cfg.SecretHeader == "" {
		panic("mcpserver: Config needs GraphQL, Schema, KeyHeader and SecretHeader")
	}
	s := &server{cfg: cfg}
	// The SDK serves each request on a session made with its context, where
	// tools find callerKey.
	var h http.Handler = mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.toolSet().server },
		&mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true})
	if cfg.Admit != nil {
		h = s.admit(h)
	}
	return s.authorize(h), http.HandlerFunc(s.metadata)
}

type server struct {
	cfg   Config
	mu    sync.Mutex
	tools *toolSet // of the manifest last read, and its MCP server
}

// callerKey holds the /mcp request a tool call runs for.
type callerKey struct{}

// caller is what a tool call's operation takes of its /mcp request.
type caller struct {
	remoteAddr, host string
	header           http.Header
}

// toolSet is the tools of the manifest in use, built again when it changes.
func (s *server) toolSet() *toolSet {
	d, digest, enforce := s.cfg.Documents, "", false
	if d != nil {
		digest, enforce = d.Info().SHA256, d.Mode() == trusteddocs.Enforce
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.tools == nil || s.tools.digest != digest {
		var docs []trusteddocs.Document
		if d != nil {
			digest, docs = d.Documents() // the digest of the documents' manifest
		}
		set := buildTools(s.cfg.Schema, digest, docs, !enforce, s.cfg.Arbitrary && !enforce, s.cfg.Logger)
		set.server = mcp.NewServer(&mcp.Implementation{Name: "paygraph", Version: s.cfg.Version}, nil)
		for _, t := range set.tools {
			set.server.AddTool(t.tool, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				c, ok := ctx.Value(callerKey{}).(*caller)
				if !ok {
					return failure(errcode.Internal, "the tool call has no caller", nil), nil
				}
				return s.call(ctx, c, t, req.Params.Arguments), nil
			})
		}
		s.tools = set
	}
	return s.tools
}

// gqlRequest is the body of the POST to /graphql.
type gqlRequest struct {
	Query         string          `json:"query"`
	OperationName string          `json:"operationName"`
	DocumentID    string          `json:"documentId,omitempty"`
	Variables     json.RawMessage `json:"variables,omitempty"`
}

type gqlError struct {
	Message    string `json:"message"`
	Extensions struct {
		Code       string `json:"code"`
		RetryAfter *int   `json:"retryAfter,omitempty"`
	} `json:"extensions"`
}

type gqlResponse struct {
	Data       json.RawMessage            `json:"data"`
	Errors     []gqlError                 `json:"errors"`
	Extensions map[string]json.RawMessage `json:"extensions"`
}

// passed are the outer request's headers the operation's request carries:
// the credentials and what names the client.
var passed = []string{"Authorization", "X-Forwarded-For", "X-Request-Id", "User-Agent"}

// call runs the tool's operation as a request of its own to /graphql.
func (s *server) call(ctx context.Context, outer *caller, t tool, args json.RawMessage) *mcp.CallToolResult {
	if len(args) == 0 || string(args) == "null" {
		args = json.RawMessage("{}")
	}
	op := gqlRequest{Query: t.query, OperationName: t.operation, DocumentID: t.documentID, Variables: args}
	if t.arbitrary {
		op = gqlRequest{}
		if err := json.Unmarshal(args, &op); err != nil || op.Query == "" {
			return failure(errcode.BadUserInput, "send query (and optionally variables, operationName)", nil)
		}
		op.DocumentID = ""
	}
	body, err := json.Marshal(op)
	if err != nil {
		return failure(errcode.BadUserInput, "the arguments are not a JSON object", nil)
	}
	// The operation is a request of its own; it ends with the tool call.
	octx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stop := context.AfterFunc(ctx, cancel)
	defer stop()
	req, err := http.NewRequestWithContext(octx, http.MethodPost, s.cfg.GraphQLPath, bytes.NewReader(body))
	if err != nil {
		return failure(errcode.Internal, "the operation could not be made", nil)
	}
	req.RemoteAddr, req.Host = outer.remoteAddr, outer.host
	for _, h := range append(passed, s.cfg.KeyHeader, s.cfg.SecretHeader) {
		if v := outer.header.Values(h); len(v) > 0 {
			req.Header[http.CanonicalHeaderKey(h)] = v
		}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/graphql-response+json")
	rec := httptest.NewRecorder()
	s.cfg.GraphQL.ServeHTTP(rec, req)
	return result(rec)
}

// result turns the GraphQL answer into the tool's: the data, or isError
// with the first error; the receipt and the request id in _meta.
func result(rec *httptest.ResponseRecorder) *mcp.CallToolResult {
	var g gqlResponse
	if err := json.Unmarshal(rec.Body.Bytes(), &g); err != nil {
		return failure(errcode.Internal, "the gateway's answer was not GraphQL (HTTP "+strconv.Itoa(rec.Code)+")", nil)
	}
	meta := mcp.Meta{}
	if id := rec.Header().Get("X-Request-Id"); id != "" {
		meta["requestId"] = id
	}
	if c, ok := g.Extensions[receipt.CostExtension]; ok {
		meta["receipt"] = c
	}
	if len(g.Errors) > 0 {
		e := g.Errors[0]
		if n, err := strconv.Atoi(rec.Header().Get("Retry-After")); err == nil && e.Extensions.RetryAfter == nil {
			e.Extensions.RetryAfter = &n
		}
		res := failure(e.Extensions.Code, e.Message, e.Extensions.RetryAfter)
		res.Meta = meta
		return res
	}
	return &mcp.CallToolResult{Meta: meta, Content: []mcp.Content{&mcp.TextContent{Text: string(g.Data)}}, StructuredContent: g.Data}
}

// toolError is the body of a refused tool call: the contract's code.
type toolError struct {
	Code       string `json:"code"`
	Message    string `json:"message"`
	RetryAfter *int   `json:"retryAfter,omitempty"`
}

func failure(code, msg string, retryAfter *int) *mcp.CallToolResult {
	b, _ := json.Marshal(toolError{Code: cmp.Or(code, errcode.Internal), Message: msg, RetryAfter: retryAfter})
	// Text only: structured content must match the tool's output schema.
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}}
}

// admit charges every request with Admit but a tool call, whose operation is charged.
func (s *server) admit(next http.Handler) http.Handler {
	charged := s.cfg.Admit(next)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && r.Body != nil {
			body, err := io.ReadAll(io.LimitReader(r.Body, cmp.Or(s.cfg.MaxBodyBytes, 1<<20)+1))
			r.Body.Close()
			if err != nil {
				http.Error(w, "the request body could not be read", http.StatusBadRequest)
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
			var msg struct{ Method string }
			if json.Unmarshal(body, &msg) == nil && msg.Method == "tools/call" {
				next.ServeHTTP(w, r)
				return
			}
		}
		charged.ServeHTTP(w, r)
	})
}

// authorize lets a request in with the pair or a session token that
// verifies now; anything else is 401 naming the resource metadata.
func (s *server) authorize(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c := &caller{remoteAddr: r.RemoteAddr, host: r.Host, header: r.Header.Clone()}
		r = r.WithContext(context.WithValue(r.Context(), callerKey{}, c))
		if r.Header.Get("Authorization") == "" && r.Header.Get(s.cfg.KeyHeader) != "" && r.Header.Get(s.cfg.SecretHeader) != "" {
			next.ServeHTTP(w, r)
			return
		}
		opts := &auth.RequireBearerTokenOptions{ResourceMetadataURL: origin(r) + MetadataPath}
		auth.RequireBearerToken(s.verify, opts)(next).ServeHTTP(w, r)
	})
}

func (s *server) verify(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
	if s.cfg.Verify == nil {
		return nil, fmt.Errorf("%w: session tokens are off: send %s and %s", auth.ErrInvalidToken, s.cfg.KeyHeader, s.cfg.SecretHeader)
	}
	claims, err := s.cfg.Verify(token)
	if err != nil {
		for _, known := range []error{sessiontoken.ErrExpired, sessiontoken.ErrTampered, sessiontoken.ErrForeign} {
			if errors.Is(err, known) {
				return nil, fmt.Errorf("%w: %s", auth.ErrInvalidToken, known.Error())
			}
		}
		return nil, fmt.Errorf("%w: %s", auth.ErrInvalidToken, sessiontoken.ErrMalformed.Error())
	}
	return &auth.TokenInfo{Scopes: []string{claims.Scope.String()}, Expiration: claims.ExpiresAt}, nil
}

// metadata serves RFC 9728's document: the gateway mints its own tokens
// (POST /auth/token, with the pair), so it names no authorization server.
func (s *server) metadata(w http.ResponseWriter, r *http.Request) {
	o := origin(r)
	auth.ProtectedResourceMetadataHandler(&oauthex.ProtectedResourceMetadata{Resource: o + Path, ResourceName: "paygraph",
		BearerMethodsSupported: []string{"header"}, ResourceDocumentation: o + "/auth/token"}).ServeHTTP(w, r)
}

// origin is the scheme and host the client used.
func origin(r *http.Request) string {
	scheme := "http"
	if r.TLS != nil || r.Header.Get("X-Forwarded-Proto") == "https" {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}

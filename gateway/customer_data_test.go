package gateway_test

// Customer data on a need-to-know basis (issue 27), over real HTTP and
// WebSocket against the sandbox: every scope of session token at every
// customer-data level (and the two credential headers), every customer
// field, every way of asking, each cell checked against the masked forms
// docs/clients.md documents; then a scan of the logs, /metrics and the
// traces of the whole suite for the sandbox's customer data; and the REST
// calls a withheld address saves.

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/coder/websocket/wsjson"
	gocmp "github.com/google/go-cmp/cmp"
	"go.opentelemetry.io/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"paygraph/gateway"
	"paygraph/internal/gqltest"
	"paygraph/internal/testenv"
	"paygraph/sandbox"
	"paygraph/sessiontoken"
)

// customerFields are the Customer fields, in the order of the table.
var customerFields = []string{"name", "email", "phone", "address", "city"}

// record is what the REST API holds of one customer (nil: no such
// field, as a payment has no city).
type record map[string]*string

func sp(s string) *string { return &s }

// documented is the value a caller at level reads of field, by the forms
// of docs/clients.md (written out here, not taken from the gateway).
func documented(level, field string, rec record) any {
	v := rec[field]
	switch {
	case level == "full":
		if v == nil {
			return nil
		}
		return *v
	case level == "none" || v == nil:
		return nil
	}
	s := *v
	switch field {
	case "name": // initials
		var in []string
		for _, w := range strings.Fields(s) {
			in = append(in, strings.ToUpper(w[:1])+".")
		}
		return strings.Join(in, " ")
	case "email": // first character, ***, the domain
		return s[:1] + "***" + s[strings.LastIndexByte(s, '@'):]
	case "phone": // +8801 (5), a star each for the middle, the last 4
		return s[:5] + strings.Repeat("*", len(s)-9) + s[len(s)-4:]
	case "city":
		return s
	}
	return nil // the address
}

// restrictedAt: the fields a level lists in extensions.customerData.
func restrictedAt(level, field string) bool {
	switch level {
	case "masked":
		return field != "city"
	case "none":
		return true
	}
	return false
}

// piiRig is a gateway with session tokens in front of the counting
// sandbox, logging into a buffer and tracing into memory, with no rate
// limits (the suite is a few hundred requests of one merchant).
type piiRig struct {
	*testGateway
	logs  *testenv.LockedBuffer
	spans *tracetest.InMemoryExporter
	tp    *sdktrace.TracerProvider
	biz   sandbox.Business
}

func startPIIRig(t *testing.T, env map[string]string) *piiRig {
	t.Helper()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	prevTP := otel.GetTracerProvider()
	otel.SetTracerProvider(tp)
	t.Cleanup(func() {
		otel.SetTracerProvider(prevTP)
		_ = tp.Shutdown(context.Background())
	})
	e := map[string]string{
		"TOKEN_KEYS":                       sessiontoken.GenerateKey(),
		"RATE_LIMIT_REST_CALLS_PER_SECOND": "0", "RATE_LIMIT_REQUESTS_PER_SECOND": "0",
	}
	for k, v := range env {
		e[k] = v
	}
	rig := &piiRig{logs: new(testenv.LockedBuffer), spans: exp, tp: tp}
	logger := gateway.NewLogger(rig.logs, gateway.Config{LogFormat: "json"})
	rig.testGateway = startGateway(t, setup{env: e, logger: logger, opts: []gateway.Option{gateway.WithTracing(true)}})
	rig.biz = rig.Biz[0]
	return rig
}

// mint mints a token of scope at level ("" for the scope's default).
func (rig *piiRig) mint(t *testing.T, scope, level string) string {
	t.Helper()
	body := `{"scope":` + scope
	if level != "" {
		body += `,"customerData":"` + level + `"`
	}
	r := rig.Do(t, http.MethodPost, "/auth/token", creds(rig.biz), []byte(body+"}"))
	var a struct {
		Token        string `json:"token"`
		CustomerData string `json:"customerData"`
	}
	if err := json.Unmarshal(r.Raw, &a); err != nil || r.Status != http.StatusOK || a.Token == "" {
		t.Fatalf("mint %s %s: %d %s", scope, level, r.Status, r.Raw)
	}
	if level != "" && a.CustomerData != level {
		t.Fatalf("mint %s %s: customerData %q", scope, level, a.CustomerData)
	}
	return a.Token
}

// answer is one operation's result, its parts merged: data, errors and
// every path extensions.customerData listed (level "" when absent).
type answer struct {
	data   any
	errors []string
	level  string
	masked map[string]bool // JSON of each path
}

func (a *answer) addExtensions(raw json.RawMessage) error {
	if len(raw) == 0 {
		return nil
	}
	var ext struct {
		CustomerData *struct {
			Level       string  `json:"level"`
			MaskedPaths [][]any `json:"maskedPaths"`
		} `json:"customerData"`
	}
	if err := json.Unmarshal(raw, &ext); err != nil {
		return err
	}
	if c := ext.CustomerData; c != nil {
		if c.MaskedPaths == nil {
			return fmt.Errorf("extensions.customerData without maskedPaths: %s", raw)
		}
		a.level = c.Level
		for _, p := range c.MaskedPaths {
			b, _ := json.Marshal(p)
			a.masked[string(b)] = true
		}
	}
	return nil
}

// payload is one GraphQL result (or a part's).
type payload struct {
	Data        json.RawMessage `json:"data"`
	Errors      []gqltest.Error `json:"errors"`
	Extensions  json.RawMessage `json:"extensions"`
	Incremental []struct {
		Data       json.RawMessage `json:"data"`
		Path       []any           `json:"path"`
		Errors     []gqltest.Error `json:"errors"`
		Extensions json.RawMessage `json:"extensions"`
	} `json:"incremental"`
}

func (a *answer) add(t *testing.T, p payload) {
	t.Helper()
	for _, e := range append(p.Errors, flatErrors(p)...) {
		a.errors = append(a.errors, e.Code()+": "+e.Message)
	}
	if err := a.addExtensions(p.Extensions); err != nil {
		t.Fatal(err)
	}
	if len(p.Data) > 0 && string(p.Data) != "null" {
		if err := json.Unmarshal(p.Data, &a.data); err != nil {
			t.Fatal(err)
		}
	}
	for _, inc := range p.Incremental {
		if err := a.addExtensions(inc.Extensions); err != nil {
			t.Fatal(err)
		}
		var d map[string]any
		if err := json.Unmarshal(inc.Data, &d); err != nil {
			t.Fatal(err)
		}
		obj, _ := at(a.data, inc.Path).(map[string]any)
		if obj == nil {
			t.Fatalf("incremental path %v is not an object of the first part", inc.Path)
		}
		for k, v := range d {
			obj[k] = v
		}
	}
}

func flatErrors(p payload) []gqltest.Error {
	var out []gqltest.Error
	for _, inc := range p.Incremental {
		out = append(out, inc.Errors...)
	}
	return out
}

// walk follows path (names and indexes) into v; nil when it is not there.
func at(v any, path []any) any {
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, _ := v.(map[string]any)
			v = m[k]
		case float64:
			l, _ := v.([]any)
			if int(k) >= len(l) {
				return nil
			}
			v = l[int(k)]
		case int:
			l, _ := v.([]any)
			if k >= len(l) {
				return nil
			}
			v = l[k]
		}
	}
	return v
}

// A transport sends one operation with the caller's headers (or, over
// WebSocket, its connection_init payload) and returns its answer.
type transport func(t *testing.T, rig *piiRig, h http.Header, query string, vars map[string]any) answer

func newAnswer() answer { return answer{masked: map[string]bool{}} }

func postJSON(t *testing.T, rig *piiRig, h http.Header, body any) answer {
	b, _ := json.Marshal(body)
	r := rig.Do(t, http.MethodPost, "/graphql", h, b)
	a := newAnswer()
	var p payload
	if err := json.Unmarshal(r.Raw, &p); err != nil {
		t.Fatalf("POST: %d %s", r.Status, r.Raw)
	}
	a.add(t, p)
	return a
}

func viaPOST(t *testing.T, rig *piiRig, h http.Header, query string, vars map[string]any) answer {
	return postJSON(t, rig, h, map[string]any{"query": query, "variables": vars})
}

func viaGET(t *testing.T, rig *piiRig, h http.Header, query string, vars map[string]any) answer {
	v, _ := json.Marshal(vars)
	r := rig.Do(t, http.MethodGet, "/graphql?"+url.Values{"query": {query}, "variables": {string(v)}}.Encode(), h, nil)
	a := newAnswer()
	var p payload
	if err := json.Unmarshal(r.Raw, &p); err != nil {
		t.Fatalf("GET: %d %s", r.Status, r.Raw)
	}
	a.add(t, p)
	return a
}

// viaAPQ registers the query by its hash, then runs it by the hash alone;
// the second answer is the one checked.
func viaAPQ(t *testing.T, rig *piiRig, h http.Header, query string, vars map[string]any) answer {
	sum := sha256.Sum256([]byte(query))
	ext := map[string]any{"persistedQuery": map[string]any{"version": 1, "sha256Hash": hex.EncodeToString(sum[:])}}
	first := postJSON(t, rig, h, map[string]any{"query": query, "variables": vars, "extensions": ext})
	if len(first.errors) > 0 {
		return first
	}
	return postJSON(t, rig, h, map[string]any{"variables": vars, "extensions": ext})
}

// viaMultipart asks for incremental delivery (@defer) and merges the parts.
func viaMultipart(t *testing.T, rig *piiRig, h http.Header, query string, vars map[string]any) answer {
	b, _ := json.Marshal(map[string]any{"query": query, "variables": vars})
	req, _ := http.NewRequest(http.MethodPost, rig.URL+"/graphql", bytes.NewReader(b))
	req.Header = h.Clone()
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "multipart/mixed;deferSpec=20220824, application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	a := newAnswer()
	mt, params, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if mt != "multipart/mixed" {
		raw, _ := io.ReadAll(resp.Body)
		t.Fatalf("@defer answered %q, not a stream: %s", mt, raw)
	}
	mr := multipart.NewReader(resp.Body, params["boundary"])
	for {
		part, err := mr.NextPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		var p payload
		if err := json.NewDecoder(part).Decode(&p); err != nil {
			t.Fatal(err)
		}
		a.add(t, p)
	}
	return a
}

// viaSSE subscribes over graphql-sse and takes the first event.
func viaSSE(t *testing.T, rig *piiRig, h http.Header, query string, vars map[string]any) answer {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second) // a hang guard
	defer cancel()
	b, _ := json.Marshal(map[string]any{"query": query, "variables": vars})
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, rig.URL+"/graphql", bytes.NewReader(b))
	req.Header = h.Clone()
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	event := ""
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			event = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: ") && event == "next":
			a := newAnswer()
			var p payload
			if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &p); err != nil {
				t.Fatal(err)
			}
			a.add(t, p)
			return a
		}
	}
	t.Fatalf("SSE ended without an event: %v", sc.Err())
	return answer{}
}

// viaWS runs the operation (a query or a subscription's first event) over
// graphql-transport-ws, the headers as the connection_init payload.
func viaWS(t *testing.T, rig *piiRig, h http.Header, query string, vars map[string]any) answer {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second) // a hang guard
	defer cancel()
	c, _, err := websocket.Dial(ctx, strings.Replace(rig.URL, "http", "ws", 1)+"/graphql",
		&websocket.DialOptions{Subprotocols: []string{"graphql-transport-ws"}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	init := map[string]string{}
	for k := range h {
		init[k] = h.Get(k)
	}
	p, _ := json.Marshal(init)
	if err := wsjson.Write(ctx, c, wsMsg{Type: "connection_init", Payload: p}); err != nil {
		t.Fatal(err)
	}
	sub, _ := json.Marshal(map[string]any{"query": query, "variables": vars})
	if err := wsjson.Write(ctx, c, wsMsg{ID: "1", Type: "subscribe", Payload: sub}); err != nil {
		t.Fatal(err)
	}
	for {
		var m wsMsg
		if err := wsjson.Read(ctx, c, &m); err != nil {
			t.Fatalf("WebSocket: %v", err)
		}
		switch m.Type {
		case "next":
			a := newAnswer()
			var p payload
			if err := json.Unmarshal(m.Payload, &p); err != nil {
				t.Fatal(err)
			}
			a.add(t, p)
			return a
		case "error":
			t.Fatalf("WebSocket error: %s", m.Payload)
		case "ping":
			_ = wsjson.Write(ctx, c, wsMsg{Type: "pong"})
		}
	}
}

// customerSel selects the five fields, as aliased.
func customerSel(alias map[string]string) string {
	var b strings.Builder
	for _, f := range customerFields {
		if a := alias[f]; a != "" {
			b.WriteString(a + ": ")
		}
		b.WriteString(f + " ")
	}
	return b.String()
}

// located is a customer object in an answer: its path and the record it
// renders.
type located struct {
	path []any
	rec  record
}

// way is one way of asking: the operation, its transport, and where its
// customers are.
type way struct {
	name      string
	transport transport
	query     string
	vars      map[string]any
	alias     map[string]string // field: alias ("" none)
	customers []located
	scopes    []string // the scopes that may ask it
	// alsoName: a customer's path whose name alone is selected as well
	// (an alias of the customer), listed below full.
	alsoName []any
	// only: the customer fields it selects (nil: all five).
	only []string
}

// trustedPaymentQuery is the manifest's document of the table's
// trusted-document way.
const trustedPaymentQuery = `query TrustedPayment($id: ID!) { payment(id: $id) { id customer { name email phone address city } } }`

// viaTrustedDocument runs the manifest's document by its documentId (the
// query text is ignored: the manifest's is run).
func viaTrustedDocument(t *testing.T, rig *piiRig, h http.Header, _ string, vars map[string]any) answer {
	return postJSON(t, rig, h, map[string]any{"documentId": "trusted-payment", "variables": vars})
}

func TestCustomerDataTable(t *testing.T) {
	manifest := filepath.Join(t.TempDir(), "manifest.json")
	writeManifest(t, manifest, map[string]string{"trusted-payment": trustedPaymentQuery})
	rig := startPIIRig(t, map[string]string{"TRUSTED_DOCUMENTS": manifest, "TRUSTED_DOCUMENTS_MODE": "allow"})
	biz := rig.biz
	pays := rig.Sandbox.Payments(biz.APIKey)
	session := rig.Sandbox.CheckoutSessions(biz.APIKey)[0]
	var pay sandbox.Payment // the session's payment
	for _, p := range pays {
		if p.ID == session.PaymentID {
			pay = p
		}
	}
	if pay.ID == "" {
		t.Fatal("the session's payment is not in the list")
	}
	payRec := func(p sandbox.Payment) record {
		return record{"name": sp(p.Customer.Name), "email": sp(p.Customer.Email), "phone": sp(p.Customer.Phone), "address": sp(p.Customer.Address)}
	}
	sc := session.Customer
	sessRec := record{"name": sp(sc.Name), "email": sp(sc.Email), "phone": sp(sc.Phone), "address": sp(sc.Address), "city": sp(sc.City)}

	plain := customerSel(nil)
	aliases := map[string]string{"name": "n", "email": "e", "phone": "ph", "address": "a", "city": "ci"}
	payVars := map[string]any{"id": pay.ID}
	allScopes := []string{"all", "payment", "checkoutSession", "headers"}
	onePayment := func(root string) []located { return []located{{[]any{root, "customer"}, payRec(pay)}} }
	paymentQuery := `query($id: ID!) { payment(id: $id) { id customer { ` + plain + `} } }`
	paymentSub := `subscription($id: ID!) { paymentUpdated(id: $id) { id customer { ` + plain + `} } }`
	var list []located
	for i := range 3 {
		list = append(list, located{[]any{"payments", "nodes", i, "customer"}, payRec(pays[i])},
			located{[]any{"payments", "edges", i, "node", "customer"}, payRec(pays[i])})
	}
	ways := []way{
		{name: "POST", transport: viaPOST, query: paymentQuery, vars: payVars, customers: onePayment("payment"), scopes: allScopes},
		{name: "aliases", transport: viaPOST, query: `query($id: ID!) { p: payment(id: $id) { c: customer { ` + customerSel(aliases) + `} again: customer { name } } }`,
			vars: payVars, alias: aliases, customers: []located{{[]any{"p", "c"}, payRec(pay)}}, scopes: allScopes,
			alsoName: []any{"p", "again"}},
		{name: "fragments", transport: viaPOST, query: `query($id: ID!) { payment(id: $id) { ...P } }
			fragment P on Payment { customer { ...C } } fragment C on Customer { ` + plain + `}`,
			vars: payVars, customers: onePayment("payment"), scopes: allScopes},
		{name: "inline fragment", transport: viaPOST, query: `query($id: ID!) { payment(id: $id) { ... on Payment { customer { ... on Customer { ` + plain + `} } } } }`,
			vars: payVars, customers: onePayment("payment"), scopes: allScopes},
		{name: "node", transport: viaPOST, query: `query($id: ID!) { node(id: $id) { id ... on Payment { customer { ` + plain + `} } } }`,
			vars: payVars, customers: onePayment("node"), scopes: allScopes},
		{name: "nodes", transport: viaPOST, query: `query($id: ID!) { nodes(ids: [$id]) { id ... on Payment { customer { ` + plain + `} } } }`,
			vars: payVars, customers: []located{{[]any{"nodes", 0, "customer"}, payRec(pay)}}, scopes: allScopes},
		{name: "@defer of the customer", transport: viaMultipart, query: `query($id: ID!) { payment(id: $id) { id ... @defer { customer { ` + plain + `} } } }`,
			vars: payVars, customers: onePayment("payment"), scopes: allScopes},
		{name: "@defer of the address", transport: viaMultipart, query: `query($id: ID!) { payment(id: $id) { id customer { name email phone city ... @defer { address } } } }`,
			vars: payVars, customers: onePayment("payment"), scopes: allScopes},
		{name: "GET", transport: viaGET, query: paymentQuery, vars: payVars, customers: onePayment("payment"), scopes: allScopes},
		{name: "APQ", transport: viaAPQ, query: paymentQuery, vars: payVars, customers: onePayment("payment"), scopes: allScopes},
		{name: "trusted document", transport: viaTrustedDocument, vars: payVars, customers: onePayment("payment"), scopes: allScopes},
		{name: "WebSocket query", transport: viaWS, query: paymentQuery, vars: payVars, customers: onePayment("payment"), scopes: allScopes},
		{name: "SSE subscription", transport: viaSSE, query: paymentSub, vars: payVars, customers: onePayment("paymentUpdated"), scopes: allScopes},
		{name: "WebSocket subscription", transport: viaWS, query: paymentSub, vars: payVars, customers: onePayment("paymentUpdated"), scopes: allScopes},
		{name: "checkout session", transport: viaPOST,
			query: `query($id: String!) { checkoutSession(id: $id) { customer { ` + plain + `} payment { customer { ` + plain + `} } } }`,
			vars:  map[string]any{"id": session.ID},
			customers: []located{{[]any{"checkoutSession", "customer"}, sessRec},
				{[]any{"checkoutSession", "payment", "customer"}, payRec(pay)}},
			scopes: []string{"all", "checkoutSession", "headers"}},
		{name: "checkout session subscription", transport: viaWS,
			query: `subscription($id: String!) { checkoutSessionUpdated(id: $id) { customer { ` + plain + `} payment { customer { ` + plain + `} } } }`,
			vars:  map[string]any{"id": session.Reference},
			customers: []located{{[]any{"checkoutSessionUpdated", "customer"}, sessRec},
				{[]any{"checkoutSessionUpdated", "payment", "customer"}, payRec(pay)}},
			scopes: []string{"all", "checkoutSession", "headers"}},
		{name: "list without the address (the fast path's plan at full)", transport: viaPOST,
			query:     `{ payments(first: 3) { nodes { id customer { name email phone city } } } }`,
			customers: []located{list[0], list[2], list[4]}, only: []string{"name", "email", "phone", "city"}, scopes: []string{"all", "headers"}},
		{name: "list", transport: viaPOST,
			query:     `{ payments(first: 3) { nodes { customer { ` + plain + `} } edges { node { customer { ` + plain + `} } } } }`,
			customers: list, scopes: []string{"all", "headers"}},
	}

	scopes := map[string]string{
		"all":             `{"kind":"all"}`,
		"payment":         `{"kind":"payment","id":"` + pay.ID + `"}`,
		"checkoutSession": `{"kind":"checkoutSession","id":"` + session.ID + `"}`,
	}
	cells := 0
	for _, scope := range allScopes {
		levels := []string{"full", "masked", "none", ""}
		if scope == "headers" {
			levels = []string{"full"} // the two credential headers
		}
		for _, level := range levels {
			h := creds(biz)
			want := level
			if scope != "headers" {
				h = http.Header{"Authorization": {"Bearer " + rig.mint(t, scopes[scope], level)}}
				if level == "" {
					want = "masked" // every scope's default
				}
			}
			for _, w := range ways {
				if !slices.Contains(w.scopes, scope) {
					continue
				}
				name := scope + "/" + orDefault(level, "default") + "/" + w.name
				t.Run(name, func(t *testing.T) {
					a := w.transport(t, rig, h, w.query, w.vars)
					if len(a.errors) > 0 {
						t.Fatalf("errors: %v", a.errors)
					}
					if want == "full" && a.level != "" {
						t.Errorf("full data carries extensions.customerData (level %q)", a.level)
					}
					if want != "full" && a.level != want {
						t.Errorf("extensions.customerData.level %q, want %q", a.level, want)
					}
					listed := 0
					for _, c := range w.customers {
						for _, f := range customerFields {
							if w.only != nil && !slices.Contains(w.only, f) {
								continue
							}
							key := orDefault(w.alias[f], f)
							path := append(slices.Clone(c.path), key)
							got := at(a.data, path)
							if exp := documented(want, f, c.rec); got != exp {
								t.Errorf("%s: %v, want %v", f, got, exp)
							}
							pj, _ := json.Marshal(path)
							if restrictedAt(want, f) != a.masked[string(pj)] {
								t.Errorf("%s: listed in maskedPaths %v, want %v (%v)", f, a.masked[string(pj)], restrictedAt(want, f), keys(a.masked))
							}
							if restrictedAt(want, f) {
								listed++
							}
							cells++
						}
					}
					if w.alsoName != nil {
						path := append(slices.Clone(w.alsoName), "name")
						if got, exp := at(a.data, path), documented(want, "name", payRec(pay)); got != exp {
							t.Errorf("%v: %v, want %v", path, got, exp)
						}
						pj, _ := json.Marshal(path)
						if a.masked[string(pj)] != restrictedAt(want, "name") {
							t.Errorf("%v listed %v, want %v", path, a.masked[string(pj)], restrictedAt(want, "name"))
						}
						if restrictedAt(want, "name") {
							listed++
						}
					}
					if listed != len(a.masked) {
						t.Errorf("maskedPaths lists %d paths, want %d: %v", len(a.masked), listed, keys(a.masked))
					}
				})
			}
		}
	}
	t.Logf("%d cells checked", cells)

	// The suite's logs, /metrics and traces hold none of the sandbox's
	// customer data.
	_ = rig.tp.ForceFlush(context.Background())
	var pii []string
	for _, b := range rig.Biz {
		for _, p := range rig.Sandbox.Payments(b.APIKey) {
			pii = append(pii, p.Customer.Email, p.Customer.Phone, p.Customer.Address, p.Customer.Name)
		}
	}
	metrics := string(rig.Do(t, http.MethodGet, "/metrics", nil, nil).Raw)
	var traces strings.Builder
	spans := rig.spans.GetSpans()
	for _, s := range spans {
		b, _ := json.Marshal(s.Attributes)
		fmt.Fprintf(&traces, "%s %s %s %v\n", s.Name, b, s.Status.Description, s.Events)
	}
	logs := rig.logs.String()
	if !strings.Contains(logs, `"msg":"request"`) || len(spans) == 0 || !strings.Contains(metrics, "paygraph_") {
		t.Fatalf("no access log, spans or metrics were captured: the scan below would prove nothing")
	}
	for _, s := range pii {
		for where, text := range map[string]string{"the logs": logs, "/metrics": metrics, "the traces": traces.String()} {
			if strings.Contains(text, s) {
				t.Errorf("%s hold customer data %q", where, s)
			}
		}
	}
	t.Logf("scanned %d bytes of logs, %d of /metrics and %d spans for %d values", len(logs), len(metrics), len(spans), len(pii))
}

func orDefault(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func keys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// A withheld address is not fetched: a 50-item list selecting every
// customer's address makes 1 REST call under a masked or none token, and
// the estimate and the receipt (extensions.cost) count 1; with full data,
// 51 (the list and 50 details).
func TestWithheldAddressMakesNoRESTCall(t *testing.T) {
	rig := startPIIRig(t, nil)
	const q = `{ payments(first: 50) { nodes { id customer { name address } } } }`
	for _, tc := range []struct {
		level string
		calls int
	}{{"masked", 1}, {"none", 1}, {"full", 51}} {
		t.Run(tc.level, func(t *testing.T) {
			h := http.Header{"Authorization": {"Bearer " + rig.mint(t, `{"kind":"all"}`, tc.level)}}
			rig.Sandbox.ResetCalls()
			r := rig.Do(t, http.MethodPost, "/graphql", h, []byte(`{"query":`+strconv.Quote(q)+`}`))
			var receipt struct {
				Extensions struct {
					Cost struct{ Estimated, Made *int } `json:"cost"`
				} `json:"extensions"`
			}
			if err := json.Unmarshal(r.Raw, &receipt); err != nil {
				t.Fatal(err)
			}
			if c := receipt.Extensions.Cost; c.Estimated == nil || c.Made == nil || *c.Estimated != tc.calls || *c.Made != tc.calls {
				t.Errorf("extensions.cost %+v, want %d estimated and made", receipt.Extensions.Cost, tc.calls)
			}
			a := newAnswer()
			var p payload
			if err := json.Unmarshal(r.Raw, &p); err != nil {
				t.Fatal(err)
			}
			a.add(t, p)
			if len(a.errors) > 0 {
				t.Fatal(a.errors)
			}
			if n := len(at(a.data, []any{"payments", "nodes"}).([]any)); n != 50 {
				t.Fatalf("%d items, want 50", n)
			}
			if got := rig.Sandbox.CallCount(""); got != tc.calls {
				t.Errorf("%d REST calls, want %d", got, tc.calls)
			}
		})
	}
	// The complexity limit counts the same: at MAX_COMPLEXITY=10, the
	// masked list is served and the full one refused before any call.
	small := startPIIRig(t, map[string]string{"MAX_COMPLEXITY": "10"})
	masked := http.Header{"Authorization": {"Bearer " + small.mint(t, `{"kind":"all"}`, "masked")}}
	full := http.Header{"Authorization": {"Bearer " + small.mint(t, `{"kind":"all"}`, "full")}}
	if a := viaPOST(t, small, masked, q, nil); len(a.errors) > 0 {
		t.Errorf("masked, MAX_COMPLEXITY=10: %v", a.errors)
	}
	small.Sandbox.ResetCalls()
	if a := viaPOST(t, small, full, q, nil); len(a.errors) == 0 || !strings.HasPrefix(a.errors[0], "COMPLEXITY_LIMIT_EXCEEDED") {
		t.Errorf("full, MAX_COMPLEXITY=10: %v, want COMPLEXITY_LIMIT_EXCEEDED", a.errors)
	}
	if n := small.Sandbox.CallCount(""); n != 0 {
		t.Errorf("%d REST calls for a refused operation", n)
	}
}

// CUSTOMER_DATA_MAX lowers the two credential headers' level, caps what a
// mint may ask for, and lowers a token's level when it is read.
func TestCustomerDataMax(t *testing.T) {
	keys := sessiontoken.GenerateKey()
	open := startPIIRig(t, map[string]string{"TOKEN_KEYS": keys})
	fullToken := open.mint(t, `{"kind":"all"}`, "full")
	rig := startPIIRig(t, map[string]string{"TOKEN_KEYS": keys, "CUSTOMER_DATA_MAX": "masked"})
	pay := rig.Sandbox.Payments(rig.biz.APIKey)[0]
	q := fmt.Sprintf(`{ payment(id: %q) { customer { email address } } }`, pay.ID)
	check := func(name string, h http.Header) {
		t.Run(name, func(t *testing.T) {
			a := viaPOST(t, rig, h, q, nil)
			if len(a.errors) > 0 {
				t.Fatal(a.errors)
			}
			rec := record{"email": sp(pay.Customer.Email), "address": sp(pay.Customer.Address)}
			for _, f := range []string{"email", "address"} {
				if got, want := at(a.data, []any{"payment", "customer", f}), documented("masked", f, rec); got != want {
					t.Errorf("%s: %v, want %v", f, got, want)
				}
			}
			if a.level != "masked" {
				t.Errorf("level %q, want masked", a.level)
			}
		})
	}
	check("headers", creds(rig.biz))
	check("a full token minted before the maximum was lowered", http.Header{"Authorization": {"Bearer " + fullToken}})
	check("a token minted with the default", http.Header{"Authorization": {"Bearer " + rig.mint(t, `{"kind":"all"}`, "")}})
	r := rig.Do(t, http.MethodPost, "/auth/token", creds(rig.biz), []byte(`{"scope":{"kind":"all"},"customerData":"full"}`))
	if r.Status != http.StatusBadRequest || !strings.Contains(string(r.Raw), "CUSTOMER_DATA_MAX") {
		t.Errorf("a mint above the maximum: %d %s, want 400 naming CUSTOMER_DATA_MAX", r.Status, r.Raw)
	}
}

// docs/clients.md's customer-data example answers what it says it
// answers: its fetch's query, with a masked checkout-session token of the
// sandbox's first business, gives the json block after it, masked forms
// and paths as written.
func TestClientsDocCustomerDataExample(t *testing.T) {
	raw, err := os.ReadFile("../docs/clients.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	_, after, ok := strings.Cut(doc, "<!-- customer-data-example")
	if !ok {
		t.Fatal("docs/clients.md has no customer-data example")
	}
	m := regexp.MustCompile("(?s)query: `(.*?)`.*?```json\n(.*?)```").FindStringSubmatch(after)
	if m == nil {
		t.Fatal("the customer-data example has no fetch query followed by a json block")
	}
	rig := startPIIRig(t, nil)
	fx := rig.Sandbox.Fixtures()[0]
	token := rig.mint(t, `{"kind":"checkoutSession","id":"`+fx.CheckoutReference+`"}`, "masked")
	query := strings.ReplaceAll(m[1], "REF123", fx.CheckoutReference)
	r := rig.Do(t, http.MethodPost, "/graphql", http.Header{"Authorization": {"Bearer " + token}},
		[]byte(`{"query":`+strconv.Quote(query)+`}`))
	// The data and extensions.customerData; the other extensions (the
	// REST-call receipt) are not the example's.
	type shown struct {
		Data       any `json:"data"`
		Errors     any `json:"errors"`
		Extensions struct {
			CustomerData any `json:"customerData"`
		} `json:"extensions"`
	}
	var got, want shown
	if err := json.Unmarshal(r.Raw, &got); err != nil {
		t.Fatalf("%d %s", r.Status, r.Raw)
	}
	if err := json.Unmarshal([]byte(m[2]), &want); err != nil {
		t.Fatalf("the example's json block: %v", err)
	}
	if want.Data == nil || want.Extensions.CustomerData == nil {
		t.Fatalf("the example's json block shows no data or no extensions.customerData: %s", m[2])
	}
	if d := gocmp.Diff(want, got); d != "" {
		t.Errorf("the documented answer differs from the gateway's (-doc +gateway):\n%s", d)
	}
}

package gqlhttp_test

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	respbudget "paygraph/graph/budget"
	"paygraph/graph/errcode"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"paygraph/gqlhttp"
	"paygraph/graph"
	"paygraph/restclient"
)

// Accept headers as the clients send them.
const (
	acceptApollo = "multipart/mixed;deferSpec=20220824,application/graphql-response+json,application/json;q=0.9"
	acceptURQL   = "multipart/mixed, application/graphql-response+json, application/graphql+json, application/json"
	ctMultipart  = `multipart/mixed; boundary="-"; deferSpec=20220824`
)

// Payments with their customers' addresses deferred (Customer.address is
// one REST retrieve per payment: the fragment gqlgen defers), and the
// same without @defer.
const (
	deferredQuery = `{ payments(first: 3) { nodes { id status customer { name ... @defer { address } } } } }`
	plainQuery    = `{ payments(first: 3) { nodes { id status customer { name address } } } }`
)

// deferREST lists n payments (customers without address, as the list
// endpoint gives them) and retrieves each with its address. A retrieve
// waits for gate, when set, or for its context; fail names payments whose
// retrieve fails. It counts the retrieves that returned.
type deferREST struct {
	graph.REST
	n       int
	address string // each payment's address is address + its id
	gate    chan struct{}
	fail    map[string]*restclient.Error
	started chan string // told of each retrieve, when set
	done    atomic.Int32
}

func paymentID(i int) string { return fmt.Sprintf("pay_%03d", i) }

func (s *deferREST) ListPayments(ctx context.Context, p restclient.ListParams) (*restclient.PaymentPage, error) {
	page := &restclient.PaymentPage{}
	for i := range s.n {
		name := "Customer " + paymentID(i)
		page.Data = append(page.Data, restclient.Payment{ID: paymentID(i), Status: restclient.StatusSucceeded,
			Amount: 1250, Currency: "BDT", Customer: restclient.Customer{Name: &name}})
	}
	return page, nil
}

func (s *deferREST) GetPayment(ctx context.Context, id string) (*restclient.Payment, error) {
	if s.started != nil {
		s.started <- id
	}
	if s.gate != nil {
		select {
		case <-s.gate:
		case <-ctx.Done():
			return nil, &restclient.Error{Kind: restclient.KindTimeout, Message: "REST API did not answer before the caller's deadline"}
		}
	}
	defer s.done.Add(1)
	if err := s.fail[id]; err != nil {
		return nil, err
	}
	name, address := "Customer "+id, s.address+id
	return &restclient.Payment{ID: id, Status: restclient.StatusSucceeded, Amount: 1250, Currency: "BDT",
		Customer: restclient.Customer{Name: &name, Address: &address}, Detailed: true}, nil
}

// deferEdge is the /graphql route with the edge's transports over rest,
// with MAX_RESPONSE_BYTES maxResponse (the transport's count; the
// resolvers' response budget is left out, so that the count is what is
// tested) and Compress(compressMin) in front when compressMin > 0.
func deferEdge(t *testing.T, rest graph.REST, maxResponse int64, timeout time.Duration, compressMin int) http.Handler {
	t.Helper()
	srv := graph.NewServer(graph.ServerConfig{MaxResponseBytes: -1})
	gqlhttp.AddTransports(srv, maxResponse)
	h := asMerchant(gqlhttp.Methods(gqlhttp.Deadline(timeout, 0)(graph.LoadersMiddleware(rest, nil)(srv))))
	if compressMin > 0 {
		compress, err := gqlhttp.Compress(compressMin)
		if err != nil {
			t.Fatal(err)
		}
		h = compress(h)
	}
	return h
}

// asMerchant gives every request a merchant's credentials, read as the
// gateway reads them (Credentials).
func asMerchant(h http.Handler) http.Handler {
	h = gqlhttp.Credentials(h)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Header.Set(restclient.HeaderAPIKey, "key_demo")
		r.Header.Set(restclient.HeaderAPISecret, "secret_demo")
		h.ServeHTTP(w, r)
	})
}

// postQuery sends query to url over POST with accept (and
// acceptEncoding), and returns the response, its body unread.
func postQuery(t *testing.T, url, accept, acceptEncoding, query string) *http.Response {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"query": query})
	req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", accept)
	if acceptEncoding != "" {
		req.Header.Set("Accept-Encoding", acceptEncoding)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { res.Body.Close() })
	return res
}

// multipartReader reads the parts of a stream as a client that does not
// look ahead (Apollo Client's reader) does: a part is complete once the
// boundary after it has arrived.
type multipartReader struct {
	r     *bufio.Reader
	first bool
	bytes int // read so far
}

type streamPart struct {
	Header string         // the part's headers, as sent
	Body   map[string]any // its JSON
	Raw    string
	Last   bool // the closing boundary followed it (readAll)
	end    bool // not a part: the closing boundary
}

func newMultipartReader(r io.Reader) *multipartReader {
	return &multipartReader{r: bufio.NewReader(r), first: true}
}

// next reads one part (without reading ahead of it); the test fails on
// anything out of format. After the last part it returns a part with
// end set.
func (m *multipartReader) next(t *testing.T) streamPart {
	t.Helper()
	if m.first {
		m.expect(t, "\r\n---")
		m.first = false
	}
	after := make([]byte, 2)
	if _, err := io.ReadFull(m.r, after); err != nil {
		t.Fatalf("stream ended after a boundary: %v", err)
	}
	m.bytes += 2
	if string(after) == "--" {
		m.expect(t, "\r\n")
		if rest, _ := io.ReadAll(m.r); len(rest) > 0 {
			t.Errorf("bytes after the closing boundary: %q", rest)
		}
		return streamPart{end: true}
	}
	if string(after) != "\r\n" {
		t.Fatalf("after a boundary: %q", after)
	}
	var buf strings.Builder
	for !strings.HasSuffix(buf.String(), "\r\n---") {
		b, err := m.r.ReadByte()
		if err != nil {
			t.Fatalf("stream ended inside a part: %v: %q", err, buf.String())
		}
		m.bytes++
		buf.WriteByte(b)
	}
	raw := strings.TrimSuffix(buf.String(), "\r\n---")
	header, body, ok := strings.Cut(raw, "\r\n\r\n")
	if !ok {
		t.Fatalf("part without a blank line after its headers: %q", raw)
	}
	p := streamPart{Header: header, Raw: body}
	if err := json.Unmarshal([]byte(body), &p.Body); err != nil {
		t.Fatalf("part body is not JSON: %v: %q", err, body)
	}
	return p
}

func (m *multipartReader) expect(t *testing.T, s string) {
	t.Helper()
	b := make([]byte, len(s))
	if _, err := io.ReadFull(m.r, b); err != nil || string(b) != s {
		t.Fatalf("stream: want %q, got %q (%v)", s, b, err)
	}
	m.bytes += len(s)
}

// readAll reads the parts after the first up to the closing boundary;
// the last is marked Last.
func (m *multipartReader) readAll(t *testing.T) []streamPart {
	t.Helper()
	var parts []streamPart
	for {
		p := m.next(t)
		if p.end {
			if len(parts) == 0 {
				t.Fatal("no part after the first")
			}
			parts[len(parts)-1].Last = true
			return parts
		}
		parts = append(parts, p)
		if len(parts) > 100 {
			t.Fatal("no closing boundary after 100 parts")
		}
	}
}

// merge applies the incremental entries of parts to data, as a client
// does, and returns the errors they carried.
func merge(t *testing.T, data map[string]any, parts []streamPart) []any {
	t.Helper()
	var errs []any
	for _, p := range parts {
		if e, ok := p.Body["errors"].([]any); ok {
			errs = append(errs, e...)
		}
		inc, _ := p.Body["incremental"].([]any)
		for _, entry := range inc {
			entry := entry.(map[string]any)
			if e, ok := entry["errors"].([]any); ok {
				errs = append(errs, e...)
			}
			var at any = data
			for _, el := range entry["path"].([]any) {
				switch el := el.(type) {
				case string:
					at = at.(map[string]any)[el]
				case float64:
					at = at.([]any)[int(el)]
				}
			}
			for k, v := range entry["data"].(map[string]any) {
				at.(map[string]any)[k] = v
			}
		}
	}
	return errs
}

// plainData is the data of the query without @defer (plainQuery, or the
// query given).
func plainData(t *testing.T, h http.Handler, query ...string) map[string]any {
	t.Helper()
	q := plainQuery
	if len(query) > 0 {
		q = query[0]
	}
	a := send(t, h, http.MethodPost, "application/json", q, nil)
	if a.Body["errors"] != nil {
		t.Fatalf("plain query: %v", a.Body)
	}
	return a.Body["data"].(map[string]any)
}

// TestDeferStreamsMultipart: a client that accepts multipart/mixed (as
// Apollo Client 4 and urql say it) gets the list in a first part at once,
// while every address is still being fetched, then the addresses in later
// parts, as incremental entries at the customer's path, the last with
// hasNext false and the closing boundary; merged, the data is the
// undeferred query's. POST and GET answer alike.
func TestDeferStreamsMultipart(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ name, method, accept string }{
		{"Apollo Client 4 over POST", http.MethodPost, acceptApollo},
		{"urql over POST", http.MethodPost, acceptURQL},
		{"Apollo Client 4 over GET", http.MethodGet, acceptApollo},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rest := &deferREST{n: 3, address: "House 1, Road 2, ", gate: make(chan struct{}), started: make(chan string, 3)}
			h := deferEdge(t, rest, 0, 0, 0)
			srv := httptest.NewServer(h)
			defer srv.Close()
			var res *http.Response
			if tt.method == http.MethodPost {
				res = postQuery(t, srv.URL, tt.accept, "", deferredQuery)
			} else {
				req, _ := http.NewRequest(http.MethodGet, srv.URL+"?query="+url.QueryEscape(deferredQuery), nil)
				req.Header.Set("Accept", tt.accept)
				var err error
				if res, err = http.DefaultClient.Do(req); err != nil {
					t.Fatal(err)
				}
				defer res.Body.Close()
			}
			if res.StatusCode != http.StatusOK || res.Header.Get("Content-Type") != ctMultipart {
				t.Fatalf("status %d, Content-Type %q; want 200, %q", res.StatusCode, res.Header.Get("Content-Type"), ctMultipart)
			}
			m := newMultipartReader(res.Body)
			first := m.next(t)
			// Read while every retrieve waits for the gate: the list came first.
			if n := rest.done.Load(); n != 0 {
				t.Fatalf("%d addresses were fetched before the first part was read", n)
			}
			close(rest.gate)
			if first.Header != "Content-Type: application/json; charset=utf-8" {
				t.Errorf("part headers %q", first.Header)
			}
			if first.Body["hasNext"] != true {
				t.Fatalf("first part: hasNext %v; want true", first.Body["hasNext"])
			}
			data := first.Body["data"].(map[string]any)
			for i, node := range data["payments"].(map[string]any)["nodes"].([]any) {
				c := node.(map[string]any)["customer"].(map[string]any)
				if _, has := c["address"]; c["name"] != "Customer "+paymentID(i) || has {
					t.Errorf("first part, item %d: customer %v; want its name and no address yet (absent, not null)", i, c)
				}
			}
			later := m.readAll(t)
			var paths []string
			for _, p := range later {
				for _, e := range p.Body["incremental"].([]any) {
					b, _ := json.Marshal(e.(map[string]any)["path"])
					paths = append(paths, string(b))
				}
				if p.Body["hasNext"] != !p.Last {
					t.Errorf("part %s: hasNext %v, last %v", p.Raw, p.Body["hasNext"], p.Last)
				}
			}
			if len(paths) != 3 {
				t.Errorf("incremental paths %v; want one per payment", paths)
			}
			if errs := merge(t, data, later); errs != nil {
				t.Errorf("errors: %v", errs)
			}
			if diff := cmp.Diff(plainData(t, deferEdge(t, &deferREST{n: 3, address: "House 1, Road 2, "}, 0, 0, 0)), data); diff != "" {
				t.Errorf("merged data differs from the undeferred query's (-want +got):\n%s", diff)
			}
		})
	}
}

// TestDeferredFieldsAbsentFromFirstPart: the incremental delivery format
// delivers a deferred field once, in its fragment's incremental entry, so
// the initial payload leaves it out (gqlgen writes null there; graph/gen
// points its marshallers at graph/deferred.go). A client that merges
// parts, such as Apollo Client, would otherwise take a first part with
// null for a non-null field (Payment.customer) as complete. A fragment
// gqlgen runs in line (plain fields) stays in the first part, and the
// merged data is the undeferred query's either way.
func TestDeferredFieldsAbsentFromFirstPart(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name, query, plain string
		absent, present    []string // keys of each list item, or item.customer for "customer.x"
	}{
		{"a field of a nested object", deferredQuery, plainQuery, []string{"customer.address"}, []string{"id", "status", "customer.name"}},
		{"a non-null field with its selection", `{ payments(first: 3) { nodes { id ... @defer { customer { name address } } } } }`,
			`{ payments(first: 3) { nodes { id customer { name address } } } }`, []string{"customer"}, []string{"id"}},
		{"a fragment run in line", `{ payments(first: 3) { nodes { id ... @defer { status } customer { ... @defer { address } } } } }`,
			`{ payments(first: 3) { nodes { id status customer { address } } } }`, []string{"customer.address"}, []string{"id", "status", "customer"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(deferEdge(t, &deferREST{n: 3, address: "Road 7, "}, 0, 0, 0))
			defer srv.Close()
			res := postQuery(t, srv.URL, acceptApollo, "", tt.query)
			if res.Header.Get("Content-Type") != ctMultipart {
				t.Fatalf("Content-Type %q; want %q", res.Header.Get("Content-Type"), ctMultipart)
			}
			m := newMultipartReader(res.Body)
			first := m.next(t)
			data := first.Body["data"].(map[string]any)
			for i, node := range data["payments"].(map[string]any)["nodes"].([]any) {
				item := node.(map[string]any)
				has := func(key string) bool {
					obj := item
					if k, sub, ok := strings.Cut(key, "."); ok {
						c, _ := item[k].(map[string]any)
						obj, key = c, sub
					}
					_, ok := obj[key]
					return ok
				}
				for _, k := range tt.absent {
					if has(k) {
						t.Errorf("first part, item %d: %s is there (%v); a deferred field must be absent", i, k, item)
					}
				}
				for _, k := range tt.present {
					if !has(k) {
						t.Errorf("first part, item %d: %s is missing (%v)", i, k, item)
					}
				}
			}
			if errs := merge(t, data, m.readAll(t)); errs != nil {
				t.Errorf("errors: %v", errs)
			}
			want := plainData(t, deferEdge(t, &deferREST{n: 3, address: "Road 7, "}, 0, 0, 0), tt.plain)
			if diff := cmp.Diff(want, data); diff != "" {
				t.Errorf("merged data differs from the undeferred query's (-want +got):\n%s", diff)
			}
		})
	}
}

// TestDeferWithoutMultipartAccept: a client that does not accept
// multipart/mixed (or asks for another deferSpec) gets the complete
// result in one JSON payload, the undeferred query's, without hasNext.
func TestDeferWithoutMultipartAccept(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ name, accept, contentType string }{
		{"no Accept", "", ctJSON},
		{"application/json", "application/json", ctJSON},
		{"graphql-response+json", gr, ctGR},
		{"another deferSpec", "multipart/mixed;deferSpec=20230621, application/json", ctJSON},
		{"multipart refused by q=0", "multipart/mixed;q=0, application/json", ctJSON},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := deferEdge(t, &deferREST{n: 3, address: "Road "}, 0, 0, 0)
			a := send(t, h, http.MethodPost, tt.accept, deferredQuery, nil)
			want := exchangeAnswer{Status: 200, ContentType: tt.contentType, Body: map[string]any{"data": plainData(t, h)}}
			if diff := cmp.Diff(want, a); diff != "" {
				t.Errorf("answer (-want +got):\n%s", diff)
			}
		})
	}
}

// TestDeferNothingDeferred: a multipart client whose operation defers
// nothing gets one JSON payload (Apollo Client and urql take either).
func TestDeferNothingDeferred(t *testing.T) {
	t.Parallel()
	h := deferEdge(t, &deferREST{n: 2, address: "Road "}, 0, 0, 0)
	a := send(t, h, http.MethodPost, acceptURQL, plainQuery, nil)
	if a.Status != 200 || a.ContentType != ctGR || a.Body["hasNext"] != nil || a.Body["data"] == nil {
		t.Errorf("answer %+v; want 200, %s, the data without hasNext", a, ctGR)
	}
}

// TestDeferErrorsKeepCodePathLocation: an error inside a deferred
// fragment travels in its incremental entry with its code, its full path
// and its location in the document.
func TestDeferErrorsKeepCodePathLocation(t *testing.T) {
	t.Parallel()
	rest := &deferREST{n: 3, address: "Road ", fail: map[string]*restclient.Error{
		paymentID(1): {Kind: restclient.KindNotFound, Status: 404, Message: "payment not found"},
	}}
	srv := httptest.NewServer(deferEdge(t, rest, 0, 0, 0))
	defer srv.Close()
	res := postQuery(t, srv.URL, acceptApollo, "", deferredQuery)
	m := newMultipartReader(res.Body)
	first := m.next(t)
	errs := merge(t, first.Body["data"].(map[string]any), m.readAll(t))
	want := []any{map[string]any{
		"message":    "payment not found",
		"path":       []any{"payments", "nodes", 1.0, "customer", "address"},
		"locations":  []any{map[string]any{"line": 1.0, "column": float64(strings.Index(deferredQuery, "address") + 1)}},
		"extensions": map[string]any{"code": errcode.NotFound},
	}}
	if diff := cmp.Diff(want, errs, cmp.FilterPath(func(p cmp.Path) bool {
		return p.Last().String() == `["message"]` // the REST message's wording is restclient's
	}, cmp.Ignore())); diff != "" {
		t.Errorf("deferred errors (-want +got):\n%s", diff)
	}
}

// TestDeferBudgetCountsAllParts: MAX_RESPONSE_BYTES counts every part:
// the part that would pass it is not written, and the stream ends with
// RESPONSE_TOO_LARGE; a first part already over it is the one JSON error.
func TestDeferBudgetCountsAllParts(t *testing.T) {
	t.Parallel()
	address := strings.Repeat("x", 2000) // each incremental entry is over 2 KB
	t.Run("mid-stream", func(t *testing.T) {
		// The first part (about 440 bytes) fits, and one address or none
		// (results ready together share a part: TestIncrementalCutsPart
		// cuts after a written part deterministically); not all three.
		const maxBytes = 3000
		srv := httptest.NewServer(deferEdge(t, &deferREST{n: 3, address: address}, maxBytes, 0, 0))
		defer srv.Close()
		res := postQuery(t, srv.URL, acceptApollo, "", deferredQuery)
		if res.Header.Get("Content-Type") != ctMultipart {
			t.Fatalf("Content-Type %q", res.Header.Get("Content-Type"))
		}
		m := newMultipartReader(res.Body)
		m.next(t)
		var last streamPart
		before := 0 // the bytes written before the last part
		for {
			start := m.bytes
			p := m.next(t)
			if p.end {
				break
			}
			last, before = p, start
		}
		if before > maxBytes {
			t.Errorf("%d bytes were written before the error part; the budget is %d", before, maxBytes)
		}
		t.Logf("%d bytes before the error part (budget %d), %d in all", before, maxBytes, m.bytes)
		want := map[string]any{"hasNext": false, "errors": []any{map[string]any{
			"message":    respbudget.TooLarge(maxBytes).Message,
			"extensions": map[string]any{"code": errcode.ResponseTooLarge}}}}
		if diff := cmp.Diff(want, last.Body); diff != "" {
			t.Errorf("last part (-want +got):\n%s", diff)
		}
	})
	t.Run("first part", func(t *testing.T) {
		h := deferEdge(t, &deferREST{n: 3, address: address}, 200, 0, 0)
		a := send(t, h, http.MethodPost, acceptApollo, deferredQuery, nil)
		want := exchangeAnswer{Status: 200, ContentType: ctGR, Body: map[string]any{"data": nil, "errors": []any{map[string]any{
			"message": respbudget.TooLarge(200).Message, "extensions": map[string]any{"code": errcode.ResponseTooLarge}}}}}
		if diff := cmp.Diff(want, a); diff != "" {
			t.Errorf("answer (-want +got):\n%s", diff)
		}
	})
}

// TestDeferResponseBudgetEndsStream: with the resolvers' response budget
// (package graph/budget) the only bound, a deferred fragment that spends
// it ends the stream with RESPONSE_TOO_LARGE too.
func TestDeferResponseBudgetEndsStream(t *testing.T) {
	t.Parallel()
	srv := graph.NewServer(graph.ServerConfig{MaxResponseBytes: 3000})
	gqlhttp.AddTransports(srv, 0)
	// The addresses wait until the first part was read: they would
	// otherwise spend the budget before it, and the answer would be the
	// one JSON error (the response budget fails a response as a whole).
	rest := &deferREST{n: 3, address: strings.Repeat("x", 2000), gate: make(chan struct{})}
	ts := httptest.NewServer(asMerchant(gqlhttp.Methods(graph.LoadersMiddleware(rest, nil)(srv))))
	defer ts.Close()
	m := newMultipartReader(postQuery(t, ts.URL, acceptApollo, "", deferredQuery).Body)
	m.next(t)
	close(rest.gate)
	parts := m.readAll(t)
	last := parts[len(parts)-1].Body
	errs, _ := last["errors"].([]any)
	if last["hasNext"] != false || len(errs) != 1 || errs[0].(map[string]any)["extensions"].(map[string]any)["code"] != errcode.ResponseTooLarge {
		t.Errorf("last part %v; want hasNext false and RESPONSE_TOO_LARGE", last)
	}
}

// TestDeferDeadlineEndsStream: REQUEST_TIMEOUT bounds the whole stream:
// addresses that never come end it at the deadline with UPSTREAM_TIMEOUT
// (in the fragment's entry, or as the stream's own error).
func TestDeferDeadlineEndsStream(t *testing.T) {
	rest := &deferREST{n: 2, address: "Road ", gate: make(chan struct{})} // never opened
	srv := httptest.NewServer(deferEdge(t, rest, 0, 200*time.Millisecond, 0))
	defer srv.Close()
	stranded := gqlhttp.StrandedReaders()
	defer func() {
		// The fragments cut by the deadline drop their results: the
		// executor's wait for one ends with the request (graph/gen's
		// deferWait), so the stream's reader returns and is not left
		// counted as stranded.
		poll := time.NewTicker(10 * time.Millisecond)
		defer poll.Stop()
		deadline := time.After(5 * time.Second)
		for gqlhttp.StrandedReaders() != stranded {
			select {
			case <-poll.C:
			case <-deadline:
				t.Fatalf("a result reader is still blocked 5 s after its stream ended (%d stranded)", gqlhttp.StrandedReaders()-stranded)
			}
		}
	}()
	m := newMultipartReader(postQuery(t, srv.URL, acceptApollo, "", deferredQuery).Body)
	m.next(t)
	parts := m.readAll(t)
	var codes []string
	for _, e := range merge(t, map[string]any{"payments": map[string]any{"nodes": []any{
		map[string]any{"customer": map[string]any{}}, map[string]any{"customer": map[string]any{}}}}}, parts) {
		codes = append(codes, e.(map[string]any)["extensions"].(map[string]any)["code"].(string))
	}
	if len(codes) == 0 {
		t.Fatal("the stream ended at the deadline without an error")
	}
	for _, c := range codes {
		if c != errcode.UpstreamTimeout {
			t.Errorf("codes %v; want %s only", codes, errcode.UpstreamTimeout)
		}
	}
	if parts[len(parts)-1].Body["hasNext"] != false {
		t.Errorf("last part %v", parts[len(parts)-1].Raw)
	}
}

// TestDeferCompressedPartsFlushed: through Compress, each part is flushed
// through the encoder: the first part decodes while the addresses are
// still being fetched.
func TestDeferCompressedPartsFlushed(t *testing.T) {
	t.Parallel()
	rest := &deferREST{n: 3, address: "Road ", gate: make(chan struct{})}
	srv := httptest.NewServer(deferEdge(t, rest, 0, 0, 64))
	defer srv.Close()
	res := postQuery(t, srv.URL, acceptApollo, "gzip", deferredQuery)
	if res.Header.Get("Content-Encoding") != "gzip" || res.Header.Get("Content-Type") != ctMultipart {
		t.Fatalf("Content-Encoding %q, Content-Type %q", res.Header.Get("Content-Encoding"), res.Header.Get("Content-Type"))
	}
	zr, err := gzip.NewReader(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	m := newMultipartReader(zr)
	if first := m.next(t); first.Body["hasNext"] != true || rest.done.Load() != 0 {
		t.Fatalf("first part %s, %d addresses fetched", first.Raw, rest.done.Load())
	}
	close(rest.gate)
	if parts := m.readAll(t); len(parts) == 0 {
		t.Fatal("no later parts")
	}
}

// TestDeferComplexityCountsDeferredFields: a deferred fragment's REST
// calls count against MAX_COMPLEXITY as they do undeferred: the same
// refusal, before any REST call.
func TestDeferComplexityCountsDeferredFields(t *testing.T) {
	t.Parallel()
	for _, q := range []string{deferredQuery, plainQuery} {
		srv := graph.NewServer(graph.ServerConfig{MaxComplexity: 3}) // 1 list + 3 retrieves > 3
		gqlhttp.AddTransports(srv, 0)
		rest := &deferREST{n: 3, address: "Road "}
		h := asMerchant(gqlhttp.Methods(graph.LoadersMiddleware(rest, nil)(srv)))
		a := send(t, h, http.MethodPost, acceptApollo, q, nil)
		errs, _ := a.Body["errors"].([]any)
		if len(errs) != 1 || errs[0].(map[string]any)["extensions"].(map[string]any)["code"] != "COMPLEXITY_LIMIT_EXCEEDED" || rest.done.Load() != 0 {
			t.Errorf("%s: answer %v after %d REST retrieves; want COMPLEXITY_LIMIT_EXCEEDED before any", q, a.Body, rest.done.Load())
		}
	}
}

// TestDeferLabel: a fragment's label travels with each of its results.
func TestDeferLabel(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(deferEdge(t, &deferREST{n: 2, address: "Road "}, 0, 0, 0))
	defer srv.Close()
	m := newMultipartReader(postQuery(t, srv.URL, acceptApollo, "",
		`{ payments(first: 2) { nodes { customer { ... @defer(label: "where") { address } } } } }`).Body)
	m.next(t)
	var labels []any
	for _, p := range m.readAll(t) {
		for _, e := range p.Body["incremental"].([]any) {
			labels = append(labels, e.(map[string]any)["label"])
		}
	}
	if diff := cmp.Diff([]any{"where", "where"}, labels); diff != "" {
		t.Errorf("labels (-want +got):\n%s", diff)
	}
}

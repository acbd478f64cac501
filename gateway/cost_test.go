package gateway_test

// The cost receipt and the dry run (issue 26), checked against the
// sandbox's own log of the REST calls it served, over a generated corpus
// of operations: aliases, node and nodes, lists with and without
// customer.address, checkout sessions with their payment, fragments and
// @defer.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"mime"
	"mime/multipart"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"paygraph/sandbox"
)

// receipt is extensions.cost as docs/clients.md documents it.
type receipt struct {
	Estimated int `json:"estimated"`
	Made      int `json:"made"`
	Retries   int `json:"retries"`
	Saved     int `json:"saved"`
	Unmade    *struct {
		Deduplicated int `json:"deduplicated"`
		ShortPages   int `json:"shortPages"`
		NotReached   int `json:"notReached"`
	} `json:"unmade"`
	Budget *struct {
		Remaining int `json:"remaining"`
		Limit     int `json:"limit"`
	} `json:"budget"`
	Calls []struct {
		Route        string `json:"route"`
		ID           string `json:"id"`
		Status       int    `json:"status"`
		Bytes        int64  `json:"bytes"`
		Retries      int    `json:"retries"`
		Deduplicated int    `json:"deduplicated"`
	} `json:"calls"`
}

// plan is a dry run's extensions.plan.
type plan struct {
	Estimated int `json:"estimated"`
	Levels    []struct {
		Level int `json:"level"`
		Calls []struct {
			Route string `json:"route"`
			ID    string `json:"id"`
			Calls int    `json:"calls"`
			Path  string `json:"path"`
			UpTo  bool   `json:"upTo"`
		} `json:"calls"`
	} `json:"levels"`
	Admitted bool `json:"admitted"`
}

func extensionsOf(t *testing.T, raw []byte) (r *receipt, p *plan) {
	t.Helper()
	var body struct {
		Extensions struct {
			Cost *receipt `json:"cost"`
			Plan *plan    `json:"plan"`
		} `json:"extensions"`
	}
	if err := json.Unmarshal(raw, &body); err != nil {
		t.Fatalf("answer %s: %v", raw, err)
	}
	return body.Extensions.Cost, body.Extensions.Plan
}

// corpusOp is one generated operation; disjoint: no two of its parts can
// turn out to ask for the same record (so its estimate must be exact).
type corpusOp struct {
	query    string
	disjoint bool
}

// corpus generates n operations from the business's data, deterministically.
func corpus(sb *sandbox.Server, b sandbox.Business, n int) []corpusOp {
	pays := sb.Payments(b.APIKey)
	links := sb.PaymentLinks(b.APIKey)
	sessions := sb.CheckoutSessions(b.APIKey)
	sessionPays := map[string]bool{}
	for _, s := range sessions {
		sessionPays[s.PaymentID] = true
	}
	// Payments past the lists' first pages and behind no session: asking
	// for them overlaps with nothing else a disjoint operation asks.
	var tail []string
	for _, p := range pays[len(pays)/2:] {
		if !sessionPays[p.ID] {
			tail = append(tail, p.ID)
		}
	}
	rng := rand.New(rand.NewPCG(26, 1))
	pick := func(ids []string) string { return ids[rng.IntN(len(ids))] }
	var linkIDs, refs []string
	for _, l := range links {
		linkIDs = append(linkIDs, l.ID)
	}
	for _, s := range sessions {
		refs = append(refs, s.Reference)
	}
	payFields := func() string {
		f := "id status amount { amount paisa }"
		switch rng.IntN(4) {
		case 0:
			f += " customer { name address }"
		case 1:
			f += " ... @defer { customer { address } }"
		case 2:
			f += " ...PayFields"
		}
		return f
	}
	var ops []corpusOp
	for len(ops) < n {
		var parts []string
		usedFragment := false
		lists, withSessions := false, false
		for k := 0; k < 1+rng.IntN(4); k++ {
			alias := fmt.Sprintf("f%d", k)
			var part string
			switch rng.IntN(7) {
			case 0: // a payment, maybe twice under two aliases
				id := pick(tail)
				part = fmt.Sprintf(`%s: payment(id: %q) { %s }`, alias, id, payFields())
				if rng.IntN(2) == 0 {
					part += fmt.Sprintf(` %sb: payment(id: %q) { id }`, alias, id)
				}
			case 1: // node, a payment or a link
				id := pick(tail)
				if rng.IntN(2) == 0 {
					id = pick(linkIDs)
				}
				part = fmt.Sprintf(`%s: node(id: %q) { id ... on Payment { status } ... on PaymentLink { url } }`, alias, id)
			case 2: // nodes, with a repeated id
				a, c := pick(tail), pick(linkIDs)
				part = fmt.Sprintf(`%s: nodes(ids: [%q, %q, %q]) { id }`, alias, a, c, a)
			case 3: // a list without the address
				lists = true
				part = fmt.Sprintf(`%s: payments(first: %d) { edges { cursor node { id status } } pageInfo { hasNextPage } }`, alias, 1+rng.IntN(10))
			case 4: // a list with the address, through edges and nodes
				lists = true
				part = fmt.Sprintf(`%s: payments(first: %d, status: SUCCEEDED) { nodes { id customer { address } } edges { node { customer { address } } } }`, alias, 1+rng.IntN(8))
			case 5: // a checkout session with its payment
				withSessions = true
				part = fmt.Sprintf(`%s: checkoutSession(id: %q) { reference paymentStatus payment { id status } }`, alias, pick(refs))
			case 6: // fragments
				usedFragment = true
				part = fmt.Sprintf(`...Q%d`, k)
				parts = append(parts, fmt.Sprintf("\nfragment Q%d on Query { %s: paymentLink(id: %q) { url title } }", k, alias, pick(linkIDs)))
			}
			parts = append([]string{part}, parts...)
		}
		var q, frags strings.Builder
		q.WriteString("{ ")
		for _, p := range parts {
			if strings.HasPrefix(p, "\nfragment") {
				frags.WriteString(p)
			} else {
				q.WriteString(p + " ")
			}
		}
		q.WriteString("}")
		query := q.String() + frags.String()
		if strings.Contains(query, "...PayFields") {
			query += "\nfragment PayFields on Payment { customer { email address } }"
		}
		_ = usedFragment
		ops = append(ops, corpusOp{query: query, disjoint: !(lists && withSessions) && !lists})
	}
	return ops
}

// TestCostReceiptMatchesTheRESTLog: for every operation of the corpus, the
// REST calls the sandbox served are the receipt's made (plus its retries),
// never more than its estimate; with full pages and nothing failing, the
// estimate is made, save what two parts turned out to share (the receipt's
// deduplicated), and exactly made when no two parts can share; a dry run
// of each makes no call and plans the estimate.
func TestCostReceiptMatchesTheRESTLog(t *testing.T) {
	t.Parallel()
	g := startGateway(t, setup{})
	b := g.Biz[0]
	h := creds(b)
	exact := 0
	for i, op := range corpus(g.Sandbox, b, 60) {
		t.Run(fmt.Sprintf("op%02d", i), func(t *testing.T) {
			before := g.Sandbox.CallCount("")
			dry := g.PostBody(t, h, map[string]any{"query": op.query, "extensions": map[string]any{"dryRun": true}})
			if n := g.Sandbox.CallCount(""); n != before {
				t.Fatalf("the dry run made %d REST calls:\n%s", n-before, op.query)
			}
			_, p := extensionsOf(t, dry.Raw)
			if p == nil || !p.Admitted || string(dry.Data) != "null" || len(dry.Errors) > 0 {
				t.Fatalf("dry run answered %s", dry.Raw)
			}
			levelSum := 0
			for _, l := range p.Levels {
				for _, c := range l.Calls {
					levelSum += c.Calls
				}
			}
			if levelSum != p.Estimated {
				t.Errorf("plan levels sum to %d, estimate %d", levelSum, p.Estimated)
			}

			before = g.Sandbox.CallCount("")
			r := g.Post(t, h, op.query, nil).WantNoErrors(t)
			logged := g.Sandbox.CallCount("") - before
			c, _ := extensionsOf(t, r.Raw)
			if c == nil {
				t.Fatalf("no receipt: %s", r.Raw)
			}
			if logged != c.Made+c.Retries || c.Retries != 0 {
				t.Errorf("the sandbox logged %d calls; receipt made %d, retries %d", logged, c.Made, c.Retries)
			}
			if c.Made > c.Estimated {
				t.Errorf("made %d > estimated %d", c.Made, c.Estimated)
			}
			if c.Estimated != p.Estimated {
				t.Errorf("receipt estimate %d, dry run's %d", c.Estimated, p.Estimated)
			}
			dedup := 0
			if c.Unmade != nil {
				dedup = c.Unmade.Deduplicated
				if c.Unmade.ShortPages != 0 || c.Unmade.NotReached != 0 {
					t.Errorf("full pages, no failure: unmade %+v", *c.Unmade)
				}
			}
			if c.Estimated != c.Made+dedup {
				t.Errorf("estimated %d != made %d + deduplicated %d", c.Estimated, c.Made, dedup)
			}
			if op.disjoint && c.Estimated != c.Made {
				t.Errorf("disjoint operation: estimated %d, made %d", c.Estimated, c.Made)
			}
			if c.Estimated == c.Made {
				exact++
			}
			if c.Budget == nil || c.Budget.Limit == 0 {
				t.Errorf("no budget left in %s", r.Raw)
			}
			if t.Failed() {
				t.Logf("query: %s\nanswer: %s", op.query, r.Raw)
			}
		})
	}
	t.Logf("%d of 60 estimates exact", exact)
	if exact < 30 {
		t.Errorf("only %d of 60 estimates were exact", exact)
	}
}

// TestCostReceiptWithFailures: with a fifth of the REST calls failing
// (and retried), the sandbox's log is made plus retries, made never passes
// the estimate, and the receipt accounts for the whole estimate.
func TestCostReceiptWithFailures(t *testing.T) {
	g := startGateway(t, setup{env: map[string]string{"BREAKER_FAILURES": "0"}})
	g.Sandbox.SetFaults(sandbox.RandomFaults(26, 0.2, sandbox.Fault500, sandbox.Fault502, sandbox.Fault503))
	b := g.Biz[0]
	h := creds(b)
	retried, notReached := 0, 0
	for i, op := range corpus(g.Sandbox, b, 30) {
		before := g.Sandbox.CallCount("")
		r := g.Post(t, h, op.query, nil)
		logged := g.Sandbox.CallCount("") - before
		c, _ := extensionsOf(t, r.Raw)
		if c == nil {
			t.Fatalf("op%02d: no receipt: %s", i, r.Raw)
		}
		unmade := 0
		if c.Unmade != nil {
			unmade = c.Unmade.Deduplicated + c.Unmade.ShortPages + c.Unmade.NotReached
			if c.Unmade.NotReached < 0 || c.Unmade.Deduplicated < 0 {
				t.Errorf("op%02d: negative part %+v", i, *c.Unmade)
			}
		}
		retried += c.Retries
		notReached += unmade
		if logged != c.Made+c.Retries || c.Made > c.Estimated || c.Estimated != c.Made+unmade {
			t.Errorf("op%02d: logged %d; receipt %+v unmade %d\n%s\n%s", i, logged, *c, unmade, op.query, r.Raw)
		}
	}
	// The test means something only if calls failed and were retried.
	t.Logf("%d retries, %d calls estimated and not made", retried, notReached)
	if retried == 0 || notReached == 0 {
		t.Errorf("no call was retried (%d) or left unmade (%d): the faults did not bite", retried, notReached)
	}
}

// TestCostReceiptDeferFinalPart: streamed @defer, the receipt rides on the
// final part only, with the whole operation's calls.
func TestCostReceiptDeferFinalPart(t *testing.T) {
	t.Parallel()
	g := startGateway(t, setup{})
	h := creds(g.Biz[0])
	h.Set("Accept", "multipart/mixed")
	h.Set("Content-Type", "application/json")
	body, _ := json.Marshal(map[string]any{"query": `{ payments(first: 3) { nodes { id ... @defer { customer { address } } } } }`})
	before := g.Sandbox.CallCount("")
	req, _ := http.NewRequest(http.MethodPost, g.URL+"/graphql", bytes.NewReader(body))
	req.Header = h
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	_, params, err := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if err != nil || params["boundary"] == "" {
		t.Fatalf("not a multipart answer: %q", resp.Header.Get("Content-Type"))
	}
	mr := multipart.NewReader(resp.Body, params["boundary"])
	var parts [][]byte
	for {
		p, err := mr.NextPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(p)
		parts = append(parts, b)
	}
	if len(parts) < 2 {
		t.Fatalf("%d parts", len(parts))
	}
	for _, p := range parts[:len(parts)-1] {
		if c, _ := extensionsOf(t, p); c != nil {
			t.Errorf("a part before the last carries a receipt: %s", p)
		}
	}
	c, _ := extensionsOf(t, parts[len(parts)-1])
	logged := g.Sandbox.CallCount("") - before
	if c == nil || c.Made != logged || c.Made != 4 || c.Estimated != 4 {
		t.Fatalf("final part %s; the sandbox logged %d calls (want 4: a page and 3 details)", parts[len(parts)-1], logged)
	}
}

// TestDryRun: over POST and GET, a dry run plans by route and level,
// spends no REST-call budget and no REST call; an invalid or refused
// operation answers as it would for real.
func TestDryRun(t *testing.T) {
	g := startGateway(t, setup{env: map[string]string{"MAX_COMPLEXITY": "50", "Config.RateLimitRESTBurst": "50"}})
	b := g.Biz[0]
	h := creds(b)
	refs := g.Sandbox.CheckoutSessions(b.APIKey)
	q := fmt.Sprintf(`{ payments(first: 5) { nodes { customer { address } } } checkoutSession(id: %q) { payment { id } } }`, refs[0].Reference)
	t.Run("POST", func(t *testing.T) {
		r := g.PostBody(t, h, map[string]any{"query": q, "extensions": map[string]any{"dryRun": true}})
		_, p := extensionsOf(t, r.Raw)
		if p == nil || p.Estimated != 1+5+1+1 || len(p.Levels) != 2 || p.Levels[0].Level != 1 || p.Levels[1].Level != 2 {
			t.Fatalf("plan %s", r.Raw)
		}
		var routes []string
		for _, l := range p.Levels {
			for _, c := range l.Calls {
				routes = append(routes, fmt.Sprintf("%d %s %d", l.Level, c.Route, c.Calls))
			}
		}
		want := []string{"1 GET /api/v1/payments 1", "1 GET /api/v1/checkout/sessions/{id} 1", "2 GET /api/v1/payments/{id} 5", "2 GET /api/v1/payments/{id} 1"}
		if !slices.Equal(routes, want) {
			t.Errorf("plan routes %q, want %q", routes, want)
		}
	})
	t.Run("GET", func(t *testing.T) {
		r := g.Get(t, h, q, map[string][]string{"extensions": {`{"dryRun":true}`}})
		if _, p := extensionsOf(t, r.Raw); p == nil || p.Estimated != 8 {
			t.Fatalf("plan %s", r.Raw)
		}
	})
	t.Run("spends no REST-call budget", func(t *testing.T) {
		// The burst is 50: 10 dry runs of 8 calls would spend 80.
		before := g.Sandbox.CallCount("")
		for range 10 {
			g.PostBody(t, h, map[string]any{"query": q, "extensions": map[string]any{"dryRun": true}})
		}
		if n := g.Sandbox.CallCount("") - before; n != 0 {
			t.Fatalf("%d REST calls", n)
		}
		r := g.Post(t, h, q, nil).WantNoErrors(t)
		if c, _ := extensionsOf(t, r.Raw); c == nil || c.Budget == nil || c.Budget.Remaining < 50-8-1 {
			t.Fatalf("receipt after the dry runs: %s", r.Raw)
		}
	})
	t.Run("refused as for real", func(t *testing.T) {
		big := `{ payments(first: 60) { nodes { customer { address } } } }`
		r := g.PostBody(t, h, map[string]any{"query": big, "extensions": map[string]any{"dryRun": true}})
		r.WantCode(t, "COMPLEXITY_LIMIT_EXCEEDED")
		if _, p := extensionsOf(t, r.Raw); p == nil || p.Admitted {
			t.Errorf("a refused dry run's plan: %s", r.Raw)
		}
	})
	t.Run("invalid as for real", func(t *testing.T) {
		r := g.PostBody(t, h, map[string]any{"query": `{ payment { id } }`, "extensions": map[string]any{"dryRun": true}})
		if len(r.Errors) == 0 || r.Errors[0].Code() != "GRAPHQL_VALIDATION_FAILED" {
			t.Errorf("answer %s", r.Raw)
		}
	})
}

// TestCostReceiptsOff: COST_RECEIPTS=false answers without a receipt.
func TestCostReceiptsOff(t *testing.T) {
	t.Parallel()
	g := startGateway(t, setup{env: map[string]string{"COST_RECEIPTS": "false"}})
	r := g.Post(t, creds(g.Biz[0]), `{ payments(first: 2) { nodes { id } } }`, nil).WantNoErrors(t)
	if bytes.Contains(r.Raw, []byte(`"extensions"`)) {
		t.Fatalf("answer %s", r.Raw)
	}
}

// TestCostReceiptOverWebSocket: each operation of one WebSocket connection
// has its own receipt, counting its own REST calls, and a dry run over it
// makes none.
func TestCostReceiptOverWebSocket(t *testing.T) {
	g := startGateway(t, setup{})
	b := g.Biz[0]
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := wsOpen(t, ctx, g.URL, pairPayload(b))
	if err != nil {
		t.Fatal(err)
	}
	run := func(id string, payload map[string]any) []byte {
		next, _ := wsRun(t, ctx, c, id, payload)
		return next
	}
	q := `{ payments(first: 3) { nodes { id customer { address } } } }`
	for _, id := range []string{"1", "2"} {
		before := g.Sandbox.CallCount("")
		next := run(id, map[string]any{"query": q})
		r, _ := extensionsOf(t, next)
		if logged := g.Sandbox.CallCount("") - before; r == nil || r.Estimated != 4 || r.Made != 4 || logged != 4 {
			t.Fatalf("operation %s: %s; the sandbox logged %d calls, want 4", id, next, logged)
		}
	}
	before := g.Sandbox.CallCount("")
	next := run("3", map[string]any{"query": q, "extensions": map[string]any{"dryRun": true}})
	if _, p := extensionsOf(t, next); p == nil || p.Estimated != 4 || g.Sandbox.CallCount("") != before {
		t.Fatalf("dry run over the WebSocket: %s, %d calls", next, g.Sandbox.CallCount("")-before)
	}
}

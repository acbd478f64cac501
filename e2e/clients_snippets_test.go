package e2e

// docs/clients.md's js snippets, each run whole with Node and the pinned
// client libraries of e2e/clients against the sandbox-mode binary: not
// only their imports (TestREADMEClientImports) or a query cut out of them
// (TestREADMEExamples), but the snippet as written, in a harness
// (clients/snippet-harness.mjs) that gives it what a page would: a fetch
// and a WebSocket that reach the gateway, the app's names it does not
// define (token, id, render, reread, client...) as fakes that record their
// calls. Each snippet is named by a "<!-- snippet: name -->" line above
// its fence; a snippet without one, or with a name this file does not
// run, fails the test.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"paygraph/sandbox"
)

// clientsDocSnippet is one ```js or ```ts block of docs/clients.md.
type clientsDocSnippet struct {
	Name string // its marker's name
	Line int    // the line of its fence
	Text string // its lines, the fence's indentation removed
}

var (
	snippetFenceRe  = regexp.MustCompile("^(\\s*)```(\\w*)\\s*$")
	snippetMarkerRe = regexp.MustCompile(`^\s*<!-- snippet: ([\w-]+)`)
)

// clientsDocSnippets finds every js and ts block of text with the name of
// the marker among the comment lines right above its fence ("" for none).
func clientsDocSnippets(text string) []clientsDocSnippet {
	lines := strings.Split(text, "\n")
	var out []clientsDocSnippet
	for i := 0; i < len(lines); i++ {
		m := snippetFenceRe.FindStringSubmatch(lines[i])
		if m == nil {
			continue
		}
		indent, lang, start := m[1], m[2], i
		var body []string
		for i++; i < len(lines) && strings.TrimSpace(lines[i]) != "```"; i++ {
			body = append(body, strings.TrimPrefix(lines[i], indent))
		}
		if lang != "js" && lang != "ts" {
			continue
		}
		name := ""
		for j := start - 1; j >= 0 && strings.HasPrefix(strings.TrimSpace(lines[j]), "<!--"); j-- {
			if mm := snippetMarkerRe.FindStringSubmatch(lines[j]); mm != nil {
				name = mm[1]
			}
		}
		out = append(out, clientsDocSnippet{Name: name, Line: start + 1, Text: strings.Join(body, "\n")})
	}
	return out
}

// snippetReport is what snippet-harness.mjs prints.
type snippetReport struct {
	Calls []struct {
		Name string
		MS   int
		Arg  json.RawMessage
	}
	Subscribes []struct {
		MS          int
		Over        string
		LastEventID *string
		Variables   map[string]any
	}
	Requests []struct {
		Method, Path     string
		Status           int
		Query, Persisted bool
	}
	Uncaught, ConsoleErrors []string
	UncaughtTotal           int
	Result                  json.RawMessage
}

func (r snippetReport) calls(name string) int {
	n := 0
	for _, c := range r.Calls {
		if c.Name == name {
			n++
		}
	}
	return n
}

// expiredEventID is a lastEventId the gateway never gave: the resume
// snippets start from it, as an app whose stored id is older than the
// resume window, and must get EVENT_ID_EXPIRED.
const expiredEventID = "987654321"

// snippetRun is how one snippet is run and judged.
type snippetRun struct {
	runBy  string // another test runs it whole; the marker's text must name it
	scope  string // the session token's scope ("" for none)
	client string // the resume snippets' client: "apollo-ws", "urql-ws"
	until  string // "render": done at the first render
	runFor time.Duration
	resume bool   // starts from expiredEventID (its "let last;" gets it)
	tail   string // run after the snippet, in its scope: calls harness.finish
	check  func(snippetReport) error
}

const (
	scopeAll      = `{"kind":"all"}`
	scopeCheckout = `{"kind":"checkoutSession","id":"453CWQNB4U"}`
	// fetchTail reports a fetch snippet's answer.
	fetchTail = `harness.finish({ status: res.status, body: await res.json() });`
)

// fetchAnswered: a fetch snippet's answer is a 200 with data and no errors.
func fetchAnswered(path string) func(snippetReport) error {
	return func(r snippetReport) error {
		var got struct {
			Status int
			Body   struct {
				Data   map[string]json.RawMessage
				Errors json.RawMessage
			}
		}
		if err := json.Unmarshal(r.Result, &got); err != nil {
			return fmt.Errorf("result %s: %v", r.Result, err)
		}
		if got.Status != 200 || got.Body.Errors != nil || len(got.Body.Data[path]) == 0 || string(got.Body.Data[path]) == "null" {
			return fmt.Errorf("answered %s, want 200 with data.%s and no errors", r.Result, path)
		}
		return nil
	}
}

// rendered: the snippet rendered a state (the first event) over the
// transport named, with one subscribe.
func rendered(over, field string) func(snippetReport) error {
	return func(r snippetReport) error {
		if len(r.Subscribes) != 1 || r.Subscribes[0].Over != over {
			return fmt.Errorf("subscribes %+v, want one over %s", r.Subscribes, over)
		}
		for _, c := range r.Calls {
			var v map[string]any
			if c.Name == "render" && json.Unmarshal(c.Arg, &v) == nil && v[field] != nil {
				return nil
			}
		}
		return fmt.Errorf("no render of a state with %s: %+v", field, r.Calls)
	}
}

// resumed judges a resume snippet started from an expired id: it read
// the resource again once and did not hammer the gateway (at most three
// subscribes in its run: the expired one, and one without an id a second
// later); with fresh, that subscribe without an id rendered the state.
func resumed(fresh bool) func(snippetReport) error {
	return func(r snippetReport) error {
		if len(r.Subscribes) == 0 {
			return fmt.Errorf("no subscribe")
		}
		first := r.Subscribes[0]
		if first.Variables["last"] != expiredEventID && (first.LastEventID == nil || *first.LastEventID != expiredEventID) {
			return fmt.Errorf("the first subscribe does not resume from %s: %+v", expiredEventID, first)
		}
		var errs []string
		if n := len(r.Subscribes); n > 3 {
			errs = append(errs, fmt.Sprintf("subscribed %d times in %d ms: it resubscribes without pause", n, r.Subscribes[n-1].MS))
		}
		if n := r.calls("reread"); n != 1 {
			errs = append(errs, fmt.Sprintf("reread called %d times, want once (the fall back on EVENT_ID_EXPIRED)", n))
		}
		if fresh {
			ok := false
			for _, s := range r.Subscribes[1:] {
				if s.Variables["last"] == nil && s.LastEventID == nil {
					ok = true
				}
			}
			if !ok {
				errs = append(errs, "no subscribe without an id after EVENT_ID_EXPIRED")
			} else if !slicesContainsStatus(r, "PENDING") {
				errs = append(errs, "the subscribe without an id rendered no state")
			}
		}
		if errs != nil {
			return fmt.Errorf("%s", strings.Join(errs, "; "))
		}
		return nil
	}
}

func slicesContainsStatus(r snippetReport, status string) bool {
	for _, c := range r.Calls {
		var v struct{ Status string }
		if c.Name == "render" && json.Unmarshal(c.Arg, &v) == nil && v.Status == status {
			return true
		}
	}
	return false
}

// clientsDocSnippetRuns is every snippet of docs/clients.md, by marker.
var clientsDocSnippetRuns = map[string]snippetRun{
	"fetch": {scope: scopeAll, tail: `harness.finish({ status: res.status, body: { data, errors } });`, check: fetchAnswered("payments")},
	"apollo-client": {scope: scopeAll,
		// a page of a filtered list, then the next with fetchMore's
		// variables: the type policy merges them under the filter's key.
		tail: `const query = harness.parse('query Page($after: String) { payments(first: 2, status: SUCCEEDED, after: $after) { edges { cursor node { id status } } pageInfo { hasNextPage endCursor } } }');
const first = await client.query({ query, fetchPolicy: 'network-only' });
await client.query({ query, variables: { after: first.data.payments.pageInfo.endCursor }, fetchPolicy: 'network-only' });
const merged = client.readQuery({ query });
harness.finish({ error: first.error?.message ?? null, merged: merged?.payments.edges.map((e) => e.node.id) ?? [] });`,
		check: func(r snippetReport) error {
			var got struct {
				Error  *string
				Merged []string
			}
			if err := json.Unmarshal(r.Result, &got); err != nil {
				return err
			}
			if got.Error != nil || len(got.Merged) != 4 || got.Merged[0] == got.Merged[2] {
				return fmt.Errorf("two pages of 2, merged: %s", r.Result)
			}
			if len(r.Requests) == 0 || r.Requests[0].Query || !r.Requests[0].Persisted {
				return fmt.Errorf("the first request is not a persisted query's hash alone: %+v", r.Requests)
			}
			return nil
		}},
	"urql-client": {scope: scopeAll,
		tail: `const r = await client.query('{ payments(first: 2) { nodes { id status } } }', {}).toPromise();
harness.finish({ status: 200, body: { data: r.data, errors: r.error ? r.error.message : undefined } });`,
		check: fetchAnswered("payments")},
	"batch-link": {scope: scopeAll,
		// three queries at once: one POST, three answers.
		tail: `const q = (s) => client.query({ query: harness.parse(s), fetchPolicy: 'no-cache' });
const rs = await Promise.all([q('{ payments(first: 1) { nodes { id } } }'), q('{ payments(first: 2) { nodes { status } } }'), q('{ __typename }')]);
harness.finish({ answered: rs.filter((r) => r.data && !r.error).length });`,
		check: func(r snippetReport) error {
			var got struct{ Answered int }
			if err := json.Unmarshal(r.Result, &got); err != nil {
				return err
			}
			posts := 0
			for _, q := range r.Requests {
				if q.Method == "POST" && q.Status == 200 {
					posts++
				}
			}
			if got.Answered != 3 || posts != 1 || len(r.Requests) != 1 {
				return fmt.Errorf("three queries: %d answered, in %d requests (%+v); want 3 in one POST", got.Answered, len(r.Requests), r.Requests)
			}
			return nil
		}},
	"codegen":             {runBy: "TestCodegenRecipe"},
	"defer":               {runBy: "TestREADMEExamples"},
	"token-fetch":         {scope: scopeCheckout, tail: fetchTail, check: fetchAnswered("checkoutSession")},
	"customer-data-fetch": {scope: scopeCheckout, tail: fetchTail, check: fetchAnswered("checkoutSession")},
	"sse-subscribe":       {scope: scopeCheckout, until: "render", check: rendered("sse", "paymentStatus")},
	"ws-subscribe":        {scope: scopeAll, until: "render", check: rendered("ws", "status")},
	"sse-resume":          {scope: scopeAll, resume: true, runFor: 2500 * time.Millisecond, check: resumed(false)},
	"apollo-resume":       {scope: scopeAll, client: "apollo-ws", resume: true, runFor: 2500 * time.Millisecond, check: resumed(true)},
	"urql-resume":         {scope: scopeAll, client: "urql-ws", resume: true, runFor: 2500 * time.Millisecond, check: resumed(true)},
}

// paymentUpdatedDocRe is the resume section's subscription document, the
// PAYMENT_UPDATED of the Apollo and urql snippets.
var paymentUpdatedDocRe = regexp.MustCompile("```graphql\\n(subscription \\(\\$id: ID!, \\$last: String\\)[^\\n]*)\\n```")

// runClientsDocSnippet runs one snippet (its text) as run says, against
// the gateway at base, and returns the harness's report.
func runClientsDocSnippet(ctx context.Context, node, dir, base, text string, run snippetRun, paymentUpdated string) (snippetReport, error) {
	var rep snippetReport
	if run.resume {
		if strings.Count(text, "let last;") != 1 {
			return rep, fmt.Errorf("a resume snippet without one \"let last;\" to start it from an expired id")
		}
		text = strings.Replace(text, "let last;", "let last = '"+expiredEventID+"';", 1)
	}
	program := "import * as harness from './snippet-harness.mjs';\n" + text + "\n;\n" + run.tail + "\n"
	f, err := os.CreateTemp(dir, "doc-snippet-*.mjs")
	if err != nil {
		return rep, err
	}
	defer os.Remove(f.Name())
	if _, err := f.WriteString(program); err != nil {
		return rep, err
	}
	f.Close()
	biz := sandbox.New(sandbox.Options{}).Fixtures()[0]
	pair, _ := json.Marshal(map[string]string{"x-api-key": biz.Business.APIKey, "x-api-secret": biz.Business.APISecret})
	runFor := run.runFor
	if runFor == 0 {
		runFor = 10 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, runFor+30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, f.Name())
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "NODE_NO_WARNINGS=1",
		"SNIPPET_BASE="+base, "SNIPPET_HEADERS="+string(pair), "SNIPPET_SCOPE="+run.scope,
		"SNIPPET_CLIENT="+run.client, "SNIPPET_UNTIL="+run.until, fmt.Sprintf("SNIPPET_RUN_MS=%d", runFor.Milliseconds()),
		"SNIPPET_ID="+biz.PendingPaymentID, "SNIPPET_REF="+biz.CheckoutReference, "SNIPPET_PAYMENT_UPDATED="+paymentUpdated)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil || stderr.Len() > 0 {
		return rep, fmt.Errorf("node: %v\nstdout: %.2000s\nstderr: %.2000s", err, stdout.Bytes(), stderr.Bytes())
	}
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		return rep, fmt.Errorf("the harness's report: %v: %.2000s", err, stdout.Bytes())
	}
	return rep, nil
}

// judgeSnippet is run's check of rep, and what every snippet must do:
// throw nothing and log no error.
func judgeSnippet(run snippetRun, rep snippetReport) error {
	var errs []error
	if rep.UncaughtTotal > 0 {
		errs = append(errs, fmt.Errorf("threw %d times, first: %.300s", rep.UncaughtTotal, rep.Uncaught[0]))
	}
	if len(rep.ConsoleErrors) > 0 {
		errs = append(errs, fmt.Errorf("logged errors: %.600q", rep.ConsoleErrors))
	}
	if err := run.check(rep); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// TestClientsDocSnippets runs every js and ts snippet of docs/clients.md
// as written against the sandbox-mode binary, each with its client
// library's pinned version (e2e/clients/package-lock.json), and judges
// what it did: a query answered with data, a subscription's first state
// rendered, and for the resume snippets of each library (graphql-sse,
// Apollo Client 4 over graphql-ws, urql over graphql-ws), started from an
// id outside the resume window, EVENT_ID_EXPIRED handled: one re-read, at
// most three subscribes in 2.5 s. "broken_apollo_resume" runs the Apollo
// snippet the documentation had before (which resubscribed every few ms)
// and must fail.
func TestClientsDocSnippets(t *testing.T) {
	t.Parallel()
	node, dir := nodeClients(t)
	text := docFileText(t, "docs/clients.md")
	snippets := clientsDocSnippets(text)
	m := paymentUpdatedDocRe.FindStringSubmatch(text)
	if m == nil {
		t.Fatal("docs/clients.md has no resume subscription (subscription ($id: ID!, $last: String) ...) in a graphql block")
	}
	paymentUpdated := m[1]

	seen := map[string]bool{}
	for _, s := range snippets {
		if _, ok := clientsDocSnippetRuns[s.Name]; !ok {
			t.Errorf("docs/clients.md line %d: a snippet no test runs (marker %q): give it a <!-- snippet: name --> line and a run in clientsDocSnippetRuns", s.Line, s.Name)
			continue
		}
		if seen[s.Name] {
			t.Errorf("docs/clients.md line %d: a second snippet named %q", s.Line, s.Name)
		}
		seen[s.Name] = true
	}
	for name := range clientsDocSnippetRuns {
		if !seen[name] {
			t.Errorf("docs/clients.md has no snippet %q any more: drop its run", name)
		}
	}
	if len(snippets) < len(clientsDocSnippetRuns) {
		t.Fatalf("found %d snippets, want %d", len(snippets), len(clientsDocSnippetRuns))
	}

	p := startGateway(t, nil)
	ctx := context.Background()
	for _, s := range snippets {
		run, ok := clientsDocSnippetRuns[s.Name]
		if !ok {
			continue
		}
		t.Run(s.Name, func(t *testing.T) {
			if run.runBy != "" {
				// The test that runs it finds it by its first line.
				marker := regexp.MustCompile(`(?m)^\s*<!-- snippet: ` + s.Name + ` \(run by ` + run.runBy + `\) -->`)
				if !marker.MatchString(text) {
					t.Errorf("line %d: the marker must say \"(run by %s)\"", s.Line, run.runBy)
				}
				first, _, _ := strings.Cut(s.Text, "\n")
				if want := map[string]string{"TestCodegenRecipe": "// codegen.ts", "TestREADMEExamples": nodeMarker}[run.runBy]; !strings.HasPrefix(first, want) {
					t.Errorf("line %d: %s finds it by its first line %q, not %q", s.Line, run.runBy, want, first)
				}
				return
			}
			start := time.Now()
			rep, err := runClientsDocSnippet(ctx, node, dir, p.URL, s.Text, run, paymentUpdated)
			if err == nil {
				err = judgeSnippet(run, rep)
			}
			if err != nil {
				t.Errorf("docs/clients.md line %d (%s):\n%s\n=> %v", s.Line, s.Name, s.Text, err)
			}
			t.Logf("%s: %d subscribes, %d rereads, %d renders, %v", s.Name, len(rep.Subscribes), rep.calls("reread"), rep.calls("render"), time.Since(start).Round(time.Millisecond))
		})
	}

	t.Run("broken_apollo_resume", func(t *testing.T) {
		run := clientsDocSnippetRuns["apollo-resume"]
		rep, err := runClientsDocSnippet(ctx, node, dir, p.URL, oldApolloResume, run, paymentUpdated)
		if err == nil {
			err = judgeSnippet(run, rep)
		}
		if err == nil {
			t.Fatalf("the snippet that resubscribed every few ms passes: %d subscribes", len(rep.Subscribes))
		}
		t.Logf("fails as it should: %v", err)
	})
}

// oldApolloResume is the Apollo resume snippet docs/clients.md had: it
// waits for EVENT_ID_EXPIRED in error:, which Apollo Client 4 never calls
// (it hands the error to next, then completes), and resubscribes at once
// on the completion with the same expired id.
const oldApolloResume = `let last;
function watch() {
  client.subscribe({ query: PAYMENT_UPDATED, variables: { id, last } }).subscribe({
    next: ({ data, extensions }) => { last = extensions?.eventId ?? last; render(data.paymentUpdated); },
    error: (e) => { if (e.graphQLErrors?.[0]?.extensions?.code === 'EVENT_ID_EXPIRED') last = undefined; setTimeout(watch, 1000); },
    complete: () => { if (!terminal()) watch(); } });
}
watch();`

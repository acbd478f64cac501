package e2e

// The documentation's examples (README.md and docs/*.md), run as written
// against the sandbox-mode binary (what `go run .` runs): a newcomer
// pastes them first, so an example that stopped working is a bug of the
// gateway or of the documentation, and this test says which example, in
// which file, and why. The files are read at test time: nothing of them
// is copied here.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"paygraph/sandbox"
)

// readme is the README.md of the module root.
func readme(t *testing.T) string {
	t.Helper()
	return docFileText(t, "README.md")
}

// docFileText is one documentation file, by its path from the module root.
func docFileText(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// docFile is one documentation file: its path from the module root and
// its text.
type docFile struct{ Name, Text string }

// docFiles is README.md, then docs/*.md in name order: the order their
// examples run in, so that a token minted in one is there for the next.
// The dated logs under docs/perf-log/ are records, not instructions, and
// are not run.
func docFiles(t *testing.T) []docFile {
	t.Helper()
	names, err := filepath.Glob("../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(names)
	out := []docFile{{"README.md", readme(t)}}
	for _, n := range names {
		name := strings.TrimPrefix(filepath.ToSlash(n), "../")
		out = append(out, docFile{name, docFileText(t, name)})
	}
	if len(out) < 6 {
		t.Fatalf("found %d documentation files, want README.md and at least five docs/*.md: %v", len(out), names)
	}
	return out
}

// allDocs is every documentation file's text, one after the other.
func allDocs(t *testing.T) string {
	var b strings.Builder
	for _, f := range docFiles(t) {
		b.WriteString(f.Text)
		b.WriteString("\n")
	}
	return b.String()
}

// example is one runnable example of the documentation.
type example struct {
	File string // the file it is in (README.md, docs/clients.md, ...)
	Line int    // the line it starts on
	Kind string // "graphql" (an operation of a graphql block), "curl", "fetch"
	Text string // the operation, the curl command (continuations joined), the fetch's query
	// Accept is the fetch snippet's accept header ("" for none).
	Accept string
}

func (e example) name() string {
	return fmt.Sprintf("%s_%s_line_%d", strings.TrimSuffix(path.Base(e.File), ".md"), e.Kind, e.Line)
}

// where is the example's file and line, for messages.
func (e example) where() string { return fmt.Sprintf("%s line %d", e.File, e.Line) }

var (
	fenceRe      = regexp.MustCompile("^\\s*```\\s*(\\w*)")
	inlineCurlRe = regexp.MustCompile("`(curl [^`]+)`")
	curlRe       = regexp.MustCompile(`\bcurl -`)
	fetchQueryRe = regexp.MustCompile("query:\\s*(['\"`])(.*?)['\"`]\\s*\\}")
	fetchAccept  = regexp.MustCompile(`accept:\s*'([^']+)'`)
	readmeIDRe   = regexp.MustCompile(`\bpay_prod_[0-9a-f]{32}\b|\bpl_[A-Za-z0-9]{6,}\b`)
)

// nodeMarker starts a js block that is a whole program for Node (its
// first line: "// Node: <file name>"): the test runs it as written, from
// e2e/clients, whose pinned packages it imports.
const nodeMarker = "// Node:"

// typeSystemRe is the start of a graphql block that defines types (the
// contract's SDL) rather than operations: nothing to run.
var typeSystemRe = regexp.MustCompile(`^(?:\s*#[^\n]*\n)*\s*(?:"""|"|type\b|schema\b|scalar\b|enum\b|interface\b|input\b|union\b|directive\b|extend\b)`)

// readmeExamples finds every runnable example of a documentation file:
// each operation of each ```graphql block (a block of type definitions
// excepted), each curl command (in a block, with its continuation lines,
// or inline in backticks), the query of each ```js block that calls
// fetch, and each ```js block that is a Node program (nodeMarker).
func readmeExamples(file, text string) ([]example, error) {
	lines := strings.Split(text, "\n")
	var out []example
	inFence, lang, start := false, "", 0
	var block []string
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		if m := fenceRe.FindStringSubmatch(line); m != nil {
			if !inFence {
				inFence, lang, start, block = true, m[1], i+1, nil
				continue
			}
			inFence = false
			switch lang {
			case "graphql":
				src := strings.Join(block, "\n")
				if typeSystemRe.MatchString(src) {
					continue
				}
				ops, err := splitOperations(src, start+1)
				if err != nil {
					return nil, fmt.Errorf("%s: %w", file, err)
				}
				for i := range ops {
					ops[i].File = file
				}
				out = append(out, ops...)
			case "js":
				js := strings.Join(block, "\n")
				if strings.HasPrefix(js, nodeMarker) {
					out = append(out, example{File: file, Line: start + 1, Kind: "node", Text: js})
					continue
				}
				if !strings.Contains(js, "fetch(") {
					continue
				}
				m := fetchQueryRe.FindStringSubmatch(js)
				if m == nil {
					return nil, fmt.Errorf("%s line %d: a fetch snippet whose query this test cannot find", file, start)
				}
				ex := example{File: file, Line: start + 1, Kind: "fetch", Text: m[2]}
				if a := fetchAccept.FindStringSubmatch(js); a != nil {
					ex.Accept = a[1]
				}
				out = append(out, ex)
			}
			continue
		}
		if inFence {
			block = append(block, line)
			if at := strings.Index(line, "curl "); at >= 0 && curlRe.MatchString(line) {
				cmd, first := line[at:], i
				for strings.HasSuffix(cmd, "\\") && i+1 < len(lines) {
					i++
					block = append(block, lines[i])
					cmd = strings.TrimSuffix(cmd, "\\") + " " + strings.TrimSpace(lines[i])
				}
				out = append(out, example{File: file, Line: first + 1, Kind: "curl", Text: cmd})
			}
			continue
		}
		for _, m := range inlineCurlRe.FindAllStringSubmatch(line, -1) {
			out = append(out, example{File: file, Line: i + 1, Kind: "curl", Text: m[1]})
		}
	}
	return out, nil
}

// splitOperations cuts a graphql block into its top-level operations
// (comments dropped), each with the line it starts on.
func splitOperations(block string, firstLine int) ([]example, error) {
	var out []example
	depth, opStart, opLine, line := 0, -1, 0, firstLine
	inString, inComment := false, false
	for i := 0; i < len(block); i++ {
		c := block[i]
		switch {
		case c == '\n':
			line++
			inComment = false
			continue
		case inComment:
			continue
		case inString:
			if c == '\\' {
				i++
			} else if c == '"' {
				inString = false
			}
			continue
		case c == '#':
			inComment = true
			continue
		case c == '"':
			inString = true
		case c == '{':
			depth++
		case c == '}':
			depth--
			if depth < 0 {
				return nil, fmt.Errorf("line %d: unbalanced }", line)
			}
		}
		if opStart < 0 && c != ' ' && c != '\t' && c != '\r' {
			opStart, opLine = i, line
		}
		if c == '}' && depth == 0 && opStart >= 0 {
			out = append(out, example{Line: opLine, Kind: "graphql", Text: block[opStart : i+1]})
			opStart = -1
		}
	}
	if depth != 0 || opStart >= 0 {
		return nil, fmt.Errorf("line %d: a graphql block that does not end its operation", firstLine)
	}
	return out, nil
}

// exampleRunner runs examples in documentation order against one gateway,
// remembering what a later example's placeholders need: the last
// endCursor answered and the last session token minted.
type exampleRunner struct {
	base      string // the gateway's http://127.0.0.1:port
	client    *http.Client
	fx        sandbox.Fixture // the first demo business's: the README's credentials
	endCursor string
	token     string
	// nodePath and nodeDir run Node programs (node and e2e/clients);
	// nodeOut is what each printed, in order.
	nodePath, nodeDir string
	nodeOut           []string
}

// subst replaces the README's placeholders, and only those: the
// documentation's gateway address (the test's gateway has its own port),
// the cursor of the page above and the token. The credentials and ids are
// the demo pair and the fixed ids, written out: an example is run as a
// reader pastes it.
func (r *exampleRunner) subst(s string) (string, error) {
	if strings.Contains(s, "<endCursor of the page above>") {
		if r.endCursor == "" {
			return "", errors.New("no endCursor in any answer above this example")
		}
		s = strings.ReplaceAll(s, "<endCursor of the page above>", r.endCursor)
	}
	if strings.Contains(s, "${token}") || strings.Contains(s, "<token>") {
		if r.token == "" {
			return "", errors.New("no /auth/token example above this one minted a token")
		}
		s = strings.NewReplacer("${token}", r.token, "<token>", r.token).Replace(s)
	}
	return strings.NewReplacer(
		"http://localhost:8080", r.base,
		"localhost:8080", r.base,
	).Replace(s), nil
}

// run runs one example and says what is wrong with its answer, if
// anything.
func (r *exampleRunner) run(ctx context.Context, ex example) error {
	text, err := r.subst(ex.Text)
	if err != nil {
		return err
	}
	switch ex.Kind {
	case "graphql":
		if strings.HasPrefix(text, "subscription") {
			return r.subscribe(ctx, text)
		}
		h := http.Header{"X-Api-Key": {r.fx.Business.APIKey}, "X-Api-Secret": {r.fx.Business.APISecret}}
		if strings.Contains(text, "@defer") {
			// As Apollo Client and urql ask for incremental delivery.
			h.Set("Accept", "multipart/mixed;deferSpec=20220824, application/json")
		}
		return r.post(ctx, text, h)
	case "fetch":
		h := http.Header{"Authorization": {"Bearer " + r.token}}
		if ex.Accept != "" {
			h.Set("Accept", ex.Accept)
		}
		return r.post(ctx, text, h)
	case "node":
		return r.node(ctx, text)
	case "curl":
		req, err := r.curlRequest(ctx, text)
		if err != nil {
			return err
		}
		return r.check(req)
	}
	return fmt.Errorf("unknown kind %q", ex.Kind)
}

// errNodeSkipped: a Node program not run (no node here, outside CI; or a
// spoiled copy that concerns another example).
var errNodeSkipped = errors.New("not run: node and e2e/clients' packages are not installed")

// node runs a Node program as written (placeholders replaced): it must
// exit 0 within a minute, print something and write nothing to stderr
// (a snippet throws what its client reports as an error).
func (r *exampleRunner) node(ctx context.Context, program string) error {
	if r.nodeDir == "" {
		return errNodeSkipped
	}
	f, err := os.CreateTemp(r.nodeDir, "doc-example-*.mjs")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if _, err := f.WriteString(program); err != nil {
		return err
	}
	f.Close()
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, r.nodePath, f.Name())
	cmd.Dir = r.nodeDir
	cmd.Env = append(os.Environ(), "NODE_NO_WARNINGS=1")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil || stderr.Len() > 0 || stdout.Len() == 0 {
		return fmt.Errorf("node: %v\nstdout: %s\nstderr: %.2000s", err, stdout.Bytes(), stderr.Bytes())
	}
	r.nodeOut = append(r.nodeOut, stdout.String())
	return nil
}

// post sends query as a JSON POST to /graphql.
func (r *exampleRunner) post(ctx context.Context, query string, h http.Header) error {
	body, _ := json.Marshal(map[string]string{"query": query})
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, r.base+"/graphql", bytes.NewReader(body))
	req.Header = h
	req.Header.Set("Content-Type", "application/json")
	return r.check(req)
}

// check sends req and checks its answer: 200, and for /graphql data
// with every top-level field non-null and no errors; for /auth/token a
// token, which later examples use.
func (r *exampleRunner) check(req *http.Request) error {
	resp, err := r.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if mt, params, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt == "multipart/mixed" && resp.StatusCode == http.StatusOK {
		return r.checkIncremental(multipart.NewReader(resp.Body, params["boundary"]))
	}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") && resp.StatusCode == http.StatusOK {
		return r.firstEvent(resp.Body) // a subscription: its first event, then the stream is left
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("HTTP %d: %s", resp.StatusCode, body)
	}
	if req.URL.Path == "/auth/token" {
		var tok struct{ Token string }
		if err := json.Unmarshal(body, &tok); err != nil || tok.Token == "" {
			return fmt.Errorf("no token in %s", body)
		}
		r.token = tok.Token
		return nil
	}
	return r.checkGraphQL(body)
}

func (r *exampleRunner) checkGraphQL(body []byte) error {
	var g struct {
		Data       map[string]json.RawMessage
		Errors     json.RawMessage
		Extensions struct {
			Plan *struct{ Estimated int } // a dry run's
		}
	}
	if err := json.Unmarshal(body, &g); err != nil {
		return fmt.Errorf("not a GraphQL answer: %v: %s", err, body)
	}
	if g.Errors != nil {
		return fmt.Errorf("errors: %s", g.Errors)
	}
	if g.Data == nil && g.Extensions.Plan != nil {
		if g.Extensions.Plan.Estimated == 0 {
			return fmt.Errorf("a dry run that plans no REST call: %s", body)
		}
		return nil // a dry run answers its plan instead of data
	}
	if len(g.Data) == 0 {
		return fmt.Errorf("no data: %s", body)
	}
	for k, v := range g.Data {
		if string(v) == "null" {
			return fmt.Errorf("data.%s is null: %s", k, body)
		}
	}
	if c := findEndCursor(g.Data); c != "" {
		r.endCursor = c
	}
	return nil
}

// checkIncremental checks an incremental (@defer) answer: its first part
// as any answer, each later part without errors, and at least two parts.
func (r *exampleRunner) checkIncremental(mr *multipart.Reader) error {
	for n := 0; ; n++ {
		part, err := mr.NextPart()
		if err == io.EOF {
			if n < 2 {
				return fmt.Errorf("an incremental answer of %d parts", n)
			}
			return nil
		}
		if err != nil {
			return err
		}
		body, err := io.ReadAll(part)
		if err != nil {
			return err
		}
		if n == 0 {
			if err := r.checkGraphQL(body); err != nil {
				return fmt.Errorf("first part: %w", err)
			}
			continue
		}
		var later struct {
			Errors      json.RawMessage
			Incremental []struct{ Errors json.RawMessage }
		}
		if err := json.Unmarshal(body, &later); err != nil {
			return fmt.Errorf("part %d: %v: %s", n+1, err, body)
		}
		for _, inc := range later.Incremental {
			if inc.Errors != nil {
				return fmt.Errorf("part %d: errors: %s", n+1, inc.Errors)
			}
		}
		if later.Errors != nil {
			return fmt.Errorf("part %d: errors: %s", n+1, later.Errors)
		}
	}
}

// findEndCursor is the first pageInfo.endCursor in an answer's data.
func findEndCursor(v any) string {
	switch v := v.(type) {
	case map[string]json.RawMessage:
		for k, raw := range v {
			if k == "endCursor" {
				var s string
				_ = json.Unmarshal(raw, &s)
				return s
			}
			var inner any
			if json.Unmarshal(raw, &inner) == nil {
				if c := findEndCursor(inner); c != "" {
					return c
				}
			}
		}
	case map[string]any:
		for k, x := range v {
			if s, ok := x.(string); ok && k == "endCursor" {
				return s
			}
			if c := findEndCursor(x); c != "" {
				return c
			}
		}
	case []any:
		for _, x := range v {
			if c := findEndCursor(x); c != "" {
				return c
			}
		}
	}
	return ""
}

// subscribe runs a subscription over graphql-sse (the README's first
// transport) and checks its first event; its $id is the fixture the
// subscription's field names.
func (r *exampleRunner) subscribe(ctx context.Context, query string) error {
	id := r.fx.PaymentID
	if strings.Contains(query, "checkoutSessionUpdated") {
		id = r.fx.CheckoutReference
	}
	body, _ := json.Marshal(map[string]any{"query": query, "variables": map[string]string{"id": id}})
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, r.base+"/graphql", bytes.NewReader(body))
	req.Header = http.Header{"X-Api-Key": {r.fx.Business.APIKey}, "X-Api-Secret": {r.fx.Business.APISecret},
		"Content-Type": {"application/json"}, "Accept": {"text/event-stream"}}
	resp, err := r.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		b, _ := io.ReadAll(resp.Body)
		return fmt.Errorf("SSE answer %d %q: %s", resp.StatusCode, resp.Header.Get("Content-Type"), b)
	}
	return r.firstEvent(resp.Body)
}

// firstEvent checks the first event of a graphql-sse stream as any
// answer; a stream that completes first fails.
func (r *exampleRunner) firstEvent(body io.Reader) error {
	sc := bufio.NewScanner(body)
	event := ""
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			event = strings.TrimPrefix(line, "event: ")
			if event == "complete" {
				return errors.New("the stream completed before any event")
			}
		case strings.HasPrefix(line, "data: ") && event == "next":
			return r.checkGraphQL([]byte(strings.TrimPrefix(line, "data: ")))
		}
	}
	return fmt.Errorf("the stream ended with no event: %v", sc.Err())
}

// curlRequest builds the request a curl command line makes: the options
// the README uses (-s, -G, -X, -H, -d, --data-urlencode) and no others,
// so that an example using one more fails here until this learns it.
func (r *exampleRunner) curlRequest(ctx context.Context, cmd string) (*http.Request, error) {
	args, err := shellWords(cmd)
	if err != nil {
		return nil, err
	}
	if len(args) == 0 || args[0] != "curl" {
		return nil, fmt.Errorf("not a curl command: %q", cmd)
	}
	var (
		target, method string
		get            bool
		data           []string
		header         = http.Header{}
	)
	for i := 1; i < len(args); i++ {
		a := args[i]
		next := func() (string, error) {
			if i+1 >= len(args) {
				return "", fmt.Errorf("%s without a value", a)
			}
			i++
			return r.subst(args[i])
		}
		switch a {
		case "-s", "-N", "-sN": // -N: unbuffered, for a stream
		case "-G":
			get = true
		case "-X":
			if method, err = next(); err != nil {
				return nil, err
			}
		case "-H":
			v, err := next()
			if err != nil {
				return nil, err
			}
			name, val, ok := strings.Cut(v, ":")
			if !ok {
				return nil, fmt.Errorf("header %q", v)
			}
			header.Add(name, strings.TrimSpace(val))
		case "-d", "--data":
			v, err := next()
			if err != nil {
				return nil, err
			}
			data = append(data, v)
		case "--data-urlencode":
			v, err := next()
			if err != nil {
				return nil, err
			}
			name, content, ok := strings.Cut(v, "=")
			if !ok {
				return nil, fmt.Errorf("--data-urlencode %q: this test knows only name=content", v)
			}
			data = append(data, name+"="+url.QueryEscape(content))
		default:
			if strings.HasPrefix(a, "-") {
				return nil, fmt.Errorf("curl option %s: not known to this test", a)
			}
			if target, err = r.subst(a); err != nil {
				return nil, err
			}
		}
	}
	if !strings.HasPrefix(target, "http") {
		target = "http://" + target
	}
	var body io.Reader
	switch {
	case get:
		if len(data) > 0 {
			target += "?" + strings.Join(data, "&")
		}
		method = http.MethodGet
	case len(data) > 0:
		body = strings.NewReader(strings.Join(data, "&"))
		if method == "" {
			method = http.MethodPost
		}
		if header.Get("Content-Type") == "" {
			header.Set("Content-Type", "application/x-www-form-urlencoded")
		}
	case method == "":
		method = http.MethodGet
	}
	req, err := http.NewRequestWithContext(ctx, method, target, body)
	if err != nil {
		return nil, err
	}
	req.Header = header
	return req, nil
}

// shellWords splits a command line as sh would for what the README's
// commands use: blanks, '...', "..." (with \" and \\), and $VARS left for
// subst.
func shellWords(s string) ([]string, error) {
	var out []string
	var cur strings.Builder
	inWord := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n':
			if inWord {
				out = append(out, cur.String())
				cur.Reset()
				inWord = false
			}
		case c == '\'':
			end := strings.IndexByte(s[i+1:], '\'')
			if end < 0 {
				return nil, fmt.Errorf("unterminated ' in %q", s)
			}
			cur.WriteString(s[i+1 : i+1+end])
			i += end + 1
			inWord = true
		case c == '"':
			i++
			for ; i < len(s) && s[i] != '"'; i++ {
				if s[i] == '\\' && i+1 < len(s) && (s[i+1] == '"' || s[i+1] == '\\' || s[i+1] == '$') {
					i++
				}
				cur.WriteByte(s[i])
			}
			if i >= len(s) {
				return nil, fmt.Errorf("unterminated \" in %q", s)
			}
			inWord = true
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		out = append(out, cur.String())
	}
	return out, nil
}

// exampleResult is one example's outcome.
type exampleResult struct {
	Example example
	Err     error
}

// runREADMEExamples runs every example of the files, in order, against
// the gateway p.
func runREADMEExamples(ctx context.Context, p *proc, files []docFile, nodePath, nodeDir string) ([]exampleResult, error) {
	var exs []example
	for _, f := range files {
		fe, err := readmeExamples(f.Name, f.Text)
		if err != nil {
			return nil, err
		}
		exs = append(exs, fe...)
	}
	r := &exampleRunner{base: p.URL, client: p.client, fx: sandbox.New(sandbox.Options{}).Fixtures()[0], nodePath: nodePath, nodeDir: nodeDir}
	out := make([]exampleResult, len(exs))
	for i, ex := range exs {
		out[i] = exampleResult{ex, r.run(ctx, ex)}
	}
	return out, nil
}

// TestREADMEExamples runs every example of README.md and docs/*.md as
// written against the sandbox-mode binary: each operation of each graphql
// block, each curl line (POST and GET, with its headers), and each fetch
// snippet's query; only placeholders are replaced. Each must answer 200
// with data and no errors. The "broken" cases run the same on the files
// with one example spoiled, and must fail.
func TestREADMEExamples(t *testing.T) {
	t.Parallel()
	p := startGateway(t, nil)
	files := docFiles(t)
	ctx := context.Background()
	var nodePath, nodeDir string
	if _, err := exec.LookPath("node"); err == nil || os.Getenv("CI") != "" {
		if _, err := os.Stat("clients/node_modules/@apollo/client"); err == nil || os.Getenv("CI") != "" {
			nodePath, nodeDir = nodeClients(t) // fails under CI when missing
		}
	}
	results, err := runREADMEExamples(ctx, p, files, nodePath, nodeDir)
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]int{}
	for _, res := range results {
		kinds[res.Example.Kind]++
		t.Run(res.Example.name(), func(t *testing.T) {
			if errors.Is(res.Err, errNodeSkipped) {
				t.Skip(res.Err)
			}
			if res.Err != nil {
				t.Errorf("%s, %s:\n%s\n=> %v", res.Example.where(), res.Example.Kind, res.Example.Text, res.Err)
			}
		})
	}
	// The documentation's examples as of this test: fewer found means the
	// parser lost some, not that they passed.
	for kind, least := range map[string]int{"graphql": 8, "curl": 4, "fetch": 2, "node": 1} {
		if kinds[kind] < least {
			t.Errorf("found %d %s examples in the documentation, want at least %d: %v", kinds[kind], kind, least, kinds)
		}
	}
	t.Logf("documentation examples run: %v", kinds)

	fx := sandbox.New(sandbox.Options{}).Fixtures()[0]
	broken := []struct {
		name, from, to string
		node           bool // runs the Node programs (only the case that spoils one: each takes seconds)
	}{
		{"broken_node_program", "gql`query Payments { payments(first: 50) { nodes { id status", "gql`query Payments { payments(first: 50) { nodes { id state", true},
		{"broken_link_id", `paymentLink(id: "` + fx.PaymentLinkID + `")`, `paymentLink(id: "` + fx.PaymentLinkID + `x")`, false},
		{"broken_next_page_with_another_filter", `status: SUCCEEDED, after:`, `status: FAILED, after:`, false},
		{"broken_field_name", `customer { address } createdAt }`, `customer { address } created_at }`, false},
		{"broken_curl_first_over_100", `payments(first: 3)`, `payments(first: 300)`, false},
		{"broken_get_curl_without_secret", `nodes { id } } }' -H 'x-api-key: ` + fx.Business.APIKey + `' -H 'x-api-secret: ` + fx.Business.APISecret + `'`, `nodes { id } } }' -H 'x-api-key: ` + fx.Business.APIKey + `'`, false},
		{"broken_get_curl_elided_pair", `nodes { id } } }' -H 'x-api-key: ` + fx.Business.APIKey + `' -H 'x-api-secret: ` + fx.Business.APISecret + `'`, `nodes { id } } }' -H 'x-api-key: …' -H 'x-api-secret: …'`, false},
		{"broken_token_mint_placeholder_reference", `"scope": {"kind": "checkoutSession", "id": "` + fx.CheckoutReference + `"}}'`, `"scope": {"kind": "checkoutSession", "id": "REF123"}}'`, false},
		{"broken_sse_curl_unknown_payment", `"variables":{"id":"pay_prod_621a1f1e13162254a9ca0e30de80d53a"}`, `"variables":{"id":"pay_prod_621a1f1e13162254a9ca0e30de80d53b"}`, false},
		{"broken_fetch_query", `payments(first: 5) { nodes { id status } }`, `payments(first: 5) { nodes { id state } }`, false},
	}
	for _, b := range broken {
		t.Run(b.name, func(t *testing.T) {
			spoiled := slices.Clone(files)
			n := 0
			for i, f := range files {
				n += strings.Count(f.Text, b.from)
				spoiled[i].Text = strings.Replace(f.Text, b.from, b.to, 1)
			}
			if n != 1 {
				t.Fatalf("the documentation holds %q %d times, not once: update this case", b.from, n)
			}
			np, nd := "", ""
			if b.node {
				if nodeDir == "" {
					t.Skip(errNodeSkipped)
				}
				np, nd = nodePath, nodeDir
			}
			res, err := runREADMEExamples(ctx, p, spoiled, np, nd)
			if err != nil {
				t.Fatal(err)
			}
			var failed []string
			for _, r := range res {
				if r.Err != nil && !errors.Is(r.Err, errNodeSkipped) {
					failed = append(failed, fmt.Sprintf("%s: %v", r.Example.where(), r.Err))
				}
			}
			if len(failed) != 1 {
				t.Errorf("with %q for %q: %d examples failed, want exactly the spoiled one: %v", b.to, b.from, len(failed), failed)
			} else {
				t.Logf("fails as it should: %s", failed[0])
			}
		})
	}
}

// TestREADMEFixtures: the README's table of fixed ids is what the
// sandbox gives (sandbox.Fixtures), and the binary prints the same ids in
// its banner and with -fixtures.
func TestREADMEFixtures(t *testing.T) {
	t.Parallel()
	text := readme(t)
	fx := sandbox.New(sandbox.Options{}).Fixtures()
	if diff := fixtureTableDiff(text, fx); diff != "" {
		t.Errorf("README \"Try it\" table against sandbox.Fixtures (-sandbox +README):\n%s", diff)
	}
	// Every payment or link id written anywhere in the documentation (the
	// banner sample, the queries) is one of them.
	known := map[string]bool{}
	for _, f := range fx {
		known[f.PaymentID], known[f.PaymentLinkID], known[f.PendingPaymentID] = true, true, true
	}
	for _, f := range docFiles(t) {
		for _, id := range readmeIDRe.FindAllString(f.Text, -1) {
			if !known[id] {
				t.Errorf("%s names %s, which is no fixture of the sandbox", f.Name, id)
			}
		}
	}
	t.Run("broken_table", func(t *testing.T) {
		spoiled := strings.Replace(text, "`"+fx[1].CheckoutReference+"`", "`"+fx[0].CheckoutReference+"`", 1)
		if spoiled == text || fixtureTableDiff(spoiled, fx) == "" {
			t.Errorf("a table with a wrong reference passes")
		}
	})

	out, err := exec.Command(gatewayBinary(t), "-fixtures").Output()
	if err != nil {
		t.Fatalf("-fixtures: %v", err)
	}
	p := startGateway(t, nil)
	for name, printed := range map[string]string{"-fixtures": string(out), "banner": p.Output()} {
		for _, f := range fx {
			want := []string{f.Business.Name, f.PaymentID, f.PaymentLinkID, f.CheckoutReference, f.PendingPaymentID}
			if !slices.ContainsFunc(strings.Split(printed, "\n"), func(line string) bool {
				return allIn(line, want)
			}) {
				t.Errorf("%s prints no line with %v:\n%s", name, want, printed)
			}
		}
	}
}

func allIn(s string, subs []string) bool {
	for _, x := range subs {
		if !strings.Contains(s, x) {
			return false
		}
	}
	return true
}

// fixtureTableDiff compares the README's table rows ("| name | `pay_…` |
// `pl_…` | `REF` | `pay_…` |") with the fixtures.
func fixtureTableDiff(text string, fx []sandbox.Fixture) string {
	type row struct{ Business, Payment, Link, Reference, Pending string }
	var want, got []row
	for _, f := range fx {
		want = append(want, row{f.Business.Name, f.PaymentID, f.PaymentLinkID, f.CheckoutReference, f.PendingPaymentID})
	}
	for _, line := range strings.Split(text, "\n") {
		cells := strings.Split(strings.Trim(strings.TrimSpace(line), "|"), "|")
		if len(cells) != 5 || !strings.HasPrefix(strings.TrimSpace(cells[1]), "`pay_") {
			continue
		}
		c := func(i int) string { return strings.Trim(strings.TrimSpace(cells[i]), "`") }
		got = append(got, row{c(0), c(1), c(2), c(3), c(4)})
	}
	return cmp.Diff(want, got)
}

var jsImportRe = regexp.MustCompile(`(?m)^\s*import \{([^}]+)\} from '([^']+)';`)

// TestREADMEClientImports: every named import of the documentation's js
// snippets from a package that e2e/clients pins (Apollo Client, graphql)
// is an export of it, as Node loads it; the others (urql, crypto-hash,
// graphql-sse, graphql-ws) are listed as not checked.
func TestREADMEClientImports(t *testing.T) {
	t.Parallel()
	node, dir := nodeClients(t)
	var script strings.Builder
	script.WriteString("const missing = [];\n")
	checked := 0
	for _, m := range jsImportRe.FindAllStringSubmatch(allDocs(t), -1) {
		pkg := m[2]
		root := pkg
		if parts := strings.Split(pkg, "/"); strings.HasPrefix(pkg, "@") && len(parts) > 1 {
			root = parts[0] + "/" + parts[1]
		} else {
			root = parts[0]
		}
		if _, err := os.Stat(filepath.Join(dir, "node_modules", root)); err != nil {
			t.Logf("not checked (e2e/clients does not install %s): import {%s} from '%s'", root, m[1], pkg)
			continue
		}
		for _, name := range strings.Split(m[1], ",") {
			name = strings.TrimSpace(name)
			fmt.Fprintf(&script, "if ((await import(%q))[%q] === undefined) missing.push(%q);\n", pkg, name, name+" from "+pkg)
			checked++
		}
	}
	script.WriteString("console.log(JSON.stringify(missing));\n")
	if checked < 5 {
		t.Fatalf("only %d named imports checked: the documentation's snippets or this parser changed", checked)
	}
	// Run from the clients folder so that the imports resolve there.
	cmd := exec.Command(node, "--input-type=module", "-")
	cmd.Dir = dir
	cmd.Stdin = strings.NewReader(script.String())
	cmd.Env = append(os.Environ(), "NODE_NO_WARNINGS=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("node: %v\n%s", err, out)
	}
	var missing []string
	if err := json.Unmarshal(out, &missing); err != nil {
		t.Fatalf("node output %q: %v", out, err)
	}
	if len(missing) > 0 {
		t.Errorf("the documentation's snippets import what their packages do not export: %v", missing)
	}
	t.Logf("%d named imports checked", checked)
}

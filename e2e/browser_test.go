package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"paygraph/gateway"
	"paygraph/internal/testenv"
	"paygraph/sandbox"
)

const chromiumPath = "/usr/bin/chromium"

// browserExampleQuery is what the newcomer finds in the editor and runs.
const browserExampleQuery = gateway.GraphiQLExample

// TestGraphiQLInBrowser loads GraphiQL from a gateway on the sandbox in
// headless Chromium (Debian's package, installed by scripts/ci-setup.sh),
// checks that no request leaves localhost, runs the pre-filled example
// query with the pre-filled demo credentials, finds a payment id in the
// result pane and saves a screenshot (docs/graphiql.png when it is missing
// or UPDATE_SCREENSHOT=1, and always one in a temporary directory). The
// steps share one browser session and run in order as named subtests.
func TestGraphiQLInBrowser(t *testing.T) {
	t.Parallel()
	testenv.Tool(t, chromiumPath)

	// Exactly what `go run .` serves: the binary in sandbox mode (no
	// REST_BASE_URL), GraphiQL at "/" pre-filled with the demo credentials
	// and the example query.
	srv := startGateway(t, nil) // the page under test
	biz := sandbox.New(sandbox.Options{}).Businesses()[0]
	br := openBrowser(t)
	br.load(t, srv.URL+"/")

	t.Run("editors pre-filled", func(t *testing.T) { br.checkEditors(t, biz) })
	t.Run("example query runs", func(t *testing.T) { br.runExample(t, biz) })
	t.Run("explorer and settings within the CSP", br.explore)
	t.Run("no exception and no request leaves localhost", br.checkRequests)
}

// browser is one headless Chromium session that records every request the
// page makes and every uncaught exception.
type browser struct {
	ctx        context.Context
	mu         sync.Mutex
	requests   []string
	exceptions []string
}

// openBrowser starts Chromium (headless, fresh profile, nothing in the
// background) for the test.
func openBrowser(t *testing.T) *browser {
	t.Helper()
	allocOpts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromiumPath),
		chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("no-default-browser-check", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-default-apps", true),
		chromedp.Flag("disable-extensions", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("hide-scrollbars", true),
		chromedp.Flag("mute-audio", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1440, 900),
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	actx, cancelAlloc := chromedp.NewExecAllocator(ctx, allocOpts...)
	t.Cleanup(cancelAlloc)
	bctx, cancelBrowser := chromedp.NewContext(actx, chromedp.WithLogf(t.Logf))
	t.Cleanup(cancelBrowser)
	br := &browser{ctx: bctx}
	if err := chromedp.Listen(bctx, br.record(t)); err != nil {
		t.Fatalf("starting chromium: %v", err)
	}
	return br
}

// record is the DevTools event listener.
func (br *browser) record(t *testing.T) func(ev any) {
	return func(ev any) {
		br.mu.Lock()
		defer br.mu.Unlock()
		switch ev := ev.(type) {
		case *network.EventRequestWillBeSent:
			br.requests = append(br.requests, ev.Request.Method+" "+ev.Request.URL)
		case *network.EventWebSocketCreated:
			br.requests = append(br.requests, "WS "+ev.URL)
		case *runtime.EventExceptionThrown:
			d := ev.ExceptionDetails
			text := d.Text
			if d.Exception != nil {
				text += " " + d.Exception.Description
			}
			br.exceptions = append(br.exceptions, fmt.Sprintf("%s (%s:%d:%d)", text, d.URL, d.LineNumber, d.ColumnNumber))
		case *runtime.EventConsoleAPICalled:
			var args []string
			for _, a := range ev.Args {
				args = append(args, strings.TrimSpace(string(a.Value)+" "+a.Description))
			}
			t.Logf("console.%s: %s", ev.Type, strings.Join(args, " "))
		}
	}
}

// CSP violations are DOM events: collect them from the first script the
// page runs (DevTools scripts are exempt from the page's CSP).
const (
	watchCSP = `window.__csp = []; document.addEventListener('securitypolicyviolation',
		e => window.__csp.push(e.violatedDirective + ' ' + e.blockedURI));`
	editorValues  = `Array.from(document.querySelectorAll('.CodeMirror')).map(e => e.CodeMirror.getValue())`
	responseValue = `(() => { const e = document.querySelector('.result-window .CodeMirror, .graphiql-response .CodeMirror');
		return e ? e.CodeMirror.getValue() : ''; })()`
)

// load opens the page with the network recorded and the CSP watched.
func (br *browser) load(t *testing.T, pageURL string) {
	t.Helper()
	err := chromedp.Do(br.ctx,
		chromedp.Func(func(ctx context.Context, tgt *chromedp.Target) error {
			if _, err := cdp.Call(ctx, tgt, network.Enable, network.EnableParams{}); err != nil {
				return err
			}
			_, err := cdp.Call(ctx, tgt, page.AddScriptToEvaluateOnNewDocument,
				page.AddScriptToEvaluateOnNewDocumentParams{Source: watchCSP})
			return err
		}),
		chromedp.EmulateViewport(1440, 900),
		chromedp.Navigate(pageURL),
		chromedp.WaitVisible(chromedp.CSS(".graphiql-query-editor .CodeMirror")),
		chromedp.WaitVisible(chromedp.CSS(".graphiql-execute-button")),
	)
	if err != nil {
		t.Fatalf("loading GraphiQL: %v", err)
	}
}

// checkEditors finds the example query and the demo credentials in the
// editors.
func (br *browser) checkEditors(t *testing.T, biz sandbox.Business) {
	values, err := chromedp.Run(br.ctx, chromedp.Evaluate[[]string](editorValues))
	if err != nil {
		t.Fatalf("reading the editors: %v", err)
	}
	if !contains(values, browserExampleQuery) {
		t.Errorf("example query not in the editors: %q", values)
	}
	if !contains(values, biz.APIKey) || !contains(values, biz.APISecret) {
		t.Errorf("demo credentials not in the headers editor: %q", values)
	}
}

// runExample runs the example query, waits for a payment id in the result
// pane, checks the result against the sandbox and saves the screenshot.
func (br *browser) runExample(t *testing.T, biz sandbox.Business) {
	if err := chromedp.Do(br.ctx, chromedp.Click(chromedp.CSS(".graphiql-execute-button"))); err != nil {
		t.Fatalf("clicking run: %v", err)
	}
	var response string
	var err error
	for !strings.Contains(response, "pay_prod_") {
		if response, err = chromedp.Run(br.ctx, chromedp.Evaluate[string](responseValue)); err != nil {
			t.Fatalf("no payment id in the result pane (it holds %q): %v", response, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	paneText, err := chromedp.Run(br.ctx, chromedp.Text(chromedp.CSS(".result-window")))
	if err != nil {
		t.Fatalf("reading the result pane: %v", err)
	}
	if !strings.Contains(paneText, "pay_prod_") {
		t.Errorf("result pane shows no payment id: %q", paneText)
	}
	var result struct {
		Data struct {
			Payments struct {
				Edges []struct{ Node struct{ ID string } }
			}
		}
		Errors []any
	}
	if err := json.Unmarshal([]byte(response), &result); err != nil {
		t.Errorf("result pane is not JSON: %v\n%s", err, response)
	} else if len(result.Data.Payments.Edges) != 5 || len(result.Errors) != 0 || result.Data.Payments.Edges[0].Node.ID != sandbox.New(sandbox.Options{}).Payments(biz.APIKey)[0].ID {
		t.Errorf("result: %s", response)
	}
	screenshot, err := chromedp.Run(br.ctx, chromedp.FullScreenshot(100)) // 100: PNG
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	saveScreenshot(t, screenshot)
}

// saveScreenshot writes the screenshot to a temporary directory, and to
// the module's docs/graphiql.png when it is missing or UPDATE_SCREENSHOT=1.
func saveScreenshot(t *testing.T, screenshot []byte) {
	tmpShot := filepath.Join(t.TempDir(), "graphiql.png")
	if err := os.WriteFile(tmpShot, screenshot, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", tmpShot)
	docShot := filepath.Join("..", "docs", "graphiql.png") // the module's docs/
	if _, err := os.Stat(docShot); os.Getenv("UPDATE_SCREENSHOT") == "1" || os.IsNotExist(err) {
		if err := os.MkdirAll(filepath.Dir(docShot), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(docShot, screenshot, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("screenshot saved to %s", docShot)
	}
}

// explore opens the documentation explorer (it needs the introspected
// schema) and the settings dialog (Radix UI inserts <style> elements): the
// page's CSP must allow what they do.
func (br *browser) explore(t *testing.T) {
	err := chromedp.Do(br.ctx,
		chromedp.Click(chromedp.CSS(`[aria-label="Show Documentation Explorer"]`)),
		chromedp.WaitVisible(chromedp.CSS(".graphiql-doc-explorer")),
		chromedp.Click(chromedp.CSS(`[aria-label="Open settings dialog"]`)),
		chromedp.WaitVisible(chromedp.CSS(".graphiql-dialog")),
		chromedp.KeyEvent(kb.Escape),
		chromedp.WaitNotPresent(chromedp.CSS(".graphiql-dialog")),
	)
	if err != nil {
		t.Errorf("exploring GraphiQL: %v", err)
	}
	csp, err := chromedp.Run(br.ctx, chromedp.Evaluate[[]string](`window.__csp`))
	if err != nil {
		t.Fatalf("reading CSP violations: %v", err)
	}
	for _, v := range csp {
		t.Errorf("Content-Security-Policy violation: %s", v)
	}
}

// checkRequests fails on any uncaught exception and any request that left
// the machine, and wants the page, the bundle and a query among them.
func (br *browser) checkRequests(t *testing.T) {
	br.mu.Lock()
	defer br.mu.Unlock()
	for _, e := range br.exceptions {
		t.Errorf("uncaught exception in the page: %s", e)
	}
	var sawPage, sawBundle, sawQuery bool
	for _, r := range br.requests {
		method, raw, _ := strings.Cut(r, " ")
		if !isLocal(raw) {
			t.Errorf("request left localhost: %s", r)
		}
		u, _ := url.Parse(raw)
		if u == nil {
			continue
		}
		sawPage = sawPage || u.Path == "/"
		sawBundle = sawBundle || u.Path == "/graphiql/graphiql.min.js"
		sawQuery = sawQuery || (method == http.MethodPost && u.Path == "/graphql")
	}
	if !sawPage || !sawBundle || !sawQuery {
		t.Errorf("requests recorded (page %v, bundle %v, query %v): %q", sawPage, sawBundle, sawQuery, br.requests)
	}
	short := make([]string, len(br.requests))
	for i, r := range br.requests {
		if len(r) > 100 {
			r = r[:100] + "…"
		}
		short[i] = r
	}
	t.Logf("%d requests, all local:\n\t%s", len(br.requests), strings.Join(short, "\n\t"))
}

// isLocal reports whether a URL the page requested stays on this machine.
func isLocal(raw string) bool {
	u, err := url.Parse(raw)
	if err != nil {
		return false
	}
	switch u.Scheme {
	case "data", "blob":
		return true
	case "http", "https", "ws", "wss":
		host := u.Hostname()
		if host == "localhost" {
			return true
		}
		ip := net.ParseIP(host)
		return ip != nil && ip.IsLoopback()
	}
	return false
}

func contains(values []string, s string) bool {
	for _, v := range values {
		if strings.Contains(v, s) {
			return true
		}
	}
	return false
}

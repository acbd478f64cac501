package e2e

// The REST inspector in GraphiQL (issue 26), in headless Chromium: the
// "REST calls" panel shows the REST calls of the query just run, and
// nothing of the REST API's address or of a credential.

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"paygraph/internal/testenv"
	"paygraph/sandbox"
)

// restPanelRows is the text of each row of the REST calls panel.
const restPanelRows = `Array.from(document.querySelectorAll('#graphiql-rest .graphiql-rest-call')).map(r => r.innerText)`

// pageWithoutHeadersEditor is the page's HTML without what sandbox mode
// pre-fills with the demo credentials on purpose (the newcomer's first
// run): GraphiQL's headers editor and the page's options block.
const pageWithoutHeadersEditor = `(() => {
	const c = document.documentElement.cloneNode(true);
	c.querySelectorAll('.graphiql-editor-tool .graphiql-editor, #graphiql-options').forEach(e => e.remove());
	return c.outerHTML;
})()`

// TestGraphiQLRESTInspector runs GraphiQL's example query (a page of 5
// payments with their addresses: one list call and five detail calls) on
// the sandbox-mode binary, finds each REST call in the REST calls panel
// with its route template, id and status, saves a screenshot
// (docs/graphiql-rest-inspector.png when missing or UPDATE_SCREENSHOT=1)
// and checks that neither the REST API's base URL nor a credential
// appears in the panel, the answers, or the page outside the headers
// editor.
func TestGraphiQLRESTInspector(t *testing.T) {
	t.Parallel()
	testenv.Tool(t, chromiumPath)
	srv := startGateway(t, nil)
	m := regexp.MustCompile(`embedded sandbox with demo data at (http://[0-9.:]+)`).FindStringSubmatch(srv.Output())
	if m == nil {
		t.Fatalf("the gateway did not print the sandbox's base URL:\n%s", srv.Output())
	}
	restBase := m[1]
	sb := sandbox.New(sandbox.Options{})
	biz := sb.Businesses()[0]
	ids := sb.Payments(biz.APIKey)[:5]

	br := openBrowser(t)
	br.load(t, srv.URL+"/")
	if err := chromedp.Do(br.ctx, chromedp.Click(chromedp.CSS(".graphiql-execute-button"))); err != nil {
		t.Fatalf("clicking run: %v", err)
	}
	var rows []string
	deadline := time.Now().Add(20 * time.Second)
	for len(rows) < 6 {
		if time.Now().After(deadline) {
			t.Fatalf("the REST calls panel shows %d rows, want 6: %q", len(rows), rows)
		}
		var err error
		if rows, err = chromedp.Run(br.ctx, chromedp.Evaluate[[]string](restPanelRows)); err != nil {
			t.Fatalf("reading the REST calls panel: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if len(rows) != 6 {
		t.Errorf("%d REST calls in the panel, want 6 (a page and 5 details): %q", len(rows), rows)
	}
	list, details := 0, map[string]bool{}
	for _, r := range rows {
		f := strings.Fields(r)
		switch {
		case len(f) >= 3 && f[1] == "/api/v1/payments" && f[2] == "200":
			list++
		case len(f) >= 4 && f[1] == "/api/v1/payments/{id}" && f[3] == "200":
			details[f[2]] = true
		default:
			t.Errorf("a row that is not a documented REST call with its status: %q", r)
		}
	}
	for _, p := range ids {
		if !details[p.ID] {
			t.Errorf("no detail call of %s in the panel: %q", p.ID, rows)
		}
	}
	if list != 1 {
		t.Errorf("%d list calls in the panel, want 1: %q", list, rows)
	}
	summary, err := chromedp.Run(br.ctx, chromedp.Text(chromedp.CSS("#graphiql-rest .graphiql-rest-summary")))
	if err != nil || !strings.Contains(summary, "estimated 6") || !strings.Contains(summary, "made 6") {
		t.Errorf("panel summary %q (%v), want estimated 6 and made 6", summary, err)
	}

	screenshot, err := chromedp.Run(br.ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	tmp := filepath.Join(t.TempDir(), "graphiql-rest-inspector.png")
	if err := os.WriteFile(tmp, screenshot, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", tmp)
	doc := filepath.Join("..", "docs", "graphiql-rest-inspector.png")
	if _, err := os.Stat(doc); os.Getenv("UPDATE_SCREENSHOT") == "1" || os.IsNotExist(err) {
		if err := os.WriteFile(doc, screenshot, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("screenshot saved to %s", doc)
	}

	page, err := chromedp.Run(br.ctx, chromedp.Evaluate[string](pageWithoutHeadersEditor))
	if err != nil {
		t.Fatalf("reading the page: %v", err)
	}
	response, err := chromedp.Run(br.ctx, chromedp.Evaluate[string](responseValue))
	if err != nil {
		t.Fatalf("reading the result pane: %v", err)
	}
	if !strings.Contains(response, `"cost"`) {
		t.Errorf("the result pane holds no receipt: %.500s", response)
	}
	host := strings.TrimPrefix(restBase, "http://")
	for what, secret := range map[string]string{
		"the REST base URL": restBase, "the REST API's host and port": host,
		"the demo API key": biz.APIKey, "the demo API secret": biz.APISecret,
	} {
		for where, text := range map[string]string{"the page": page, "the result pane": response, "the panel": strings.Join(rows, "\n")} {
			if strings.Contains(text, secret) {
				t.Errorf("%s appears in %s", what, where)
			}
		}
	}
	if strings.Contains(strings.Join(rows, "\n"), "sk_test_") || strings.Contains(response, "sk_test_") {
		t.Error("a secret's prefix appears in the REST calls")
	}
	br.checkRequests(t)
}

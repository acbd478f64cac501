package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"paygraph/internal/gqltest"
	"paygraph/internal/testenv"
	"paygraph/sandbox"
)

// TestGraphiQLTokenBox pastes a session token into GraphiQL's token box
// in a real browser and runs the pre-filled query: the page sends the
// token as Authorization: Bearer, and not the headers editor's demo pair
// (the gateway would refuse both). The token is scoped to one payment, so
// the example's payments list answers FORBIDDEN: proof that the token,
// not the pair, was used. Then an "all" token at the default customer-data
// level (masked) runs it: the result pane shows the masked customers and
// extensions.customerData with the masked paths (issue 27).
func TestGraphiQLTokenBox(t *testing.T) {
	t.Parallel()
	testenv.Tool(t, chromiumPath)
	srvURL := startGateway(t, nil).URL // sandbox mode: no REST_BASE_URL, a random token key
	biz := sandbox.New(sandbox.Options{}).Businesses()[0]
	payID := sandbox.New(sandbox.Options{}).Payments(biz.APIKey)[0].ID
	r := (&gqltest.Client{URL: srvURL}).Do(t, http.MethodPost, "/auth/token",
		gqltest.Headers(biz.APIKey, biz.APISecret), []byte(`{"scope":{"kind":"payment","id":"`+payID+`"}}`))
	var minted struct{ Token string }
	if err := json.Unmarshal(r.Raw, &minted); err != nil || minted.Token == "" {
		t.Fatalf("mint: %d %s", r.Status, r.Raw)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	actx, cancelAlloc := chromedp.NewExecAllocator(ctx,
		chromedp.ExecPath(chromiumPath), chromedp.Flag("headless", true), chromedp.Flag("no-sandbox", true),
		chromedp.Flag("disable-gpu", true), chromedp.Flag("no-first-run", true),
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1280, 800))
	defer cancelAlloc()
	bctx, cancelBrowser := chromedp.NewContext(actx, chromedp.WithLogf(t.Logf))
	defer cancelBrowser()

	var (
		mu      sync.Mutex
		queries []network.Headers // the headers of every POST /graphql
	)
	if err := chromedp.Listen(bctx, func(ev any) {
		if ev, ok := ev.(*network.EventRequestWillBeSent); ok && ev.Request.Method == http.MethodPost && strings.HasSuffix(ev.Request.URL, "/graphql") {
			mu.Lock()
			queries = append(queries, ev.Request.Headers)
			mu.Unlock()
		}
	}); err != nil {
		t.Fatalf("starting chromium: %v", err)
	}
	const responseValue = `(() => { const e = document.querySelector('.result-window .CodeMirror, .graphiql-response .CodeMirror');
		return e ? e.CodeMirror.getValue() : ''; })()`
	err := chromedp.Do(bctx,
		chromedp.Func(func(ctx context.Context, tgt *chromedp.Target) error {
			_, err := cdp.Call(ctx, tgt, network.Enable, network.EnableParams{})
			return err
		}),
		chromedp.Navigate(srvURL+"/"),
		chromedp.WaitVisible(chromedp.CSS(".graphiql-execute-button")),
		chromedp.WaitVisible(chromedp.CSS("#graphiql-token")),
		chromedp.SendKeys(chromedp.CSS("#graphiql-token"), minted.Token),
		chromedp.Click(chromedp.CSS(".graphiql-execute-button")),
	)
	if err != nil {
		t.Fatalf("GraphiQL with a token: %v", err)
	}
	var response string
	for deadline := time.Now().Add(20 * time.Second); !strings.Contains(response, `"code"`); {
		if response, err = chromedp.Run(bctx, chromedp.Evaluate[string](responseValue)); err != nil || time.Now().After(deadline) {
			t.Fatalf("no error in the result pane (it holds %q): %v", response, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if !strings.Contains(response, "FORBIDDEN") || !strings.Contains(response, "scope does not include") {
		t.Errorf("the example query with a payment-scoped token: %s", response)
	}

	r = (&gqltest.Client{URL: srvURL}).Do(t, http.MethodPost, "/auth/token",
		gqltest.Headers(biz.APIKey, biz.APISecret), []byte(`{"scope":{"kind":"all"}}`))
	var all struct{ Token string }
	if err := json.Unmarshal(r.Raw, &all); err != nil || all.Token == "" {
		t.Fatalf("mint: %d %s", r.Status, r.Raw)
	}
	if err := chromedp.Do(bctx,
		chromedp.SetValue("#graphiql-token", all.Token),
		chromedp.Click(chromedp.CSS(".graphiql-execute-button")),
	); err != nil {
		t.Fatalf("GraphiQL with an all token: %v", err)
	}
	for deadline := time.Now().Add(20 * time.Second); !strings.Contains(response, `"address": null`); {
		if response, err = chromedp.Run(bctx, chromedp.Evaluate[string](responseValue)); err != nil || time.Now().After(deadline) {
			t.Fatalf("no extensions.customerData in the result pane (it holds %q): %v", response, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	for _, want := range []string{`"customerData": {`, `"level": "masked"`, `"maskedPaths": [`, `"edges",`, `"address"`} {
		if !strings.Contains(response, want) {
			t.Errorf("the result pane of a masked token does not show %s: %s", want, response)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	var sawToken bool
	for _, h := range queries {
		auth := ""
		for k, v := range h {
			if strings.EqualFold(k, "authorization") {
				auth, _ = v.(string)
			}
		}
		if auth != "Bearer "+minted.Token {
			continue
		}
		sawToken = true
		for k := range h {
			if strings.EqualFold(k, "x-api-key") || strings.EqualFold(k, "x-api-secret") {
				t.Errorf("the query with a token also sent %s", k)
			}
		}
	}
	if !sawToken {
		t.Errorf("no POST /graphql carried Authorization: Bearer <token> (%d queries)", len(queries))
	}
}

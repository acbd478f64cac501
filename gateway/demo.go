package gateway

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"paygraph/graphiql"
	"paygraph/restclient"
	"paygraph/sandbox"
)

// startDemo starts the embedded sandbox REST API that `go run .` serves
// without REST_BASE_URL.
func (g *Gateway) startDemo() error {
	sb := sandbox.New(sandbox.Options{StatusParam: g.cfg.RESTStatusParam})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("sandbox: %w", err)
	}
	srv := &http.Server{Handler: sb, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	g.demo, g.baseURL = sb, "http://"+ln.Addr().String()
	g.closers = append(g.closers, srv.Close)
	return nil
}

// graphiqlOptions pre-fills GraphiQL with the demo credentials and an example
// query in sandbox mode.
func (g *Gateway) graphiqlOptions() graphiql.Options {
	opts := graphiql.Options{Endpoint: "/graphql", Title: "paygraph", RESTCalls: g.cfg.CostReceipts}
	if g.tokens {
		opts.TokenReplaces = []string{restclient.HeaderAPIKey, restclient.HeaderAPISecret}
	}
	if g.demo != nil {
		b := g.demo.Businesses()[0]
		opts.Headers = map[string]string{restclient.HeaderAPIKey: b.APIKey, restclient.HeaderAPISecret: b.APISecret}
		opts.DefaultQuery = GraphiQLExample
	}
	return opts
}

// GraphiQLExample is the query GraphiQL opens with in sandbox mode.
const GraphiQLExample = `# Demo data from the embedded sandbox: press Run.
{
  payments(first: 5) {
    edges {
      cursor
      node {
        id
        status
        amount { amount paisa currency }
        customer { name address }
        createdAt
      }
    }
    pageInfo { hasNextPage endCursor }
  }
}
`

// ExampleQuery is the query of the banner's curl line.
const ExampleQuery = `{ payments(first: 3) { edges { cursor node { id amount { amount paisa } customer { name address } } } pageInfo { hasNextPage endCursor } } }`

// PrintBanner tells the terminal where the gateway listens, in sandbox mode
// with demo credentials to try.
func (g *Gateway) PrintBanner(out io.Writer, addr net.Addr) {
	port := "8080"
	if ta, ok := addr.(*net.TCPAddr); ok {
		port = strconv.Itoa(ta.Port)
	}
	url := "http://localhost:" + port
	fmt.Fprintf(out, "paygraph is listening on %s (GraphiQL at %s/, GraphQL at %s/graphql)\n", url, url, url)
	if g.demo == nil {
		fmt.Fprintf(out, "REST API: %s\n", redactedURL(g.baseURL))
		return
	}
	sb := g.demo
	fmt.Fprintf(out, "REST API: embedded sandbox with demo data at %s\n\nDemo credentials:\n", g.baseURL)
	for _, b := range sb.Businesses() {
		fmt.Fprintf(out, "  %-20s x-api-key: %s  x-api-secret: %s\n", b.Name, b.APIKey, b.APISecret)
	}
	fmt.Fprintln(out)
	writeFixtures(out, "Fixed ids for the README's queries (`go run . -fixtures` prints them again):", sb.Fixtures())
	b := sb.Businesses()[0]
	fmt.Fprintf(out, "\nTry it:\n  curl -s %s/graphql -H 'content-type: application/json' \\\n    -H 'x-api-key: %s' -H 'x-api-secret: %s' \\\n    -d '{\"query\":\"%s\"}'\n",
		url, b.APIKey, b.APISecret, ExampleQuery)
	if g.tokens {
		keyNote := "TOKEN_KEYS"
		if g.cfg.TokenKeys == nil {
			keyNote = "a random key: its tokens die with the process"
		}
		fmt.Fprintf(out, "\nA session token for a browser or an app, as the merchant's server gets one (%s):\n"+
			"  curl -s %s/auth/token -H 'content-type: application/json' \\\n    -H 'x-api-key: %s' -H 'x-api-secret: %s' \\\n"+
			"    -d '{\"ttlSeconds\":900,\"scope\":{\"kind\":\"all\"}}'\n"+
			"then send 'Authorization: Bearer <token>' instead of the two headers (GraphiQL has a box for it).\n",
			keyNote, url, b.APIKey, b.APISecret)
	}
	// A PENDING payment, settled through the sandbox's own admin route.
	pay := sb.Fixtures()[0].PendingPaymentID
	fmt.Fprintf(out, "\nWatch a payment change (sandbox only). Subscribe first (GraphiQL, or this stream of server-sent events):\n"+
		"  curl -sN %s/graphql -H 'content-type: application/json' -H 'accept: text/event-stream' \\\n"+
		"    -H 'x-api-key: %s' -H 'x-api-secret: %s' \\\n"+
		"    -d '{\"query\":\"subscription($id: ID!) { paymentUpdated(id: $id) { id status updatedAt } }\",\"variables\":{\"id\":\"%s\"}}'\n"+
		"then, in another terminal, settle that PENDING payment, and the stream shows the change within seconds:\n"+
		"  curl -s -X POST %s/sandbox/payments/%s/status -H 'x-api-key: %s' -H 'x-api-secret: %s' -d '{\"status\":\"SUCCEEDED\"}'\n",
		url, b.APIKey, b.APISecret, pay, g.baseURL, pay, b.APIKey, b.APISecret)
}

// PrintFixtures writes the embedded sandbox's fixed ids, for -fixtures.
func PrintFixtures(out io.Writer, cfg Config) {
	writeFixtures(out, "Fixed ids of the embedded sandbox's demo data, the same on every machine (README \"Try it\"):",
		sandbox.New(sandbox.Options{StatusParam: cfg.RESTStatusParam}).Fixtures())
}

// writeFixtures prints one line of ids a demo business.
func writeFixtures(out io.Writer, title string, fx []sandbox.Fixture) {
	fmt.Fprintln(out, title)
	for _, f := range fx {
		fmt.Fprintf(out, "  %-20s payment: %s  payment link: %s  checkout session reference: %s  PENDING payment: %s\n",
			f.Business.Name, f.PaymentID, f.PaymentLinkID, f.CheckoutReference, f.PendingPaymentID)
	}
}

// redactedURL hides a URL's password before it is printed.
func redactedURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable URL)"
	}
	return u.Redacted()
}

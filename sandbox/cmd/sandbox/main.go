// Command sandbox serves the sandbox REST API (package paygraph/sandbox) over
// HTTP until SIGINT or SIGTERM.
//
//	go run ./sandbox/cmd/sandbox -addr 127.0.0.1:9090 -latency 20ms
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"paygraph/sandbox"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:9090", "listen address")
	latency := flag.Duration("latency", 0, "latency added to every request")
	seed := flag.Int64("seed", 0, "data seed (0 = default seed)")
	statusParam := flag.String("status-param", "status", "name of the list status filter query parameter")
	payURL := flag.String("pay-url", "", "base {pay_url} of payment link urls (default https://pay.example.com)")
	flag.Parse()

	srv := sandbox.New(sandbox.Options{Seed: *seed, StatusParam: *statusParam, PayURL: *payURL, Latency: *latency})

	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatalf("sandbox: listen: %v", err)
	}
	fmt.Printf("sandbox REST API listening on http://%s\n", ln.Addr())
	fmt.Printf("status filter parameter: %s\n", srv.StatusParam())
	for _, f := range srv.Fixtures() {
		b := f.Business
		fmt.Printf("business %q\n  x-api-key:    %s\n  x-api-secret: %s\n", b.Name, b.APIKey, b.APISecret)
		fmt.Printf("  a payment: %s  a payment link: %s  a checkout session reference: %s  a PENDING payment: %s\n", f.PaymentID, f.PaymentLinkID, f.CheckoutReference, f.PendingPaymentID)
	}
	fmt.Printf("change a payment's status (sandbox only, not a REST route):\n"+
		"  curl -X POST http://%s/sandbox/payments/<id>/status -H 'x-api-key: ...' -H 'x-api-secret: ...' -d '{\"status\":\"SUCCEEDED\"}'\n", ln.Addr())

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	hs := &http.Server{Handler: srv, ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()

	select {
	case err := <-errc:
		if !errors.Is(err, http.ErrServerClosed) {
			log.Fatalf("sandbox: serve: %v", err)
		}
	case <-ctx.Done():
		fmt.Println("shutting down")
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := hs.Shutdown(sctx); err != nil {
			log.Printf("sandbox: shutdown: %v", err)
		}
	}
}

// Command paygraph is a GraphQL gateway in front of a merchant's Payment
// Records Read API. With no REST_BASE_URL it starts an embedded sandbox
// REST API with demo data, so `go run .` is enough to explore it. main
// reads the settings, builds the gateway, serves, and shuts down on
// SIGINT/SIGTERM.
package main

import (
	"cmp"
	"context"
	_ "embed"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"

	"paygraph/gateway"
	"paygraph/observe"
)

//go:embed schema.graphqls
var schemaSDL string

func main() { os.Exit(run()) }

func run() int {
	fs := flag.NewFlagSet("paygraph", flag.ContinueOnError)
	printSchema := fs.Bool("print-schema", false, "print the GraphQL schema (SDL) and exit")
	manifest := fs.Bool("manifest", false, "print an Apollo persisted query manifest of the operations in the .graphql files given as arguments (for TRUSTED_DOCUMENTS), and exit")
	fixtures := fs.Bool("fixtures", false, "print the embedded sandbox's fixed ids (a payment, a payment link and a checkout session reference of each demo business) and exit")
	healthCheck := fs.Bool("healthcheck", false, "probe http://127.0.0.1:$HEALTH_PORT/healthz ($PORT when HEALTH_PORT is 0) and exit 0 if healthy (container health checks need no shell)")
	cfg, err := gateway.LoadConfig(fs, os.Getenv, os.Args[1:])
	switch {
	case errors.Is(err, flag.ErrHelp):
		return 0
	case err != nil:
		fmt.Fprintln(os.Stderr, "paygraph: bad configuration:", err)
		return 2
	case *printSchema:
		fmt.Print(schemaSDL)
		return 0
	case *fixtures:
		gateway.PrintFixtures(os.Stdout, cfg)
		return 0
	case *manifest:
		return gateway.PrintManifest(os.Stdout, os.Stderr, fs.Args())
	case *healthCheck:
		return gateway.HealthCheck(cfg.Host, cmp.Or(cfg.HealthPort, cfg.Port))
	}

	logger := gateway.NewLogger(os.Stderr, cfg)
	// The standard log package goes through the same redacting handler.
	slog.SetDefault(logger)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := serve(ctx, cfg, logger); err != nil {
		logger.Error("paygraph stopped", "err", err)
		return 1
	}
	return 0
}

// serve runs the gateway until ctx is done.
func serve(ctx context.Context, cfg gateway.Config, logger *slog.Logger) error {
	stopTracing, tracing, err := observe.SetupTracing(ctx, "paygraph")
	if err != nil {
		return err
	}
	defer func() {
		fctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = stopTracing(fctx)
	}()
	gw, err := gateway.New(cfg, gateway.WithLogger(logger), gateway.WithTracing(tracing))
	if err != nil {
		return err
	}
	defer gw.Close()
	ln, err := net.Listen("tcp", cfg.ListenAddr())
	if err != nil {
		return err
	}
	var probes net.Listener
	if addr := cfg.HealthAddr(); addr != "" {
		if probes, err = net.Listen("tcp", addr); err != nil {
			ln.Close()
			return fmt.Errorf("HEALTH_PORT: %w", err)
		}
	}
	gw.PrintBanner(os.Stdout, ln.Addr())
	return gw.ServeProbes(ctx, ln, probes)
}

package gateway

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"sync"
	"syscall"

	"github.com/redis/go-redis/v9"

	"paygraph/observe"
	"paygraph/ratelimit"
	"paygraph/trusteddocs"
)

// newRateLimiter builds the per-merchant limits, shared through rdb if set;
// nil when every limit is 0.
func newRateLimiter(cfg Config, rdb *redis.Client, metrics *observe.Metrics, logger *slog.Logger, skipped func(read string, n int)) (*ratelimit.Limiter, error) {
	rc := ratelimit.Config{
		RESTCallsPerSecond: cfg.RateLimitRESTPerSecond, RESTBurst: cfg.RateLimitRESTBurst,
		RequestsPerSecond: cfg.RateLimitRequestsPerSecond, RequestsBurst: cfg.RateLimitRequestsBurst,
		Logger: logger,
	}
	if (rc.RESTCallsPerSecond == 0 || rc.RESTBurst == 0) && (rc.RequestsPerSecond == 0 || rc.RequestsBurst == 0) {
		return nil, nil
	}
	rc.OnDecision = metrics.RateLimitCounter()
	rc.OnJunk = func() { skipped("ratelimit", 1) }
	if rdb != nil { // never a typed nil in the interface
		rc.Redis = rdb
	}
	return ratelimit.New(rc)
}

// newAnonymousLimiter is an in-memory budget of anonymous requests (no address
// in Redis); nil when off.
func newAnonymousLimiter(perSecond, burst int) (*ratelimit.Limiter, error) {
	if perSecond == 0 || burst == 0 {
		return nil, nil
	}
	return ratelimit.New(ratelimit.Config{RequestsPerSecond: perSecond, RequestsBurst: burst})
}

// newTrustedDocuments loads the manifest (in mode off too, to stage it); nil
// without one. The report counts each decision and logs an unlisted document's
// first sighting by hash, never its text.
func newTrustedDocuments(cfg Config, metrics *observe.Metrics, logger *slog.Logger) (*trusteddocs.Store, func(context.Context, trusteddocs.Decision), error) {
	if cfg.TrustedDocuments == "" {
		return nil, nil, nil
	}
	store, err := trusteddocs.New(trusteddocs.Config{Mode: cfg.TrustedDocumentsMode, Path: cfg.TrustedDocuments,
		Introspection: cfg.TrustedDocumentsIntrospection})
	if err != nil {
		return nil, nil, err
	}
	info := store.Info()
	logger.Info("trusted documents loaded", "mode", string(store.Mode()), "format", info.Format,
		"operations", info.Operations, "manifest_sha256", info.SHA256)
	count := metrics.TrustedDocumentsCounter()
	var mu sync.Mutex
	seen := make(map[string]struct{})
	// first reports a hash's first sighting; past maxUnlistedLogged hashes (64
	// bytes each), it is false.
	const maxUnlistedLogged = 4096
	first := func(hash string) bool {
		mu.Lock()
		defer mu.Unlock()
		if _, ok := seen[hash]; ok || len(seen) >= maxUnlistedLogged {
			return false
		}
		seen[hash] = struct{}{}
		return true
	}
	report := func(ctx context.Context, d trusteddocs.Decision) {
		count(d.Outcome)
		switch d.Outcome {
		case trusteddocs.OutcomeUnlisted, trusteddocs.OutcomeNotListed, trusteddocs.OutcomeAPQRegistrationRefused, trusteddocs.OutcomeUnknownID:
			if d.Hash != "" && first(d.Hash) {
				logger.InfoContext(ctx, "trusted documents: a document not in the manifest (first sighting)",
					"outcome", d.Outcome, "hash", d.Hash, "mode", string(store.Mode()), "request_id", observe.RequestID(ctx))
			}
		}
	}
	return store, report, nil
}

// Reload reads the trusted documents manifest again and swaps it in whole;
// on an error the current set stays. ServeProbes calls it on SIGHUP.
func (g *Gateway) Reload() error {
	if g.docs == nil {
		return nil
	}
	if err := g.docs.Reload(); err != nil {
		g.logger.Error("trusted documents: reload failed; the previous manifest stays in use", "err", err)
		return err
	}
	info := g.docs.Info()
	g.logger.Info("trusted documents reloaded", "format", info.Format, "operations", info.Operations, "manifest_sha256", info.SHA256)
	return nil
}

// reloadOnSIGHUP calls Reload on every SIGHUP until stop; without a manifest
// SIGHUP keeps its meaning.
func (g *Gateway) reloadOnSIGHUP() (stop func()) {
	if g.docs == nil {
		return func() {}
	}
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range hup {
			_ = g.Reload()
		}
	}()
	// After Stop no signal is sent on hup: closing it is safe.
	return func() { signal.Stop(hup); close(hup); <-done }
}

// PrintManifest writes the .graphql files' persisted query manifest to w
// (-manifest): the exit code.
func PrintManifest(w, errw io.Writer, files []string) int {
	if len(files) == 0 {
		fmt.Fprintln(errw, "paygraph -manifest: name the .graphql files holding the client's operations")
		return 2
	}
	b, err := trusteddocs.BuildManifest(files)
	if err != nil {
		fmt.Fprintln(errw, "paygraph -manifest:", err)
		return 1
	}
	_, _ = w.Write(b)
	return 0
}

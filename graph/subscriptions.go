package graph

// This file holds the Subscription resolvers: live payment and checkout
// session status. The REST API has no events, so a subscription is a
// livepoll.Hub subscription whose fetch is one REST GET made with the
// subscriber's own credential pair: subscribers of one resource and one
// merchant share one poller, so a hundred screens on a payment cost one
// REST call per interval.
//
// How a subscription ends, as a client sees it:
//   - at a terminal state (FAILED, CANCELLED, REFUNDED; SUCCEEDED after the
//     watch of SUBSCRIPTION_WATCH_AFTER_SUCCESS): the last event carries
//     that state, then the stream completes;
//   - after a REST answer that polling again cannot change (NOT_FOUND,
//     UNAUTHENTICATED, FORBIDDEN, BAD_USER_INPUT): an error event with that
//     code, then complete;
//   - at SUBSCRIPTION_MAX_LIFETIME, or after SUBSCRIPTION_IDLE_TIMEOUT
//     without a change, or at shutdown: complete without a terminal state.
//     A client that still cares subscribes again and gets the current state
//     at once. No new error code is needed: a completion whose last state
//     is not terminal always means "subscribe again".
//
// A REST error that may pass (UPSTREAM_*, RATE_LIMITED) is an error event
// and the subscription goes on (a 429 pauses the poller for retryAfter).

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"sync"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"paygraph/graph/model"
	"paygraph/livepoll"
	"paygraph/restclient"
)

// Subscriptions is what the Subscription resolvers need: the process's
// hub and the REST client their polls use (not a request's loaders: a
// poll outlives the request that started it).
type Subscriptions struct {
	Hub  *livepoll.Hub
	REST REST
}

// The kinds of livepoll keys: the only part of a key a metric carries.
const (
	KindPayment         = "payment"
	KindCheckoutSession = "checkout_session"
)

// errNoSubscriptions answers a subscription when the server has no hub.
var errNoSubscriptions = errors.New("subscriptions are not enabled on this server")

func (r *Resolver) paymentUpdated(ctx context.Context, id string) (<-chan *model.Payment, error) {
	if err := checkID("payment id", id, paymentIDPrefix); err != nil {
		return nil, err
	}
	if err := r.allowPayment(ctx, id); err != nil {
		return nil, err
	}
	return subscribe[*model.Payment](ctx, r.Live, KindPayment, id, restclient.EndpointGetPayment,
		func(ctx context.Context, rest REST) (livepoll.Snapshot, error) {
			p, err := rest.GetPayment(ctx, id)
			if err != nil {
				return livepoll.Snapshot{}, err
			}
			return livepoll.Snapshot{Value: model.NewPayment(p), Fingerprint: fingerprint(p), Phase: phaseOf(string(p.Status))}, nil
		})
}

func (r *Resolver) checkoutSessionUpdated(ctx context.Context, id string) (<-chan *model.CheckoutSession, error) {
	if err := checkID("checkout session id or reference", id, ""); err != nil {
		return nil, err
	}
	if err := r.allow(ctx, true, func(s Scope) bool { return s.AllowsCheckoutSession(id) }, "checkout session %s", id); err != nil {
		return nil, err
	}
	return subscribe[*model.CheckoutSession](ctx, r.Live, KindCheckoutSession, id, restclient.EndpointGetCheckoutSession,
		func(ctx context.Context, rest REST) (livepoll.Snapshot, error) {
			s, err := rest.GetCheckoutSession(ctx, id)
			if err != nil {
				return livepoll.Snapshot{}, err
			}
			// The session's payment is polled with it (two REST calls per
			// interval, shared by every subscriber), so that the payment
			// field of each event is as fresh as the session. Without it
			// (a failed GET) the field falls back to the loader.
			v := model.NewCheckoutSession(s)
			if s.PaymentID != "" {
				v.LivePayment, _ = rest.GetPayment(ctx, s.PaymentID)
			}
			return livepoll.Snapshot{Value: v, Fingerprint: fingerprint(v), Phase: phaseOf(s.PaymentStatus)}, nil
		})
}

// phaseOf reads a payment status: SUCCEEDED may still become REFUNDED
// (watched for SUBSCRIPTION_WATCH_AFTER_SUCCESS), the other terminal ones
// will not change.
func phaseOf(status string) livepoll.Phase {
	switch restclient.PaymentStatus(status) {
	case restclient.StatusSucceeded:
		return livepoll.PhaseSettled
	case restclient.StatusFailed, restclient.StatusCancelled, restclient.StatusRefunded:
		return livepoll.PhaseFinal
	default:
		return livepoll.PhaseOpen
	}
}

// fingerprint is a hash of every field of a REST record, so that any
// change a subscriber could see is an event (a hash, not the JSON: the
// poller keeps it for as long as it runs).
func fingerprint(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return "" // cannot happen for the REST types; "" still works (every poll an event)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// subscribe starts a hub subscription for the caller's merchant and
// relays its events to the channel gqlgen reads. Everything that can be
// refused is refused here, before any REST call: no credential pair, no
// hub, a bound reached.
func subscribe[T any](ctx context.Context, live Subscriptions, kind, id string, ep restclient.Endpoint,
	fetch func(context.Context, REST) (livepoll.Snapshot, error)) (<-chan T, error) {
	if live.Hub == nil || live.REST == nil {
		return nil, errNoSubscriptions
	}
	creds, ok := restclient.CredentialsFrom(ctx)
	merchant, ok2 := restclient.MerchantOf(ctx)
	if !ok || !ok2 {
		// What the REST client answers without a call.
		return nil, &restclient.Error{Kind: restclient.KindUnauthorized, Endpoint: ep,
			Message: "missing x-api-key or x-api-secret header"}
	}
	// The poll's context is the poller's (livepoll: it ends when the last
	// subscriber leaves), with the credential pair of the subscriber who
	// started it: any later subscriber of the same key has the same pair.
	// It carries none of the request's budgets: no deadline, and not the
	// request's REST_MAX_CONCURRENCY slots (restclient.WithRequestLimit),
	// which belong to a request that may be long gone; the merchant's and
	// the process's REST slots still apply to every poll.
	sub, err := live.Hub.Subscribe(ctx, livepoll.Key{Merchant: merchant, Kind: kind, ID: id},
		func(pctx context.Context) (livepoll.Snapshot, error) {
			snap, err := fetch(restclient.WithCredentials(pctx, creds), live.REST)
			return snap, pollError(err)
		})
	if err != nil {
		return nil, subscribeError(err)
	}
	out := make(chan T)
	errs := liveErrorsFrom(ctx)
	level := customerDataOf(ctx)
	go func() {
		defer close(out)
		defer sub.Close()
		for ev := range sub.Events() {
			var v T
			if ev.Err != nil {
				if errs == nil {
					continue // no interceptor to carry it (cannot happen with NewServer)
				}
				errs.set(ev.Err)
			} else {
				v = maskEvent(ev.Snapshot.Value, level).(T)
			}
			select {
			case out <- v:
			case <-ctx.Done():
				return
			}
		}
	}()
	return out, nil
}

// rateLimited lets livepoll read a 429's Retry-After.
type rateLimited struct{ err *restclient.Error }

func (e rateLimited) Error() string             { return e.err.Error() }
func (e rateLimited) RetryAfter() time.Duration { return e.err.RetryAfter }
func (e rateLimited) Unwrap() error             { return e.err }

// pollError tells livepoll what to do after a failed poll: wait for a
// 429's Retry-After, or stop when asking again cannot change the answer.
func pollError(err error) error {
	var re *restclient.Error
	if err == nil || !errors.As(err, &re) {
		return err
	}
	switch re.Kind {
	case restclient.KindRateLimited:
		return rateLimited{re}
	case restclient.KindNotFound, restclient.KindUnauthorized, restclient.KindForbidden,
		restclient.KindBadRequest, restclient.KindInvalidID:
		return livepoll.Permanent(err)
	}
	return err
}

// SubscriptionLimitError refuses a subscription over
// SUBSCRIPTION_MAX_PER_MERCHANT or SUBSCRIPTION_MAX (RATE_LIMITED: the
// caller may retry once one of its subscriptions has ended).
type SubscriptionLimitError struct{ err *livepoll.LimitError }

func (e *SubscriptionLimitError) Error() string {
	return "too many live subscriptions for this " + e.err.Scope + "; end one before starting another"
}

func subscribeError(err error) error {
	if le, ok := errors.AsType[*livepoll.LimitError](err); ok {
		return &SubscriptionLimitError{le}
	}
	return err
}

// liveErrors carries a subscription's error events to its responses.
// gqlgen's subscription channel carries values only; an event that is an
// error is sent as a nil value, and the interceptor (liveErrorsExtension)
// replaces the "null" error gqlgen then reports with this one.
type liveErrors struct {
	mu  sync.Mutex
	err error
}

func (l *liveErrors) set(err error) {
	l.mu.Lock()
	l.err = err
	l.mu.Unlock()
}

func (l *liveErrors) take() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	err := l.err
	l.err = nil
	return err
}

type liveErrorsKey struct{}

func liveErrorsFrom(ctx context.Context) *liveErrors {
	l, _ := ctx.Value(liveErrorsKey{}).(*liveErrors)
	return l
}

// liveErrorsExtension gives each subscription operation its liveErrors
// and writes the error of an error event into that event's response.
type liveErrorsExtension struct{}

var (
	_ graphql.OperationInterceptor = liveErrorsExtension{}
	_ graphql.ResponseInterceptor  = liveErrorsExtension{}
)

func (liveErrorsExtension) ExtensionName() string                          { return "LiveErrors" }
func (liveErrorsExtension) Validate(schema graphql.ExecutableSchema) error { return nil }

func (liveErrorsExtension) InterceptOperation(ctx context.Context, next graphql.OperationHandler) graphql.ResponseHandler {
	if oc := graphql.GetOperationContext(ctx); oc.Operation == nil || oc.Operation.Operation != ast.Subscription {
		return next(ctx)
	}
	return next(context.WithValue(ctx, liveErrorsKey{}, &liveErrors{}))
}

func (liveErrorsExtension) InterceptResponse(ctx context.Context, next graphql.ResponseHandler) *graphql.Response {
	resp := next(ctx)
	l := liveErrorsFrom(ctx)
	if resp == nil || l == nil {
		return resp
	}
	if err := l.take(); err != nil {
		resp.Data = nil
		resp.Errors = gqlerror.List{ErrorPresenter(ctx, err)}
	}
	return resp
}

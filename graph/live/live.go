// Package live serves the Subscription fields: each is a livepoll.Hub
// subscription polling one REST GET with the subscriber's credential pair,
// one poller per resource and merchant. It ends at a terminal state, at an
// error polling cannot change, or at its lifetime, idle timeout or
// shutdown; each state event carries its id (extensions.eventId), after
// which lastEventId or Last-Event-ID resumes.
package live

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strconv"
	"sync"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"paygraph/graph/customerdata"
	"paygraph/graph/errcode"
	"paygraph/graph/model"
	"paygraph/livepoll"
	"paygraph/restclient"
	"paygraph/sessiontoken"
)

// Config is the process's hub and the REST client its polls use (a poll
// outlives its request). Zero: subscriptions are refused.
type Config struct {
	Hub  *livepoll.Hub
	REST REST
	// Charge, when not nil, charges a poll's REST calls to the merchant's
	// budget first; an error (KindRateLimited, with RetryAfter) refuses it.
	Charge func(ctx context.Context, merchant string, restCalls int) error
	// Accepted, when not nil, reports whether the REST API knows the
	// caller's credential pair; if not, it subscribes provisionally.
	Accepted    func(ctx context.Context) bool
	PollTimeout time.Duration // when positive, bounds one poll (REST_TIMEOUT)
}

// REST is what a poll calls.
type REST interface {
	GetPayment(ctx context.Context, id string) (*restclient.Payment, error)
	GetCheckoutSession(ctx context.Context, idOrRef string) (*restclient.CheckoutSession, error)
}

// Subscriber is the subscribing operation's events (WithEvents) and its
// customer-data level, to which each event is masked.
type Subscriber struct {
	Events *Events
	Level  sessiontoken.CustomerData
}

// The kinds of livepoll keys (the only part a metric carries).
const (
	KindPayment         = "payment"
	KindCheckoutSession = "checkout_session"
)

var errNoSubscriptions = errors.New("subscriptions are not enabled on this server")

// ResumeExpiredError is EVENT_ID_EXPIRED.
type ResumeExpiredError struct{}

func (*ResumeExpiredError) ErrorCode() string { return errcode.EventIDExpired }

func (*ResumeExpiredError) Error() string {
	return "lastEventId is outside the kept transitions (the resume window): read the resource again and subscribe without it"
}

// ResumeAfter reads the event id to resume after: the lastEventId
// argument, or else the Last-Event-ID header of an SSE request; 0: none.
func ResumeAfter(ctx context.Context, arg *string) (uint64, error) {
	v := ""
	if arg != nil {
		v = *arg
	} else if oc := graphql.GetOperationContext(ctx); oc != nil && oc.Headers != nil {
		v = oc.Headers.Get("Last-Event-ID")
	}
	if v == "" {
		return 0, nil
	}
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil || n == 0 {
		return 0, errcode.Inputf("lastEventId must be an extensions.eventId of an earlier event")
	}
	return n, nil
}

// Payment subscribes s to the payment id, after event id after.
func (c Config) Payment(ctx context.Context, s Subscriber, id string, after uint64) (<-chan *model.Payment, error) {
	return subscribe[*model.Payment](ctx, c, s, KindPayment, id, after, restclient.EndpointGetPayment, 1,
		func(ctx context.Context, rest REST) (livepoll.Snapshot, error) {
			p, err := rest.GetPayment(ctx, id)
			if err != nil {
				return livepoll.Snapshot{}, err
			}
			return snapshot(model.NewPayment(p), p, string(p.Status)), nil
		})
}

// CheckoutSession subscribes s to the checkout session id (or reference),
// after event id after, polling its payment with it.
func (c Config) CheckoutSession(ctx context.Context, s Subscriber, id string, after uint64) (<-chan *model.CheckoutSession, error) {
	return subscribe[*model.CheckoutSession](ctx, c, s, KindCheckoutSession, id, after, restclient.EndpointGetCheckoutSession, 2,
		func(ctx context.Context, rest REST) (livepoll.Snapshot, error) {
			s, err := rest.GetCheckoutSession(ctx, id)
			if err != nil {
				return livepoll.Snapshot{}, err
			}
			v := model.NewCheckoutSession(s)
			if s.PaymentID != "" {
				v.LivePayment, _ = rest.GetPayment(ctx, s.PaymentID) // without it, the loader's
			}
			return snapshot(v, liveSession{Session: s, Payment: v.LivePayment}, s.PaymentStatus), nil
		})
}

// liveSession is a checkout session state as replicas share it (Data).
type liveSession struct {
	Session *restclient.CheckoutSession
	Payment *restclient.Payment
}

// Decode rebuilds a state another replica observed from its Snapshot.Data (livepoll.Config.Decode).
func Decode(kind string, data []byte) (any, error) {
	switch kind {
	case KindPayment:
		var p restclient.Payment
		if err := json.Unmarshal(data, &p); err != nil {
			return nil, err
		}
		return model.NewPayment(&p), nil
	case KindCheckoutSession:
		var ls liveSession
		if err := json.Unmarshal(data, &ls); err != nil || ls.Session == nil {
			return nil, cmp.Or(err, errors.New("no session"))
		}
		v := model.NewCheckoutSession(ls.Session)
		v.LivePayment = ls.Payment
		return v, nil
	}
	return nil, errors.New("unknown kind " + kind)
}

// phaseOf reads a payment status: SUCCEEDED may still become REFUNDED,
// the other terminal ones will not change.
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

// snapshot is the state v of REST record rec of a payment status: its
// Data the JSON of rec (what replicas share), its fingerprint a hash of it.
func snapshot(v, rec any, status string) livepoll.Snapshot {
	b, err := json.Marshal(rec)
	if err != nil {
		// Cannot happen for the REST types; "" still works (every poll an event).
		return livepoll.Snapshot{Value: v, Phase: phaseOf(status)}
	}
	sum := sha256.Sum256(b)
	return livepoll.Snapshot{Value: v, Fingerprint: hex.EncodeToString(sum[:]), Phase: phaseOf(status), Data: b}
}

// subscribe starts a hub subscription for the caller's merchant and
// relays its events to gqlgen's channel; refusals come before any call.
func subscribe[T any](ctx context.Context, c Config, s Subscriber, kind, id string, after uint64, ep restclient.Endpoint, calls int,
	fetch func(context.Context, REST) (livepoll.Snapshot, error)) (<-chan T, error) {
	if c.Hub == nil || c.REST == nil {
		return nil, errNoSubscriptions
	}
	creds, ok := restclient.CredentialsFrom(ctx)
	merchant, ok2 := restclient.MerchantOf(ctx)
	if !ok || !ok2 {
		// What the REST client answers without a call.
		return nil, &restclient.Error{Kind: restclient.KindUnauthorized, Endpoint: ep,
			Message: "missing x-api-key or x-api-secret header"}
	}
	// A poll runs in the poller's context, with the credential pair of the
	// subscriber who started it and none of the request's budgets.
	mkey := restclient.MerchantKeyFrom(ctx)
	sub := c.Hub.SubscribeAfter
	if c.Accepted != nil && !c.Accepted(ctx) {
		sub = c.Hub.SubscribeProvisional
	}
	hs, err := sub(ctx, livepoll.Key{Merchant: merchant, Kind: kind, ID: id},
		func(pctx context.Context) (livepoll.Snapshot, error) {
			if c.PollTimeout > 0 {
				var cancel context.CancelFunc
				pctx, cancel = context.WithTimeout(pctx, c.PollTimeout)
				defer cancel()
			}
			if c.Charge != nil {
				if err := c.Charge(pctx, merchant, calls); err != nil {
					return livepoll.Snapshot{}, pollError(err)
				}
			}
			snap, err := fetch(restclient.WithCredentials(restclient.WithMerchantKey(pctx, mkey), creds), c.REST)
			return snap, pollError(err)
		}, after)
	switch le, ok := errors.AsType[*livepoll.LimitError](err); {
	case ok:
		return nil, &LimitError{le}
	case errors.Is(err, livepoll.ErrResumeExpired):
		return nil, &ResumeExpiredError{}
	case err != nil:
		return nil, err
	}
	out := make(chan T)
	go func() {
		defer close(out)
		defer hs.Close()
		send := func(v T, ev event) bool {
			if s.Events != nil {
				s.Events.push(ev)
			} else if ev.err != nil {
				return true // no interceptor to carry it
			}
			select {
			case out <- v:
				return true
			case <-ctx.Done():
				return false
			}
		}
		for ev := range hs.Events() {
			var v T
			if ev.Err == nil {
				var ok bool
				// Each subscriber's own copy, at its customer-data level.
				if v, ok = customerdata.MaskEvent(ev.Snapshot.Value, s.Level).(T); !ok {
					continue // cannot happen: Value is fetch's or Decode's
				}
			}
			if !send(v, event{id: ev.ID, err: ev.Err}) {
				return
			}
		}
		if errors.Is(hs.Err(), livepoll.ErrResumeExpired) {
			var zero T
			send(zero, event{err: &ResumeExpiredError{}})
		}
	}()
	return out, nil
}

// rateLimited hands livepoll a 429's Retry-After.
type rateLimited struct{ err *restclient.Error }

func (e rateLimited) Error() string             { return e.err.Error() }
func (e rateLimited) RetryAfter() time.Duration { return e.err.RetryAfter }
func (e rateLimited) Unwrap() error             { return e.err }

// pollError tells livepoll to wait for a 429's Retry-After, or to stop
// when asking again cannot change the answer.
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

// LimitError refuses a subscription over SUBSCRIPTION_MAX_PER_MERCHANT or
// SUBSCRIPTION_MAX (RATE_LIMITED: retry once one has ended).
type LimitError struct{ err *livepoll.LimitError }

func (*LimitError) ErrorCode() string { return errcode.RateLimited }

func (e *LimitError) Error() string {
	if e.err.Scope == livepoll.ScopePending {
		return "too many live subscriptions wait for their first poll; retry in a few seconds"
	}
	return "too many live subscriptions for this " + e.err.Scope + "; end one before starting another"
}

// Events carries, in order, each channel value's event id or error: gqlgen's
// channel carries values only, so an error event is a nil value whose response
// Finish rewrites.
type Events struct {
	mu sync.Mutex
	q  []event
}

type event struct {
	id  uint64
	err error
}

func (l *Events) push(ev event) {
	l.mu.Lock()
	l.q = append(l.q, ev)
	l.mu.Unlock()
}

type eventsKey struct{}

// WithEvents returns ctx with the Events of operation oc, and them; not a subscription: ctx, nil.
func WithEvents(ctx context.Context, oc *graphql.OperationContext) (context.Context, *Events) {
	if oc.Operation == nil || oc.Operation.Operation != ast.Subscription {
		return ctx, nil
	}
	l := &Events{}
	return context.WithValue(ctx, eventsKey{}, l), l
}

// EventsIn is the Events WithEvents put in ctx, or nil.
func EventsIn(ctx context.Context) *Events {
	l, _ := ctx.Value(eventsKey{}).(*Events)
	return l
}

// EventIDExtension carries a state event's id (a decimal string: ids pass 2^53).
const EventIDExtension = "eventId"

// Finish writes the next event's id or error (presented) into its response.
func (l *Events) Finish(ctx context.Context, resp *graphql.Response, present graphql.ErrorPresenterFunc) *graphql.Response {
	if resp == nil || l == nil {
		return resp
	}
	l.mu.Lock()
	ev, ok := event{}, len(l.q) > 0
	if ok {
		ev, l.q = l.q[0], l.q[1:]
	}
	l.mu.Unlock()
	switch {
	case !ok:
	case ev.err != nil:
		resp.Data = nil
		resp.Errors = gqlerror.List{present(ctx, ev.err)}
	case ev.id != 0 && len(resp.Errors) == 0:
		if resp.Extensions == nil {
			resp.Extensions = map[string]any{}
		}
		resp.Extensions[EventIDExtension] = strconv.FormatUint(ev.id, 10)
	}
	return resp
}

package restclient

// Bounded fan-out: a batch's calls (a dataloader's keys, a page's joins)
// within the limiter's bounds.

import (
	"context"
	"fmt"
	"runtime/debug"
	"sync"
	"sync/atomic"

	"paygraph/internal/growstack"
)

// Result is one id's answer in a fan-out: its record or its error (*Error, or
// *PanicError).
type Result[V any] struct {
	Value V
	Err   error
}

// PanicError is the error of a fan-out call that panicked, maybe out of the
// caller's recovery's reach.
type PanicError struct {
	Value any
	Stack []byte
}

func (e *PanicError) Error() string { return fmt.Sprintf("panic in a REST call: %v", e.Value) }

// GetPayments retrieves the payments of ids, one GetPayment each; results[i]
// answers ids[i].
func (c *Client) GetPayments(ctx context.Context, ids []string) []Result[*Payment] {
	return fanOut(ctx, c.limiter, ids, method[*Payment]{c, (*Client).GetPayment})
}

// GetPaymentLinks retrieves the payment links of ids (see GetPayments).
func (c *Client) GetPaymentLinks(ctx context.Context, ids []string) []Result[*PaymentLink] {
	return fanOut(ctx, c.limiter, ids, method[*PaymentLink]{c, (*Client).GetPaymentLink})
}

// GetCheckoutSessions retrieves the checkout sessions of keys, ids or
// references (see GetPayments).
func (c *Client) GetCheckoutSessions(ctx context.Context, keys []string) []Result[*CheckoutSession] {
	return fanOut(ctx, c.limiter, keys, method[*CheckoutSession]{c, (*Client).GetCheckoutSession})
}

// method is a Client's getter (a method value would allocate).
type method[V any] struct {
	c  *Client
	fn func(*Client, context.Context, string) (V, error)
}

func (m method[V]) get(ctx context.Context, id string) (V, error) { return m.fn(m.c, ctx, id) }

type getter[V any] interface {
	get(ctx context.Context, id string) (V, error)
}

// getFunc is a func as a getter (Each).
type getFunc[V any] func(context.Context, string) (V, error)

func (f getFunc[V]) get(ctx context.Context, id string) (V, error) { return f(ctx, id) }

// Each is a Client's fan-out without slots (stub REST APIs); results[i]
// answers ids[i].
func Each[V any](ctx context.Context, ids []string, get func(context.Context, string) (V, error)) []Result[V] {
	return fanOut(ctx, nil, ids, getFunc[V](get))
}

// fanOut calls g for every id, each with a slot of lim (nil: none), on at most
// Limiter.width goroutines (the caller's one); one starts once its first slot
// is held: a batch waiting costs one goroutine.
func fanOut[V any, G getter[V]](ctx context.Context, lim *Limiter, ids []string, g G) []Result[V] {
	growstack.Call()
	out := make([]Result[V], len(ids))
	if len(ids) == 1 {
		call(ctx, nil, ids[0], &out[0], g)
		return out
	}
	f := &fan[V, G]{ctx: ctx, ids: ids, out: out, g: g}
	width := len(ids)
	if lim != nil {
		width = lim.width(ctx, len(ids))
	}
	var held []Held                                // the started goroutines' first slots
	for started := 1; started < width; started++ { // the caller is one
		var h *Held
		if lim != nil {
			if held == nil {
				held = make([]Held, width-1)
			}
			h = &held[started-1]
			if lim.holdInto(ctx, h) != nil {
				break
			}
		}
		i := f.claim() // after the slot: the others may have taken the rest
		if i < 0 {
			h.Release()
			break
		}
		f.wg.Add(1)
		go f.work(h, i)
	}
	for i := f.claim(); i >= 0; i = f.claim() {
		call(ctx, nil, ids[i], &out[i], g)
	}
	f.wg.Wait()
	return out
}

type fan[V any, G getter[V]] struct {
	ctx  context.Context
	ids  []string
	out  []Result[V]
	g    G
	next atomic.Int32
	wg   sync.WaitGroup
}

func (f *fan[V, G]) claim() int {
	if i := int(f.next.Add(1)) - 1; i < len(f.ids) {
		return i
	}
	return -1
}

// work makes call i with h's slot, then the calls left with their own.
func (f *fan[V, G]) work(h *Held, i int) {
	growstack.Call()
	defer f.wg.Done()
	call(f.ctx, h, f.ids[i], &f.out[i], f.g)
	for i := f.claim(); i >= 0; i = f.claim() {
		call(f.ctx, nil, f.ids[i], &f.out[i], f.g)
	}
}

// call makes one call with h's slot (nil: none), releasing it after; a panic
// becomes r's *PanicError.
func call[V any, G getter[V]](ctx context.Context, h *Held, id string, r *Result[V], g G) {
	defer h.Release()
	defer func() {
		if p := recover(); p != nil {
			r.Err = &PanicError{Value: p, Stack: debug.Stack()}
		}
	}()
	if h != nil {
		ctx = h
	}
	r.Value, r.Err = g.get(ctx, id)
}

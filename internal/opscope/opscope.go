// Package opscope is the one per-operation scope of the request walk: the
// /graphql edge puts one in the request's context, and the middlewares
// below fill it in (each with its own unexported keys, read with
// ctx.Value) instead of each adding a context layer and copying the
// request. A scope is open on the request's goroutine only, and sealed
// before the GraphQL server runs anything concurrently; sealed or absent,
// WithValue and WithTimeout are context.WithValue and context.WithTimeout.
package opscope

import (
	"context"
	"net/http"
	"time"

	"paygraph/internal/unsafeconv"
)

// scope is the context a scope is: its parent (which WithTimeout replaces
// while the scope is open) and its values.
type scope struct {
	context.Context
	sealed bool
	n      int
	// types has the keyBit of every key held, so that most misses compare
	// no entry; first[b] is 1 + the index in fixed of the first entry whose
	// key has bit b (0: none), where a look-up starts.
	types uint64
	first [64]uint8
	fixed [12]entry // the walk of one POST sets about ten
	more  []entry
}

type entry struct{ key, val any }

// keyBit is the bit of a key's dynamic type in scope.types: one of 64,
// from the address of its type descriptor (equal keys have one type).
func keyBit(key *any) uint {
	t := unsafeconv.TypeID(*key)
	return uint(t>>4^t>>10) & 63
}

type scopeKey struct{}

// New returns a context with a new, open scope below ctx.
func New(ctx context.Context) context.Context { return &scope{Context: ctx} }

// Value answers the scope's own values, then its parent's.
func (s *scope) Value(key any) any {
	if key == (scopeKey{}) {
		return s
	}
	if b := keyBit(&key); s.types&(1<<b) != 0 { // else a miss, without a call
		if e := s.find(key, b); e != nil {
			return e.val
		}
	}
	return s.Context.Value(key)
}

// find is the scope's entry of key, or nil; b is keyBit(&key).
func (s *scope) find(key any, b uint) *entry {
	if s.types&(1<<b) == 0 {
		return nil
	}
	// The entries before first[b]'s have other bits: none is key.
	for i := int(s.first[b]) - 1; i >= 0 && i < s.n; i++ {
		if s.fixed[i].key == key {
			return &s.fixed[i]
		}
	}
	for i := range s.more {
		if s.more[i].key == key {
			return &s.more[i]
		}
	}
	return nil
}

// open is ctx's innermost scope when it is open, else nil.
func open(ctx context.Context) *scope {
	s, ok := ctx.(*scope) // the usual case in the walk: no lookup
	if !ok {
		s, _ = ctx.Value(scopeKey{}).(*scope)
	}
	if s == nil || s.sealed {
		return nil
	}
	return s
}

// WithValue is context.WithValue(ctx, key, val), put in ctx's open scope
// when it has one (ctx itself is returned then): a later value of the
// same key replaces the earlier one.
func WithValue(ctx context.Context, key, val any) context.Context {
	s := open(ctx)
	if s == nil {
		return context.WithValue(ctx, key, val)
	}
	b := keyBit(&key)
	if e := s.find(key, b); e != nil {
		e.val = val
		return ctx
	}
	s.types |= 1 << b
	if s.n < len(s.fixed) {
		if s.first[b] == 0 {
			s.first[b] = uint8(s.n + 1)
		}
		s.fixed[s.n] = entry{key, val}
		s.n++
	} else {
		s.more = append(s.more, entry{key, val})
	}
	return ctx
}

// WithTimeout is context.WithTimeout(ctx, d); when ctx is an open scope
// itself, the deadline is put under the scope instead and ctx returned, so
// that every context derived from it from then on ends with it.
func WithTimeout(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if s, ok := ctx.(*scope); ok && !s.sealed {
		var cancel context.CancelFunc
		s.Context, cancel = context.WithTimeout(s.Context, d)
		return ctx, cancel
	}
	return context.WithTimeout(ctx, d)
}

// Under puts ctx's open scope below parent, in place of the parent it
// had, and returns ctx: its values are read first, then parent's, and it
// ends when parent does (a WebSocket operation's scope, made before the
// operation's own context). parent must hold every value of the old
// parent (derive it from it). No-op without an open scope.
func Under(ctx, parent context.Context) context.Context {
	if s := open(ctx); s != nil {
		s.Context = parent
	}
	return ctx
}

// Seal closes ctx's scope: the GraphQL server and what it runs add
// context values of their own from here on. No-op without an open scope.
func Seal(ctx context.Context) {
	if s := open(ctx); s != nil {
		s.sealed = true
	}
}

// Sealing is the middleware that seals the request's scope, the last
// layer of the walk before the GraphQL server.
func Sealing(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		Seal(r.Context())
		next.ServeHTTP(w, r)
	})
}

// Request is r with ctx, copied only when ctx is not r's context already
// (a middleware that filled in the scope hands r on as it is).
func Request(r *http.Request, ctx context.Context) *http.Request {
	if r.Context() == ctx {
		return r
	}
	return r.WithContext(ctx)
}

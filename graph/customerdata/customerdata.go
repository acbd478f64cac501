// Package customerdata enforces the caller's customer-data level
// (sessiontoken.CustomerData) where the data is fetched: the loaders' REST
// (Masking) and each subscriber's copy of an event (MaskEvent) hold
// customers already masked, so no way of asking renders more. The answer
// lists what the level hid in extensions.customerData (Paths).
package customerdata

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"

	"paygraph/graph/model"
	"paygraph/internal/opscope"
	"paygraph/restclient"
	"paygraph/sessiontoken"
)

type maxKey struct{}

// Max returns the middleware that sets the deployment's most customer data
// (CUSTOMER_DATA_MAX; zero: full) for the requests below it, in front of
// the transports (a WebSocket's operations inherit the upgrade's context).
func Max(max sessiontoken.CustomerData) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			next.ServeHTTP(w, opscope.Request(r, WithMax(r.Context(), max)))
		})
	}
}

// WithMax returns ctx with the deployment's most customer data (Max).
func WithMax(ctx context.Context, max sessiontoken.CustomerData) context.Context {
	if max == 0 {
		max = sessiontoken.CustomerDataFull
	}
	return opscope.WithValue(ctx, maxKey{}, max)
}

// Lower is level lowered to ctx's deployment maximum.
func Lower(ctx context.Context, level sessiontoken.CustomerData) sessiontoken.CustomerData {
	if max, ok := ctx.Value(maxKey{}).(sessiontoken.CustomerData); ok && max < level {
		return max
	}
	return level
}

// WithholdsAddress tells whether level withholds customer.address (never fetched then).
func WithholdsAddress(level sessiontoken.CustomerData) bool {
	return level < sessiontoken.CustomerDataFull
}

// maskCustomer returns c as level lets it be read: full, as it is; masked,
// name, email and phone masked and the city; none, nothing.
func maskCustomer(c restclient.Customer, level sessiontoken.CustomerData) restclient.Customer {
	switch level {
	case sessiontoken.CustomerDataFull:
		return c
	case sessiontoken.CustomerDataMasked:
		return restclient.Customer{Name: maskWith(c.Name, maskName), Email: maskWith(c.Email, maskEmail),
			Phone: maskWith(c.Phone, maskPhone), City: c.City}
	}
	return restclient.Customer{}
}

func maskWith(s *string, mask func(string) string) *string {
	if s == nil {
		return nil
	}
	m := mask(*s)
	return &m
}

// maxInitials bounds the initials of a masked name.
const maxInitials = 4

// maskName is a name's initials: "Rahim Uddin" is "R. U.".
func maskName(s string) string {
	var b strings.Builder
	for i, w := range strings.Fields(s) {
		if i == maxInitials {
			break
		}
		if i > 0 {
			b.WriteByte(' ')
		}
		r, _ := utf8.DecodeRuneInString(w)
		b.WriteRune(unicode.ToUpper(r))
		b.WriteByte('.')
	}
	return b.String()
}

// maskEmail keeps the first character and the domain ("r***@example.com"); else "***".
func maskEmail(s string) string {
	at := strings.LastIndexByte(s, '@')
	if at <= 0 || at == len(s)-1 {
		return "***"
	}
	_, size := utf8.DecodeRuneInString(s)
	return s[:size] + "***" + s[at:]
}

// maskPhone stars the middle of a phone number, keeping its last 4 (under 8:
// 2, under 4: none) and up to its first 5 so that at least 5 are hidden
// ("01712340001" is "01*****0001").
func maskPhone(s string) string {
	r := []rune(s)
	n := len(r)
	end := 4
	switch {
	case n < 4:
		end = 0
	case n < 8:
		end = 2
	}
	start := min(max(n-end-5, 0), 5)
	return string(r[:start]) + strings.Repeat("*", n-start-end) + string(r[n-end:])
}

// maskPayment is p masked to level: p itself at full, else a copy (records may be shared).
func maskPayment(p *restclient.Payment, level sessiontoken.CustomerData) *restclient.Payment {
	if p == nil || level == sessiontoken.CustomerDataFull {
		return p
	}
	cp := *p
	cp.Customer = maskCustomer(p.Customer, level)
	return &cp
}

func maskSession(s *restclient.CheckoutSession, level sessiontoken.CustomerData) *restclient.CheckoutSession {
	if s == nil || level == sessiontoken.CustomerDataFull {
		return s
	}
	cp := *s
	cp.Customer = maskCustomer(s.Customer, level)
	return &cp
}

// REST and Batch are the REST API as the loaders call it.
type REST interface {
	ListPayments(ctx context.Context, p restclient.ListParams) (*restclient.PaymentPage, error)
	GetPayment(ctx context.Context, id string) (*restclient.Payment, error)
	GetPaymentLink(ctx context.Context, id string) (*restclient.PaymentLink, error)
	GetCheckoutSession(ctx context.Context, idOrRef string) (*restclient.CheckoutSession, error)
}

type Batch interface {
	GetPayments(ctx context.Context, ids []string) []restclient.Result[*restclient.Payment]
	GetPaymentLinks(ctx context.Context, ids []string) []restclient.Result[*restclient.PaymentLink]
	GetCheckoutSessions(ctx context.Context, keys []string) []restclient.Result[*restclient.CheckoutSession]
}

// Masking is the loaders' REST: every record comes back with its customers
// masked to Level of its call's context, before anything reads it.
type Masking struct {
	REST
	Batch
	Level func(context.Context) sessiontoken.CustomerData
}

func (m *Masking) GetPayments(ctx context.Context, ids []string) []restclient.Result[*restclient.Payment] {
	return maskAll(m.Batch.GetPayments(ctx, ids), m.Level(ctx), maskPayment)
}

func (m *Masking) GetCheckoutSessions(ctx context.Context, keys []string) []restclient.Result[*restclient.CheckoutSession] {
	return maskAll(m.Batch.GetCheckoutSessions(ctx, keys), m.Level(ctx), maskSession)
}

func maskAll[T any](rs []restclient.Result[T], level sessiontoken.CustomerData, mask func(T, sessiontoken.CustomerData) T) []restclient.Result[T] {
	if level != sessiontoken.CustomerDataFull {
		for i := range rs {
			rs[i].Value = mask(rs[i].Value, level)
		}
	}
	return rs
}

func (m *Masking) ListPayments(ctx context.Context, p restclient.ListParams) (*restclient.PaymentPage, error) {
	page, err := m.REST.ListPayments(ctx, p)
	level := m.Level(ctx)
	if page == nil || level == sessiontoken.CustomerDataFull {
		return page, err
	}
	cp := *page
	cp.Data = slices.Clone(page.Data)
	for i := range cp.Data {
		cp.Data[i].Customer = maskCustomer(cp.Data[i].Customer, level)
	}
	return &cp, err
}

func (m *Masking) GetPayment(ctx context.Context, id string) (*restclient.Payment, error) {
	p, err := m.REST.GetPayment(ctx, id)
	return maskPayment(p, m.Level(ctx)), err
}

func (m *Masking) GetCheckoutSession(ctx context.Context, idOrRef string) (*restclient.CheckoutSession, error) {
	s, err := m.REST.GetCheckoutSession(ctx, idOrRef)
	return maskSession(s, m.Level(ctx)), err
}

// MaskEvent is a subscription's shared event as one subscriber at level
// may read it: a masked copy of its own.
func MaskEvent(v any, level sessiontoken.CustomerData) any {
	if level == sessiontoken.CustomerDataFull {
		return v
	}
	switch v := v.(type) {
	case *model.Payment:
		if v != nil {
			return model.NewPayment(maskPayment(v.Payment, level))
		}
	case *model.CheckoutSession:
		if v != nil {
			s := model.NewCheckoutSession(maskSession(v.CheckoutSession, level))
			s.LivePayment = maskPayment(v.LivePayment, level)
			return s
		}
	}
	return v
}

// restricted tells whether level changes or withholds the Customer field.
func restricted(level sessiontoken.CustomerData, field string) bool {
	switch field {
	case "name", "email", "phone", "address":
		return level < sessiontoken.CustomerDataFull
	case "city":
		return level == sessiontoken.CustomerDataNone
	}
	return false
}

// Paths collects the response paths of the customer fields an operation
// read below full had restricted, for Finish.
type Paths struct {
	level sessiontoken.CustomerData
	mu    sync.Mutex
	paths []ast.Path
}

type pathsKey struct{}

// WithPaths returns ctx with new Paths of an operation at level, and them; at
// full, ctx and nil.
func WithPaths(ctx context.Context, level sessiontoken.CustomerData) (context.Context, *Paths) {
	if level == sessiontoken.CustomerDataFull {
		return ctx, nil
	}
	m := &Paths{level: level}
	return context.WithValue(ctx, pathsKey{}, m), m
}

// PathsIn is the Paths WithPaths put in ctx, or nil.
func PathsIn(ctx context.Context) *Paths {
	m, _ := ctx.Value(pathsKey{}).(*Paths)
	return m
}

var customerType = []string{"Customer"}

// Note records the restricted fields of a customer rendered at ctx's path with
// selection sel, each by its alias, with a value or not (else a null would
// tell).
func (m *Paths) Note(ctx context.Context, oc *graphql.OperationContext, sel ast.SelectionSet) {
	var path ast.Path
	for _, f := range graphql.CollectFields(oc, sel, customerType) {
		if !restricted(m.level, f.Name) {
			continue
		}
		if path == nil {
			path = responsePath(ctx, oc)
		}
		p := append(make(ast.Path, 0, len(path)+1), path...)
		m.mu.Lock()
		m.paths = append(m.paths, append(p, ast.PathName(f.Alias)))
		m.mu.Unlock()
	}
}

// responsePath is ctx's path in the response, with a subscription's one
// root field put back in front (gqlgen marshals events without it).
func responsePath(ctx context.Context, oc *graphql.OperationContext) ast.Path {
	path := graphql.GetPath(ctx)
	if oc.Operation == nil || oc.Operation.Operation != ast.Subscription {
		return path
	}
	top := graphql.GetFieldContext(ctx)
	for top != nil && top.Parent != nil {
		top = top.Parent
	}
	if top != nil && top.Object == "Subscription" {
		return path
	}
	roots := graphql.CollectFields(oc, oc.Operation.SelectionSet, []string{"Subscription"})
	if len(roots) != 1 {
		return path
	}
	return append(ast.Path{ast.PathName(roots[0].Alias)}, path...)
}

// Finish writes into resp (each @defer part, each subscription event)
//
//	"customerData": {"level": "masked", "maskedPaths": [["payment", "customer", "email"], ...]}
//
// listing the paths m recorded since the previous response; m nil: nothing.
func (m *Paths) Finish(resp *graphql.Response) *graphql.Response {
	if resp == nil || m == nil {
		return resp
	}
	m.mu.Lock()
	paths := m.paths
	m.paths = nil
	m.mu.Unlock()
	if paths == nil {
		paths = []ast.Path{}
	}
	if resp.Extensions == nil {
		resp.Extensions = map[string]any{}
	}
	resp.Extensions["customerData"] = map[string]any{"level": m.level.String(), "maskedPaths": paths}
	return resp
}

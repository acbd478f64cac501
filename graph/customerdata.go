package graph

// This file enforces the caller's customer-data level (issue 27;
// sessiontoken.CustomerData): what of a customer's name, email, phone,
// address and city an operation may read, and the masked forms.
//
// It is enforced where the data is fetched: the loaders' REST calls
// (maskingREST, every record a resolver or the fast path can reach) and
// each subscriber's copy of a subscription's event (maskEvent) hold
// customer blocks already masked, so no way of asking (aliases, fragments,
// node and nodes, @defer, subscriptions, APQ, trusted documents, GET,
// batches) can render more. A withheld address is not fetched:
// customerAddress answers null without the detail's REST call, and
// restCalls counts none for it. The answer says what the level hid:
// extensions.customerData (maskedPaths), once per response.

import (
	"context"
	"net/http"
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

type customerDataMaxKey struct{}

// CustomerDataMax returns the middleware that sets the deployment's most
// customer data (CUSTOMER_DATA_MAX) for the requests below it: callers
// with the two credential headers read that level, session tokens the
// lower of theirs and it. Zero max: full. It must run in front of the
// transports (a WebSocket's operations inherit the upgrade's context).
func CustomerDataMax(max sessiontoken.CustomerData) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			next.ServeHTTP(w, opscope.Request(r, WithCustomerDataMax(r.Context(), max)))
		})
	}
}

// WithCustomerDataMax returns ctx with the deployment's most customer
// data (see CustomerDataMax).
func WithCustomerDataMax(ctx context.Context, max sessiontoken.CustomerData) context.Context {
	if max == 0 {
		max = sessiontoken.CustomerDataFull
	}
	return opscope.WithValue(ctx, customerDataMaxKey{}, max)
}

// customerDataOf is the request's customer-data level: its session
// token's (Scope.CustomerData), or full for the credential headers, each
// lowered to the deployment's maximum.
func customerDataOf(ctx context.Context) sessiontoken.CustomerData {
	if c := callerOf(ctx); c != nil {
		return c.level
	}
	s, ok := scopeIn(ctx)
	return customerDataIn(ctx, s, ok)
}

// customerDataIn is customerDataOf, the scope (s, ok) read already.
func customerDataIn(ctx context.Context, s Scope, ok bool) sessiontoken.CustomerData {
	level := sessiontoken.CustomerDataFull
	if ok {
		level = s.CustomerData()
	}
	if max, ok := ctx.Value(customerDataMaxKey{}).(sessiontoken.CustomerData); ok && max < level {
		level = max
	}
	return level
}

// withholdsAddress tells whether level withholds customer.address (which
// is then null, and never fetched).
func withholdsAddress(level sessiontoken.CustomerData) bool {
	return level < sessiontoken.CustomerDataFull
}

// maskCustomer returns c as level lets it be read:
//
//   - full: as it is.
//   - masked: name as its initials ("Rahim Uddin": "R. U."), email as
//     its first character, "***" and its domain ("r***@example.com"),
//     phone with all but its first and last digits starred
//     ("+8801*****0001", maskPhone), address null, city as it is.
//   - none: name, email, phone, address and city null.
func maskCustomer(c restclient.Customer, level sessiontoken.CustomerData) restclient.Customer {
	switch level {
	case sessiontoken.CustomerDataFull:
		return c
	case sessiontoken.CustomerDataMasked:
		return restclient.Customer{
			Name:  maskWith(c.Name, maskName),
			Email: maskWith(c.Email, maskEmail),
			Phone: maskWith(c.Phone, maskPhone),
			City:  c.City,
		}
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

// maskName is a name's initials: the first letter of each of its words
// (at most maxInitials), upper case, each followed by a dot, separated by
// spaces: "Rahim Uddin" is "R. U.", "" stays "".
func maskName(s string) string {
	var b strings.Builder
	n := 0
	for _, w := range strings.Fields(s) {
		if n == maxInitials {
			break
		}
		r, _ := utf8.DecodeRuneInString(w)
		if n > 0 {
			b.WriteByte(' ')
		}
		b.WriteRune(unicode.ToUpper(r))
		b.WriteByte('.')
		n++
	}
	return b.String()
}

// maskEmail keeps the first character of the local part and the domain:
// "rahim.uddin7@example.com" is "r***@example.com". Always three stars,
// whatever the local part's length; anything without a local part and a
// domain is "***".
func maskEmail(s string) string {
	at := strings.LastIndexByte(s, '@')
	if at <= 0 || at == len(s)-1 {
		return "***"
	}
	_, size := utf8.DecodeRuneInString(s)
	return s[:size] + "***" + s[at:]
}

// maskPhone stars the middle of a phone number, each hidden character one
// star, and keeps its last 4 characters and up to its first 5 so that at
// least 5 are hidden: "+8801712340001" (14) is "+8801*****0001",
// "01712340001" (11) is "01*****0001"; under 8 characters only the last
// 2 are kept ("****78"), under 4 none.
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
	var b strings.Builder
	b.WriteString(string(r[:start]))
	b.WriteString(strings.Repeat("*", n-start-end))
	b.WriteString(string(r[n-end:]))
	return b.String()
}

// maskPayment returns p with its customer masked to level: p itself at
// full, otherwise a copy (a record may be shared, as a subscription's
// event is by its subscribers).
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

// maskingREST is the REST of the loaders: every record comes back with
// its customers masked to the level of the context its call was made
// with (the request's: the loaders' calls carry the credential pair in
// the same context), before any resolver or the fast path sees it. At
// full it returns the REST client's records as they are.
type maskingREST struct {
	REST
	batch batchREST // REST's batches (loaders.go)
}

func (m *maskingREST) GetPayments(ctx context.Context, ids []string) []restclient.Result[*restclient.Payment] {
	rs := m.batch.GetPayments(ctx, ids)
	if level := customerDataOf(ctx); level != sessiontoken.CustomerDataFull {
		for i := range rs {
			rs[i].Value = maskPayment(rs[i].Value, level)
		}
	}
	return rs
}

func (m *maskingREST) GetPaymentLinks(ctx context.Context, ids []string) []restclient.Result[*restclient.PaymentLink] {
	return m.batch.GetPaymentLinks(ctx, ids)
}

func (m *maskingREST) GetCheckoutSessions(ctx context.Context, keys []string) []restclient.Result[*restclient.CheckoutSession] {
	rs := m.batch.GetCheckoutSessions(ctx, keys)
	if level := customerDataOf(ctx); level != sessiontoken.CustomerDataFull {
		for i := range rs {
			rs[i].Value = maskSession(rs[i].Value, level)
		}
	}
	return rs
}

func (m *maskingREST) ListPayments(ctx context.Context, p restclient.ListParams) (*restclient.PaymentPage, error) {
	page, err := m.REST.ListPayments(ctx, p)
	level := customerDataOf(ctx)
	if page == nil || level == sessiontoken.CustomerDataFull {
		return page, err
	}
	cp := *page
	cp.Data = make([]restclient.Payment, len(page.Data))
	for i := range page.Data {
		cp.Data[i] = page.Data[i]
		cp.Data[i].Customer = maskCustomer(page.Data[i].Customer, level)
	}
	return &cp, err
}

func (m *maskingREST) GetPayment(ctx context.Context, id string) (*restclient.Payment, error) {
	p, err := m.REST.GetPayment(ctx, id)
	return maskPayment(p, customerDataOf(ctx)), err
}

func (m *maskingREST) GetCheckoutSession(ctx context.Context, idOrRef string) (*restclient.CheckoutSession, error) {
	s, err := m.REST.GetCheckoutSession(ctx, idOrRef)
	return maskSession(s, customerDataOf(ctx)), err
}

// maskEvent is a subscription's event as one subscriber at level may
// read it: the event is shared by every subscriber of the resource (one
// poll per merchant), so each gets a masked copy of its own.
func maskEvent(v any, level sessiontoken.CustomerData) any {
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

// restricted tells whether level changes or withholds the Customer
// field: the paths extensions.customerData lists.
func restricted(level sessiontoken.CustomerData, field string) bool {
	switch field {
	case "name", "email", "phone", "address":
		return level < sessiontoken.CustomerDataFull
	case "city":
		return level == sessiontoken.CustomerDataNone
	}
	return false
}

// maskedPaths collects, for one operation read below full, the response
// paths of every customer field its level restricted, for the response
// that carries them (customerDataExtension).
type maskedPaths struct {
	level sessiontoken.CustomerData
	mu    sync.Mutex
	paths []ast.Path
}

type maskedPathsKey struct{}

func maskedPathsFrom(ctx context.Context) *maskedPaths {
	if c := callerOf(ctx); c != nil {
		return c.masked
	}
	m, _ := ctx.Value(maskedPathsKey{}).(*maskedPaths)
	return m
}

// note records the restricted fields of a customer rendered at ctx's
// path with selection sel (every one selected, by its alias, whether or
// not the record had a value: a null would otherwise tell whether it
// has one).
func (m *maskedPaths) note(ctx context.Context, oc *graphql.OperationContext, sel ast.SelectionSet) {
	var path ast.Path
	for _, f := range graphql.CollectFields(oc, sel, customerImplementors) {
		if !restricted(m.level, f.Name) {
			continue
		}
		if path == nil {
			path = responsePath(ctx, oc)
		}
		p := make(ast.Path, len(path), len(path)+1)
		copy(p, path)
		m.mu.Lock()
		m.paths = append(m.paths, append(p, ast.PathName(f.Alias)))
		m.mu.Unlock()
	}
}

// responsePath is ctx's path in the response. gqlgen marshals each event
// of a subscription in a context without the root field's (its paths
// start below it), so that one is put back in front: a subscription has
// exactly one root field.
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

func (m *maskedPaths) take() []ast.Path {
	m.mu.Lock()
	defer m.mu.Unlock()
	p := m.paths
	m.paths = nil
	return p
}

// noteCustomer is called by the generated _Customer (through the fast
// path's hook) for every customer object an operation renders.
func noteCustomer(ctx context.Context, oc *graphql.OperationContext, sel ast.SelectionSet) {
	if m := maskedPathsFrom(ctx); m != nil {
		m.note(ctx, oc, sel)
	}
}

// CustomerDataExtensionName is the key of the response extension.
const CustomerDataExtensionName = "customerData"

// customerDataExtension gives each operation read below full its
// maskedPaths, and writes into each of its responses (each @defer part,
// each subscription event) the extension
//
//	"customerData": {"level": "masked", "maskedPaths": [["payment", "customer", "email"], ...]}
//
// maskedPaths lists the paths recorded since the previous response: a
// part lists a path no later than the part that carries its value
// (possibly in an earlier one), and a client merging the parts merges
// the lists. An operation at full carries no extension.
type customerDataExtension struct{}

var (
	_ graphql.OperationInterceptor = customerDataExtension{}
	_ graphql.ResponseInterceptor  = customerDataExtension{}
)

func (customerDataExtension) ExtensionName() string                          { return "CustomerData" }
func (customerDataExtension) Validate(schema graphql.ExecutableSchema) error { return nil }

func (e customerDataExtension) InterceptOperation(ctx context.Context, next graphql.OperationHandler) graphql.ResponseHandler {
	return next(e.prepare(ctx))
}

// prepare is InterceptOperation's context for next.
func (e customerDataExtension) prepare(ctx context.Context) context.Context {
	ctx, _ = e.prepareAt(ctx, customerDataOf(ctx))
	return ctx
}

// prepareAt is prepare for a caller at level, and the masked paths it
// put in the context (nil: none).
func (customerDataExtension) prepareAt(ctx context.Context, level sessiontoken.CustomerData) (context.Context, *maskedPaths) {
	if level == sessiontoken.CustomerDataFull {
		return ctx, nil
	}
	m := &maskedPaths{level: level}
	return context.WithValue(ctx, maskedPathsKey{}, m), m
}

func (e customerDataExtension) InterceptResponse(ctx context.Context, next graphql.ResponseHandler) *graphql.Response {
	return e.finish(ctx, next(ctx))
}

// finish is InterceptResponse's work on the response next returned.
func (customerDataExtension) finish(ctx context.Context, resp *graphql.Response) *graphql.Response {
	m := maskedPathsFrom(ctx)
	if resp == nil || m == nil {
		return resp
	}
	paths := m.take()
	if paths == nil {
		paths = []ast.Path{}
	}
	if resp.Extensions == nil {
		resp.Extensions = map[string]any{}
	}
	resp.Extensions[CustomerDataExtensionName] = map[string]any{"level": m.level.String(), "maskedPaths": paths}
	return resp
}

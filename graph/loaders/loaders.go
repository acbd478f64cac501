// Package loaders loads an operation's REST records: per-request (and
// per-operation) batching loaders over the REST client, one fetch per
// record whatever asks for it, so one caller's data can never answer
// another caller's query. The operation's REST-call account
// (receipt.Tally) lives in its loaders.
package loaders

import (
	"context"
	"errors"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/graph-gophers/dataloader/v7"

	"paygraph/graph/admission"
	"paygraph/graph/customerdata"
	"paygraph/graph/receipt"
	"paygraph/internal/opscope"
	"paygraph/restclient"
)

// REST is what the loaders need from the REST API (*restclient.Client).
type REST = customerdata.REST

// FetchLimits are the loaders' settings (the REST client bounds concurrent calls).
type FetchLimits struct {
	Wait time.Duration // the batch window: it only groups keys (REST has no batch endpoint)
	// OnBatch, when set, is told the size of every batch of a loader of Names.
	OnBatch func(loader string, size int)

	opts loaderOptions // built from Wait on first use
}

// loaderOptions are each loader's dataloader options.
type loaderOptions struct {
	once     sync.Once
	payments []dataloader.Option[string, *restclient.Payment]
	links    []dataloader.Option[string, *restclient.PaymentLink]
	sessions []dataloader.Option[string, *restclient.CheckoutSession]
}

func (f *FetchLimits) options() *loaderOptions {
	f.opts.once.Do(func() {
		f.opts.payments = optionsFor[*restclient.Payment](f.Wait)
		f.opts.links = optionsFor[*restclient.PaymentLink](f.Wait)
		f.opts.sessions = optionsFor[*restclient.CheckoutSession](f.Wait)
	})
	return &f.opts
}

const (
	batchCapacity = admission.MaxNodes // the most keys one batch takes: a whole nodes(ids:)
	inputCapacity = 16                 // a batch's input room: usually one key or a few
)

func optionsFor[V any](wait time.Duration) []dataloader.Option[string, V] {
	return []dataloader.Option[string, V]{
		dataloader.WithWait[string, V](wait),
		dataloader.WithBatchCapacity[string, V](batchCapacity),
		dataloader.WithInputCapacity[string, V](inputCapacity),
	}
}

// Batches is what rest's loaders batch with: the REST client's fan-out, or
// restclient.Each for a test's stub.
func Batches(rest REST) customerdata.Batch {
	if b, ok := rest.(customerdata.Batch); ok {
		return b
	}
	return eachREST{rest}
}

type eachREST struct{ REST }

func (e eachREST) GetPayments(ctx context.Context, ids []string) []restclient.Result[*restclient.Payment] {
	return restclient.Each(ctx, ids, e.GetPayment)
}

func (e eachREST) GetPaymentLinks(ctx context.Context, ids []string) []restclient.Result[*restclient.PaymentLink] {
	return restclient.Each(ctx, ids, e.GetPaymentLink)
}

func (e eachREST) GetCheckoutSessions(ctx context.Context, keys []string) []restclient.Result[*restclient.CheckoutSession] {
	return restclient.Each(ctx, keys, e.GetCheckoutSession)
}

// Loaders are the loaders of one request (or operation), dropped with it.
type Loaders struct {
	rest   REST
	batch  customerdata.Batch // rest's batches
	limits *FetchLimits

	paymentsOnce sync.Once
	payments     *dataloader.Loader[string, *restclient.Payment]
	linksOnce    sync.Once
	links        *dataloader.Loader[string, *restclient.PaymentLink]
	sessionsOnce sync.Once
	sessions     *dataloader.Loader[string, *restclient.CheckoutSession]
	flights      sessionFlights
	lists        listFlights

	alone atomic.Pointer[graphql.OperationContext] // the operation Alone named

	// paymentThunks and linkThunks are every fetch of a payment or link started.
	paymentThunks thunks[*restclient.Payment]
	linkThunks    thunks[*restclient.PaymentLink]

	cost       receipt.Tally // the operation's REST-call account
	FastAnswer []byte        // the data the root fast path answered with (graph.IsFastAnswer)
}

// thunks is the table of the fetches of one kind of record: whatever asks
// for a key (a dataloader load, the alone load, the list join) looks in it
// and enters its own fetch under mu, so a key is fetched once. A load that
// panicked, which the dataloader forgets, goes too.
type thunks[V any] struct {
	mu    sync.Mutex
	ready sync.Cond // told (its L is &mu) when a reserved entry gets its thunk or goes
	m     map[string]thunkEntry[V]
	alone aloneSlot[V]
}

// thunkEntry is a key's entry: the dataloader's thunk, or where a list
// join's result will be; neither while inside the dataloader's Load (reserved).
type thunkEntry[V any] struct {
	th   dataloader.Thunk[V]
	join *joinResults[V]
	i    int
}

func (e thunkEntry[V]) reserved() bool { return e.th == nil && e.join == nil }

// startedLocked returns key's started fetch, waiting while it is reserved (t.mu held).
func (t *thunks[V]) startedLocked(key string) (thunkEntry[V], bool) {
	for {
		if c := t.alone.at.Load(); c != nil && c.key == key {
			return thunkEntry[V]{th: c.thunk}, true
		}
		e, ok := t.m[key]
		if !ok || !e.reserved() {
			return e, ok
		}
		t.ready.Wait()
	}
}

// joinResults are a list join's results, there once done is closed.
type joinResults[V any] struct {
	done chan struct{}
	out  []restclient.Result[V]
}

// initLocked makes t's table, sized for n keys, if it has none.
func (t *thunks[V]) initLocked(n int) {
	if t.m == nil {
		t.m = make(map[string]thunkEntry[V], n)
		t.ready.L = &t.mu
	}
}

func (e thunkEntry[V]) thunk() dataloader.Thunk[V] {
	if e.th != nil {
		return e.th
	}
	return e.value
}

func (e thunkEntry[V]) value() (V, error) {
	if e.th != nil {
		return e.th()
	}
	<-e.join.done
	r := &e.join.out[e.i]
	return r.Value, r.Err
}

// load returns the thunk of key's fetch: the one started, or a new load of
// ld, reserved first, as Load (which may wait for room) runs without t.mu.
func (t *thunks[V]) load(ctx context.Context, key string, ld *dataloader.Loader[string, V]) dataloader.Thunk[V] {
	t.mu.Lock()
	if e, ok := t.startedLocked(key); ok {
		t.mu.Unlock()
		return e.thunk()
	}
	t.initLocked(0)
	t.m[key] = thunkEntry[V]{}
	t.mu.Unlock()
	var th dataloader.Thunk[V]
	defer func() {
		t.mu.Lock()
		if th != nil {
			t.m[key] = thunkEntry[V]{th: th}
		} else {
			delete(t.m, key) // Load panicked: the next asker loads it
		}
		t.ready.Broadcast()
		t.mu.Unlock()
	}()
	inner := ld.Load(ctx, key)
	th = func() (V, error) {
		v, err := inner()
		if err != nil && isLoadPanic(err) {
			t.mu.Lock()
			delete(t.m, key)
			t.mu.Unlock()
		}
		return v, err
	}
	return th
}

// isLoadPanic reports whether err is a dataloader panic (its own function,
// as the errors.As target escapes).
func isLoadPanic(err error) bool {
	var pe *dataloader.PanicErrorWrapper
	return errors.As(err, &pe)
}

// New returns empty loaders over rest; limits may be nil.
func New(rest REST, limits *FetchLimits) *Loaders {
	if limits == nil {
		limits = &FetchLimits{}
	}
	return &Loaders{rest: rest, batch: Batches(rest), limits: limits}
}

const (
	loaderPayment         = "payment"
	loaderPaymentLink     = "payment_link"
	loaderCheckoutSession = "checkout_session"
)

// Names are the loaders' names, as OnBatch reports them (metric labels).
var Names = []string{loaderPayment, loaderPaymentLink, loaderCheckoutSession}

// Middleware gives each HTTP request fresh loaders over rest (limits may be nil).
func Middleware(rest REST, limits *FetchLimits) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			next.ServeHTTP(w, opscope.Request(r, With(r.Context(), New(rest, limits))))
		})
	}
}

type loadersKey struct{}

// WithOperationLoaders returns ctx carrying fresh loaders over the REST and
// limits of ctx's (ctx as it is without any), for one operation of a
// connection that serves many (a WebSocket).
func WithOperationLoaders(ctx context.Context) context.Context {
	conn, ok := ctx.Value(loadersKey{}).(*Loaders)
	if !ok {
		return ctx
	}
	return With(ctx, New(conn.rest, conn.limits))
}

// With returns ctx carrying l, whose account counts the REST calls made with it.
func With(ctx context.Context, l *Loaders) context.Context {
	return opscope.WithValue(restclient.WithCallLog(ctx, l.cost.CallLog()), loadersKey{}, l)
}

// From is ctx's loaders, nil when it has none.
func From(ctx context.Context) *Loaders {
	l, _ := ctx.Value(loadersKey{}).(*Loaders)
	return l
}

// For returns the request's loaders; without any (a wiring bug) loaders
// that answer every call with ErrNoLoaders.
func For(ctx context.Context) *Loaders {
	if l, ok := ctx.Value(loadersKey{}).(*Loaders); ok {
		return l
	}
	return New(noLoaders{}, nil)
}

// ErrPanic is the error of a recovered panic (logged, never answered).
var ErrPanic = errors.New("internal error")

// ErrNoLoaders is what a resolver gets without loaders in its context.
var ErrNoLoaders = errors.New("graph: no loaders in the request's context (LoadersMiddleware is missing)")

// noLoaders is the REST of For's loaders without any.
type noLoaders struct{}

func (noLoaders) ListPayments(context.Context, restclient.ListParams) (*restclient.PaymentPage, error) {
	return nil, ErrNoLoaders
}
func (noLoaders) GetPayment(context.Context, string) (*restclient.Payment, error) {
	return nil, ErrNoLoaders
}
func (noLoaders) GetPaymentLink(context.Context, string) (*restclient.PaymentLink, error) {
	return nil, ErrNoLoaders
}
func (noLoaders) GetCheckoutSession(context.Context, string) (*restclient.CheckoutSession, error) {
	return nil, ErrNoLoaders
}

func newLoader[V any](l *Loaders, name string, opts []dataloader.Option[string, V], fetch func(context.Context, []string) []restclient.Result[V]) *dataloader.Loader[string, V] {
	batch := func(ctx context.Context, keys []string) []*dataloader.Result[V] {
		if l.limits.OnBatch != nil {
			l.limits.OnBatch(name, len(keys))
		}
		got := fetch(ctx, keys)
		// One backing array for the results, not one allocation per key.
		backing := make([]dataloader.Result[V], len(keys))
		results := make([]*dataloader.Result[V], len(keys))
		for i := range backing {
			backing[i] = dataloader.Result[V]{Data: got[i].Value, Error: fetchError(ctx, got[i].Err)}
			results[i] = &backing[i]
		}
		return results
	}
	return dataloader.NewBatchedLoader(batch, opts...)
}

// fetchError is a fan-out call's error, a panic through recovered.
func fetchError(ctx context.Context, err error) error {
	if pe, ok := err.(*restclient.PanicError); ok {
		return recovered(ctx, pe.Value)
	}
	return err
}

// recovered turns a panic in a fetch, on a goroutine gqlgen's recovery
// does not reach, into an error by the operation's recover func.
func recovered(ctx context.Context, p any) error {
	if graphql.HasOperationContext(ctx) {
		if f := graphql.GetOperationContext(ctx).RecoverFunc; f != nil {
			return f(ctx, p)
		}
	}
	return ErrPanic
}

// Alone tells the loaders that op makes at most one distinct REST call (its
// estimate): its load then runs on the resolver's goroutine, without the
// dataloader's batch goroutine and timer; other loads of its key share it.
func (l *Loaders) Alone(op *graphql.OperationContext) { l.alone.Store(op) }

// aloneSlot holds a loader's alone load: call, claimed under its thunks'
// mu and published by at (a field, not an allocation).
type aloneSlot[V any] struct {
	at   atomic.Pointer[aloneCall[V]]
	call aloneCall[V]
}

// aloneCall is the load that took the alone path.
type aloneCall[V any] struct {
	key   string
	done  sync.WaitGroup // one, until v and err are set
	v     V
	err   error
	thunk dataloader.Thunk[V] // every load of key answers by it
}

// loadAlone loads key by fetch on the calling goroutine when ctx's
// operation is the one Alone named and nothing was loaded alone yet, or
// shares key's fetch already started; otherwise it returns nil for the
// dataloader. fetch is a method expression (a method value would allocate).
func loadAlone[V any](l *Loaders, ctx context.Context, t *thunks[V], name, key string, fetch func(REST, context.Context, string) (V, error)) dataloader.Thunk[V] {
	slot := &t.alone
	if c := slot.at.Load(); c != nil {
		if c.key != key {
			return nil
		}
		return c.thunk // it waits for the alone load, which ends with the request at the latest
	}
	op := l.alone.Load()
	if op == nil || !graphql.HasOperationContext(ctx) || graphql.GetOperationContext(ctx) != op {
		return nil
	}
	t.mu.Lock()
	if e, ok := t.startedLocked(key); ok {
		t.mu.Unlock()
		return e.thunk()
	}
	if slot.at.Load() != nil {
		t.mu.Unlock()
		return nil // another key took the slot first: the dataloader loads this one
	}
	c := &slot.call
	c.key = key
	c.done.Add(1)
	c.thunk = func() (V, error) {
		c.done.Wait()
		return c.v, c.err
	}
	slot.at.Store(c)
	t.mu.Unlock()
	if l.limits.OnBatch != nil {
		l.limits.OnBatch(name, 1)
	}
	c.fetch(l, ctx, fetch)
	c.done.Done()
	return c.thunk
}

func (c *aloneCall[V]) fetch(l *Loaders, ctx context.Context, fetch func(REST, context.Context, string) (V, error)) {
	defer func() {
		if p := recover(); p != nil {
			c.err = recovered(ctx, p)
		}
	}()
	c.v, c.err = fetch(l.rest, ctx, c.key)
}

// ListPayments lists a page for the list planned as listID, once per request and ListParams.
func (l *Loaders) ListPayments(ctx context.Context, p restclient.ListParams, listID string) (*restclient.PaymentPage, error) {
	if l.cost.Recording() {
		l.cost.Ask(admission.RouteList, strconv.Itoa(p.Limit)+"&"+string(p.Status)+"&"+p.Cursor, receipt.Origin{Line: listID})
	}
	return l.lists.do(ctx, p, l.rest.ListPayments)
}

// listFlights shares each list page of one request by its parameters.
type listFlights struct {
	mu    sync.Mutex
	calls map[restclient.ListParams]*listCall
}

type listCall struct {
	done sync.WaitGroup // one, until page and err are set
	page *restclient.PaymentPage
	err  error
}

func (f *listFlights) do(ctx context.Context, p restclient.ListParams, list func(context.Context, restclient.ListParams) (*restclient.PaymentPage, error)) (*restclient.PaymentPage, error) {
	f.mu.Lock()
	if c, ok := f.calls[p]; ok {
		f.mu.Unlock()
		c.done.Wait() // the first one's call ends with the request at the latest
		return c.page, c.err
	}
	if f.calls == nil {
		f.calls = make(map[restclient.ListParams]*listCall)
	}
	c := &listCall{}
	c.done.Add(1)
	f.calls[p] = c
	f.mu.Unlock()
	defer func() {
		if r := recover(); r != nil {
			c.err = ErrPanic // the others answer as this one will
			c.done.Done()
			panic(r)
		}
	}()
	c.page, c.err = list(ctx, p)
	c.done.Done()
	return c.page, c.err
}

// PaymentThunk starts loading a payment's detail; the thunk waits for it.
func (l *Loaders) PaymentThunk(ctx context.Context, id string) dataloader.Thunk[*restclient.Payment] {
	return l.PaymentThunkFor(ctx, id, receipt.Origin{})
}

// PaymentThunkFor is PaymentThunk for the part of the plan o.
func (l *Loaders) PaymentThunkFor(ctx context.Context, id string, o receipt.Origin) dataloader.Thunk[*restclient.Payment] {
	l.cost.Ask(admission.RoutePayment, id, o)
	if t := loadAlone(l, ctx, &l.paymentThunks, loaderPayment, id, REST.GetPayment); t != nil {
		return t
	}
	l.paymentsOnce.Do(func() { l.payments = newLoader(l, loaderPayment, l.limits.options().payments, l.batch.GetPayments) })
	return l.paymentThunks.load(ctx, id, l.payments)
}

// JoinPayments loads the details of list items (items[i] of ids[i]) for the
// list join: ids not asked for yet in one fan-out here, entered in
// paymentThunks first so later loads share it, others from their fetches.
func (l *Loaders) JoinPayments(ctx context.Context, ids []string, items []*restclient.Payment) []restclient.Result[*restclient.Payment] {
	for i, id := range ids {
		l.cost.Ask(admission.RoutePayment, id, receipt.Origin{Item: items[i]})
	}
	out := make([]restclient.Result[*restclient.Payment], len(ids))
	join := &joinResults[*restclient.Payment]{done: make(chan struct{}), out: out}
	missing := make([]string, 0, len(ids))
	at := make([]int, 0, len(ids))
	type wait struct {
		i int
		e thunkEntry[*restclient.Payment]
	}
	var waits []wait
	t := &l.paymentThunks
	t.mu.Lock()
	t.initLocked(len(ids))
	for i, id := range ids {
		if e, ok := t.startedLocked(id); ok {
			waits = append(waits, wait{i, e})
			continue
		}
		t.m[id] = thunkEntry[*restclient.Payment]{join: join, i: i}
		missing = append(missing, id)
		at = append(at, i)
	}
	t.mu.Unlock()
	func() {
		defer close(join.done) // a panic too: the thunks answer ErrPanic then
		if len(missing) == 0 {
			return
		}
		for _, i := range at {
			out[i].Err = ErrPanic
		}
		if l.limits.OnBatch != nil {
			l.limits.OnBatch(loaderPayment, len(missing))
		}
		for j, r := range l.batch.GetPayments(ctx, missing) {
			out[at[j]] = restclient.Result[*restclient.Payment]{Value: r.Value, Err: fetchError(ctx, r.Err)}
		}
	}()
	for _, w := range waits {
		out[w.i].Value, out[w.i].Err = w.e.value()
	}
	return out
}

// PaymentLinkThunk starts loading a payment link.
func (l *Loaders) PaymentLinkThunk(ctx context.Context, id string) dataloader.Thunk[*restclient.PaymentLink] {
	l.cost.Ask(admission.RouteLink, id, receipt.Origin{})
	if t := loadAlone(l, ctx, &l.linkThunks, loaderPaymentLink, id, REST.GetPaymentLink); t != nil {
		return t
	}
	l.linksOnce.Do(func() { l.links = newLoader(l, loaderPaymentLink, l.limits.options().links, l.batch.GetPaymentLinks) })
	return l.linkThunks.load(ctx, id, l.links)
}

// CheckoutSession loads a session by id or reference, then known by both.
func (l *Loaders) CheckoutSession(ctx context.Context, key string) (*restclient.CheckoutSession, error) {
	l.sessionsOnce.Do(func() {
		l.flights.known = make(map[string]*restclient.CheckoutSession)
		l.flights.inFlight = [2]map[chan struct{}]struct{}{{}, {}}
		l.sessions = newLoader(l, loaderCheckoutSession, l.limits.options().sessions, func(ctx context.Context, keys []string) []restclient.Result[*restclient.CheckoutSession] {
			return l.flights.fetch(ctx, keys, l.batch.GetCheckoutSessions)
		})
	})
	s, err := l.sessions.Load(ctx, key)()
	if err != nil {
		l.cost.Ask(admission.RouteSession, key, receipt.Origin{Line: key})
		return s, err
	}
	l.cost.Ask(admission.RouteSession, s.ID, receipt.Origin{Line: key})
	for _, other := range [2]string{s.ID, s.Reference} {
		if other != "" && other != key {
			l.sessions.Prime(ctx, other, s)
		}
	}
	return s, err
}

// sessionFlights lets lookups of one session by reference and by id share
// one REST call: each batch first waits for the earlier batches of the
// other kind (acyclic) and looks in what they found.
type sessionFlights struct {
	mu       sync.Mutex
	known    map[string]*restclient.CheckoutSession
	inFlight [2]map[chan struct{}]struct{} // by kind: 0 reference, 1 id
}

func sessionKeyKind(key string) int {
	if strings.HasPrefix(key, admission.PaymentIDPrefix) {
		return 1
	}
	return 0
}

func (f *sessionFlights) fetch(ctx context.Context, keys []string, get func(context.Context, []string) []restclient.Result[*restclient.CheckoutSession]) []restclient.Result[*restclient.CheckoutSession] {
	kind := sessionKeyKind(keys[0])
	if slices.ContainsFunc(keys[1:], func(k string) bool { return sessionKeyKind(k) != kind }) {
		return f.fetchMixed(ctx, keys, get)
	}
	f.mu.Lock()
	earlier := slices.Collect(maps.Keys(f.inFlight[1-kind]))
	done := make(chan struct{})
	f.inFlight[kind][done] = struct{}{}
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		delete(f.inFlight[kind], done)
		f.mu.Unlock()
		close(done)
	}()

	for _, ch := range earlier {
		select {
		case <-ch:
		case <-ctx.Done():
		}
	}
	var out []restclient.Result[*restclient.CheckoutSession]
	f.mu.Lock()
	for i, k := range keys {
		if s, ok := f.known[k]; ok {
			if out == nil {
				out = make([]restclient.Result[*restclient.CheckoutSession], len(keys))
			}
			out[i].Value = s
		}
	}
	f.mu.Unlock()
	if out == nil { // the usual case: all of keys fetched, nothing to merge
		got := get(ctx, keys)
		f.learn(keys, got)
		return got
	}
	var missing []string
	var at []int
	for i, k := range keys {
		if out[i].Value == nil {
			missing = append(missing, k)
			at = append(at, i)
		}
	}
	if len(missing) == 0 {
		return out
	}
	got := get(ctx, missing)
	f.learn(missing, got)
	for j, r := range got {
		out[at[j]] = r
	}
	return out
}

// fetchMixed fetches a batch of both kinds of keys as two, references
// first, so a session asked by both is fetched once.
func (f *sessionFlights) fetchMixed(ctx context.Context, keys []string, get func(context.Context, []string) []restclient.Result[*restclient.CheckoutSession]) []restclient.Result[*restclient.CheckoutSession] {
	var byKind [2][]string
	var at [2][]int
	for j, k := range keys {
		kind := sessionKeyKind(k)
		byKind[kind] = append(byKind[kind], k)
		at[kind] = append(at[kind], j)
	}
	out := make([]restclient.Result[*restclient.CheckoutSession], len(keys))
	for kind := range byKind {
		for j, r := range f.fetch(ctx, byKind[kind], get) {
			out[at[kind][j]] = r
		}
	}
	return out
}

// learn remembers the sessions got for keys by id, reference and key.
func (f *sessionFlights) learn(keys []string, got []restclient.Result[*restclient.CheckoutSession]) {
	f.mu.Lock()
	for j, r := range got {
		if s := r.Value; r.Err == nil && s != nil {
			f.known[s.ID] = s
			f.known[s.Reference] = s
			f.known[keys[j]] = s
		}
	}
	f.mu.Unlock()
}

// Cost is the operation's REST-call account.
func (l *Loaders) Cost() *receipt.Tally { return &l.cost }

// Admit records what admission decided for the operation.
func (l *Loaders) Admit(op *graphql.OperationContext, a admission.Admitted) { l.cost.Admit(op, a) }

// Tally is the account of ctx's operation, nil without loaders.
func Tally(ctx context.Context) *receipt.Tally {
	if l := From(ctx); l != nil {
		return &l.cost
	}
	return nil
}

var _ REST = (*restclient.Client)(nil)

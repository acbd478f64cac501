// proxy.go is the benchmark's floor for a GraphQL gateway: a hand-written
// proxy that does the least any gateway of this REST API must do. It knows
// each scenario by its path (/proxy/<name>), so it parses, validates,
// plans, limits, logs and meters nothing: it decodes the body, forwards
// the two credential headers, makes the gateway's REST calls (the list's
// 50 address calls all at once), decodes them and encodes a GraphQL-shaped
// answer with encoding/json. It runs as a process of its own
// (-serve-proxy), with a pprof listener of its own only with -profile.
package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	_ "net/http/pprof" // on http.DefaultServeMux, as the gateway's PPROF_ADDR listener serves it
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
)

// pxRequest is a GraphQL request body as the proxy reads it.
type pxRequest struct {
	Query     string            `json:"query"`
	Variables map[string]string `json:"variables"`
}

// The REST API's records, as far as the scenarios read them.
type pxCustomer struct {
	Name    *string `json:"name"`
	Email   *string `json:"email"`
	Phone   *string `json:"phone"`
	Address *string `json:"address"`
}

type pxPayment struct {
	ID            string      `json:"id"`
	Status        string      `json:"status"`
	Amount        json.Number `json:"amount"`
	Currency      string      `json:"currency"`
	TransactionID *string     `json:"transaction_id"`
	PaymentMethod *string     `json:"payment_method"`
	Customer      pxCustomer  `json:"customer"`
	CreatedAt     time.Time   `json:"created_at"`
	UpdatedAt     time.Time   `json:"updated_at"`
}

type pxPage struct {
	Data       []pxPayment `json:"data"`
	HasMore    bool        `json:"has_more"`
	NextCursor *string     `json:"next_cursor"`
}

type pxSession struct {
	Data struct {
		ID            string            `json:"id"`
		PaymentID     string            `json:"payment_id"`
		PaymentStatus string            `json:"payment_status"`
		Amount        string            `json:"amount"`
		Subtotal      string            `json:"subtotal"`
		MetaData      map[string]string `json:"meta_data"`
	} `json:"data"`
}

// The answers' shapes (the scenarios' selections, in their order).
type (
	outMoney struct {
		Amount   string `json:"amount"`
		Paisa    *int64 `json:"paisa,omitempty"`
		Currency string `json:"currency,omitempty"`
	}
	outPayment struct {
		ID        string    `json:"id,omitempty"`
		Status    string    `json:"status,omitempty"`
		Amount    *outMoney `json:"amount,omitempty"`
		Customer  any       `json:"customer,omitempty"`
		CreatedAt string    `json:"createdAt,omitempty"`
	}
	// The customer's selections: { name email address }, { name email },
	// { name }, { address }.
	outCustomerNEA struct {
		Name    *string `json:"name"`
		Email   *string `json:"email"`
		Address *string `json:"address"`
	}
	outCustomerNE struct {
		Name  *string `json:"name"`
		Email *string `json:"email"`
	}
	outCustomerN struct {
		Name *string `json:"name"`
	}
	outCustomerA struct {
		Address *string `json:"address"`
	}
	outPageInfo struct {
		HasNextPage bool    `json:"hasNextPage"`
		EndCursor   *string `json:"endCursor"`
	}
	outKV struct {
		Key   string `json:"key"`
		Value string `json:"value"`
	}
)

type proxy struct {
	rest   string
	client *http.Client
}

// serveProxy serves the proxy on addr in front of restURL and, when
// pprofAddr is not empty, net/http/pprof on a listener of its own there.
func serveProxy(addr, restURL, pprofAddr string) {
	if pprofAddr != "" {
		pln, err := net.Listen("tcp", pprofAddr)
		if err != nil {
			fatal("proxy pprof: %v", err)
		}
		go func() {
			_ = (&http.Server{Handler: http.DefaultServeMux, ReadHeaderTimeout: 5 * time.Second}).Serve(pln)
		}()
	}
	p := &proxy{rest: restURL, client: &http.Client{
		Transport: &http.Transport{MaxIdleConns: 1024, MaxIdleConnsPerHost: 1024, IdleConnTimeout: 90 * time.Second},
		Timeout:   10 * time.Second,
	}}
	serveChild("proxy", addr, p)
}

func (p *proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var req pxRequest
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&req); err != nil {
		http.Error(w, `{"errors":[{"message":"bad body"}]}`, http.StatusBadRequest)
		return
	}
	key, secret := r.Header.Get("X-Api-Key"), r.Header.Get("X-Api-Secret")
	get := func(path string, into any) error { return p.get(r, key, secret, path, into) }
	var data any
	err := errNoScenario
	if answer := pxScenarios[strings.TrimPrefix(r.URL.Path, "/proxy/")]; answer != nil {
		data, err = answer(get, req.Variables)
	}
	w.Header().Set("Content-Type", "application/json")
	if err != nil {
		w.WriteHeader(http.StatusBadGateway)
		_ = json.NewEncoder(w).Encode(map[string]any{"errors": []map[string]string{{"message": err.Error()}}})
		return
	}
	_ = json.NewEncoder(w).Encode(map[string]any{"data": data})
}

// get makes one REST call with the caller's credentials and decodes its
// JSON answer into into.
func (p *proxy) get(r *http.Request, key, secret, path string, into any) error {
	req, err := http.NewRequestWithContext(r.Context(), http.MethodGet, p.rest+path, nil)
	if err != nil {
		return err
	}
	req.Header.Set("X-Api-Key", key)
	req.Header.Set("X-Api-Secret", secret)
	resp, err := p.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, resp.Body)
		return fmt.Errorf("REST %s: %d", path, resp.StatusCode)
	}
	return json.NewDecoder(resp.Body).Decode(into)
}

type getter func(path string, into any) error

var errNoScenario = errors.New("no such scenario")

// pxScenarios answer each scenario from its variables.
var pxScenarios = map[string]func(get getter, vars map[string]string) (any, error){
	"single": single, "list20": list20, "aliases20": aliases20,
	"list50addr": list50addr, "checkout": checkout, "dashboard": dashboard,
}

func single(get getter, vars map[string]string) (any, error) {
	var x pxPayment
	if err := get("/api/v1/payments/"+url.PathEscape(vars["id"]), &x); err != nil {
		return nil, err
	}
	m, err := money(x.Amount, x.Currency, true)
	if err != nil {
		return nil, err
	}
	return map[string]any{"payment": outPayment{ID: x.ID, Status: x.Status, Amount: m,
		Customer:  outCustomerNEA{Name: x.Customer.Name, Email: x.Customer.Email, Address: x.Customer.Address},
		CreatedAt: dateTime(x.CreatedAt)}}, nil
}

func list20(get getter, _ map[string]string) (any, error) {
	var page pxPage
	if err := get("/api/v1/payments?limit=20", &page); err != nil {
		return nil, err
	}
	nodes := make([]outPayment, len(page.Data))
	for i, x := range page.Data {
		m, err := money(x.Amount, x.Currency, true)
		if err != nil {
			return nil, err
		}
		nodes[i] = outPayment{ID: x.ID, Status: x.Status, Amount: m,
			Customer: outCustomerNE{Name: x.Customer.Name, Email: x.Customer.Email}, CreatedAt: dateTime(x.CreatedAt)}
	}
	return map[string]any{"payments": map[string]any{"nodes": nodes,
		"pageInfo": outPageInfo{HasNextPage: page.HasMore, EndCursor: page.NextCursor}}}, nil
}

// aliases20: one REST call (the gateway's loader makes one for the 20
// aliases of one id), 20 answers.
func aliases20(get getter, vars map[string]string) (any, error) {
	var x pxPayment
	if err := get("/api/v1/payments/"+url.PathEscape(vars["id"]), &x); err != nil {
		return nil, err
	}
	out := make(map[string]outPayment, 20)
	for i := range 20 {
		m, err := money(x.Amount, x.Currency, false)
		if err != nil {
			return nil, err
		}
		out["p"+strconv.Itoa(i)] = outPayment{ID: x.ID, Status: x.Status, Amount: m, Customer: outCustomerN{Name: x.Customer.Name}}
	}
	return out, nil
}

// list50addr: the list, then every payment's detail at once (the proxy
// has no concurrency bound).
func list50addr(get getter, _ map[string]string) (any, error) {
	var page pxPage
	if err := get("/api/v1/payments?limit=50", &page); err != nil {
		return nil, err
	}
	nodes := make([]outPayment, len(page.Data))
	errs := make([]error, len(page.Data))
	var wg sync.WaitGroup
	for i, x := range page.Data {
		wg.Go(func() {
			var d pxPayment
			if errs[i] = get("/api/v1/payments/"+url.PathEscape(x.ID), &d); errs[i] == nil {
				nodes[i] = outPayment{Customer: outCustomerA{Address: d.Customer.Address}}
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return map[string]any{"payments": map[string]any{"nodes": nodes}}, nil
}

// dashboard: a payment, the list and a session, the three calls at once.
func dashboard(get getter, vars map[string]string) (any, error) {
	var x pxPayment
	var page pxPage
	var s pxSession
	var errs [3]error
	var wg sync.WaitGroup
	wg.Go(func() { errs[0] = get("/api/v1/payments/"+url.PathEscape(vars["id"]), &x) })
	wg.Go(func() { errs[1] = get("/api/v1/payments?limit=20", &page) })
	wg.Go(func() { errs[2] = get("/api/v1/checkout/sessions/"+url.PathEscape(vars["ref"]), &s) })
	wg.Wait()
	if err := errors.Join(errs[:]...); err != nil {
		return nil, err
	}
	nodes := make([]map[string]string, len(page.Data))
	for i, n := range page.Data {
		nodes[i] = map[string]string{"id": n.ID, "status": n.Status}
	}
	return map[string]any{
		"payment":         map[string]string{"id": x.ID, "status": x.Status},
		"payments":        map[string]any{"nodes": nodes},
		"checkoutSession": map[string]string{"sessionId": s.Data.ID, "paymentStatus": s.Data.PaymentStatus},
	}, nil
}

func checkout(get getter, vars map[string]string) (any, error) {
	var s pxSession
	if err := get("/api/v1/checkout/sessions/"+url.PathEscape(vars["id"]), &s); err != nil {
		return nil, err
	}
	var x pxPayment
	if err := get("/api/v1/payments/"+url.PathEscape(s.Data.PaymentID), &x); err != nil {
		return nil, err
	}
	meta := make([]outKV, 0, len(s.Data.MetaData))
	for k, v := range s.Data.MetaData {
		meta = append(meta, outKV{k, v})
	}
	m, err := money(x.Amount, "", false)
	if err != nil {
		return nil, err
	}
	return map[string]any{"checkoutSession": map[string]any{
		"sessionId": s.Data.ID, "paymentStatus": s.Data.PaymentStatus,
		"amount": outMoney{Amount: s.Data.Amount}, "subtotal": outMoney{Amount: s.Data.Subtotal},
		"metadata": meta,
		"payment":  outPayment{ID: x.ID, Status: x.Status, Amount: m, Customer: outCustomerA{Address: x.Customer.Address}},
	}}, nil
}

// money turns the REST API's decimal taka into exact paisa and back into
// a two-decimal string, as the gateway's Money does (never a float).
func money(n json.Number, currency string, paisa bool) (*outMoney, error) {
	s := string(n)
	neg := strings.HasPrefix(s, "-")
	whole, frac, _ := strings.Cut(strings.TrimPrefix(s, "-"), ".")
	if len(frac) > 2 {
		return nil, fmt.Errorf("amount %s has more than two decimals", s)
	}
	frac += "00"[len(frac):]
	w, err1 := strconv.ParseInt(whole, 10, 64)
	f, err2 := strconv.ParseInt(frac, 10, 64)
	if err1 != nil || err2 != nil {
		return nil, fmt.Errorf("amount %s is not a decimal", s)
	}
	v, sign := w*100+f, ""
	if neg {
		v, sign = -v, "-"
	}
	m := &outMoney{Amount: sign + strconv.FormatInt(w, 10) + "." + frac, Currency: currency}
	if paisa {
		m.Paisa = &v
	}
	return m, nil
}

func dateTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z07:00") }

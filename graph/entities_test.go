package graph

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"paygraph/graph/admission"
	"paygraph/graph/receipt"
	"paygraph/sandbox"
)

const entitiesQuery = `query($r: [_Any!]!) { _entities(representations: $r) {
	... on Payment { id status amount { amount } customer { name } }
	... on PaymentLink { id slug }
	... on CheckoutSession { sessionId reference paymentId }
} }`

// paymentReps is n representations of Payment over the ids, in turn.
func paymentReps(ids []string, n int) []any {
	reps := make([]any, n)
	for i := range reps {
		reps[i] = map[string]any{"__typename": "Payment", "id": ids[i%len(ids)]}
	}
	return reps
}

// TestFederationEntities: the subgraph mode's _entities resolves every
// reference through the operation's loaders (one REST call per distinct
// payment), bounds its representations before any call, and places a
// failed reference's error at its index.
func TestFederationEntities(t *testing.T) {
	t.Parallel()
	type want struct {
		calls int      // REST calls
		codes []string // the answer's error codes, in order
		paths []string // their paths
		nulls []int    // indexes answered null
	}
	for _, tc := range []struct {
		name string
		reps func(sb *sandbox.Server, biz sandbox.Business) []any
		want want
	}{
		{
			name: "20 references over 10 payments: 10 REST calls",
			reps: func(sb *sandbox.Server, biz sandbox.Business) []any {
				return paymentReps(paymentIDs(sb, biz, 10), 20)
			},
			want: want{calls: 10},
		},
		{
			name: "payments, a link and a session by each key in one call",
			reps: func(sb *sandbox.Server, biz sandbox.Business) []any {
				cs := sb.CheckoutSessions(biz.APIKey)[0]
				return append(paymentReps(paymentIDs(sb, biz, 2), 2),
					map[string]any{"__typename": "PaymentLink", "id": sb.PaymentLinks(biz.APIKey)[0].ID},
					map[string]any{"__typename": "CheckoutSession", "sessionId": cs.ID},
					map[string]any{"__typename": "CheckoutSession", "reference": cs.Reference})
			},
			want: want{calls: 4},
		},
		{
			name: "an unknown id: null and NOT_FOUND at its index",
			reps: func(sb *sandbox.Server, biz sandbox.Business) []any {
				return append(paymentReps(paymentIDs(sb, biz, 1), 1), map[string]any{"__typename": "Payment", "id": "pay_nosuchpayment"})
			},
			want: want{calls: 2, codes: []string{"NOT_FOUND"}, paths: []string{"_entities.1"}, nulls: []int{1}},
		},
		{
			name: "a malformed id: BAD_USER_INPUT, no REST call for it",
			reps: func(sb *sandbox.Server, biz sandbox.Business) []any {
				return append(paymentReps(paymentIDs(sb, biz, 1), 1), map[string]any{"__typename": "Payment", "id": "pl_notapayment"})
			},
			want: want{calls: 1, codes: []string{"BAD_USER_INPUT"}, paths: []string{"_entities.1"}, nulls: []int{1}},
		},
		{
			name: "more representations than the cap: refused, no REST call",
			reps: func(sb *sandbox.Server, biz sandbox.Business) []any {
				return paymentReps(paymentIDs(sb, biz, 10), admission.MaxNodes+1)
			},
			want: want{codes: []string{"COMPLEXITY_LIMIT_EXCEEDED"}, paths: []string{""}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			sb := sandbox.New(sandbox.Options{})
			rig := NewRig(t, RigConfig{Sandbox: sb, Server: ServerConfig{Federation: true, Cost: receipt.CostReceipts{Enabled: true}}})
			reps := tc.reps(sb, rig.Biz)
			body := rig.post(t, entitiesQuery, map[string]any{"r": reps}).body
			var a struct {
				Data struct {
					Entities []json.RawMessage `json:"_entities"`
				} `json:"data"`
				Errors []struct {
					Path       []any
					Extensions struct{ Code string }
				}
				Extensions struct {
					Cost struct{ Estimated, Made int }
				}
			}
			if err := json.Unmarshal(body, &a); err != nil {
				t.Fatal(err)
			}
			var codes, paths []string
			for _, e := range a.Errors {
				codes = append(codes, e.Extensions.Code)
				paths = append(paths, strings.Trim(strings.ReplaceAll(fmt.Sprint(e.Path), " ", "."), "[]"))
			}
			if !slices.Equal(codes, tc.want.codes) || !slices.Equal(paths, tc.want.paths) {
				t.Fatalf("errors %v at %v, want %v at %v: %.600s", codes, paths, tc.want.codes, tc.want.paths, body)
			}
			if got := sb.CallCount(""); got != tc.want.calls {
				t.Errorf("%d REST calls, want %d", got, tc.want.calls)
			}
			// The receipt: every representation planned before any call.
			if c := a.Extensions.Cost; c.Made != tc.want.calls || c.Estimated < c.Made {
				t.Errorf("receipt estimated %d, made %d; want made %d, estimated at least that", c.Estimated, c.Made, tc.want.calls)
			}
			if tc.want.codes != nil && tc.want.nulls == nil {
				return // refused whole
			}
			if len(a.Data.Entities) != len(reps) {
				t.Fatalf("%d entities for %d representations: %.600s", len(a.Data.Entities), len(reps), body)
			}
			for i, e := range a.Data.Entities {
				isNull := string(e) == "null"
				if isNull != slices.Contains(tc.want.nulls, i) {
					t.Errorf("entity %d is %s", i, e)
					continue
				}
				if rep := reps[i].(map[string]any); !isNull {
					for k, v := range rep {
						if k != "__typename" && !strings.Contains(string(e), fmt.Sprintf("%q:%q", k, v)) {
							t.Errorf("entity %d is %s, want %s %s", i, e, k, v)
						}
					}
				}
			}
		})
	}
}

func paymentIDs(sb *sandbox.Server, biz sandbox.Business, n int) []string {
	var ids []string
	for _, p := range sb.Payments(biz.APIKey)[:n] {
		ids = append(ids, p.ID)
	}
	return ids
}

// TestFederationModeOff: without the subgraph mode the served schema is
// the contract's: no _service, _entities or _Any.
func TestFederationModeOff(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name       string
		federation bool
		query      string
		want       string // a code, or what the data holds
	}{
		{"_service refused with the mode off", false, `{ _service { sdl } }`, "GRAPHQL_VALIDATION_FAILED"},
		{"_entities refused with the mode off", false, `{ _entities(representations: []) { __typename } }`, "GRAPHQL_VALIDATION_FAILED"},
		{"no _Any type with the mode off", false, `{ __type(name: "_Any") { name } }`, `{"__type":null}`},
		{"_service's SDL has the keys with the mode on", true, `{ _service { sdl } }`, `@key(fields: \"id\")`},
		{"_Any with the mode on", true, `{ __type(name: "_Any") { name } }`, `{"__type":{"name":"_Any"}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rig := NewRig(t, RigConfig{Server: ServerConfig{Federation: tc.federation}})
			a := rig.post(t, tc.query, nil)
			if strings.ToUpper(tc.want) == tc.want {
				a.wantRefused(t, tc.want)
				return
			}
			a.wantNoErrors(t)
			if !strings.Contains(string(a.Data), tc.want) {
				t.Errorf("data %.300s, want %s in it", a.Data, tc.want)
			}
		})
	}
}

// TestFastPathMatchesGqlgenEntities: the entities of _entities answer the
// same bytes with the fast path (its object marshallers) and without;
// _entities and _service themselves are gqlgen's.
func TestFastPathMatchesGqlgenEntities(t *testing.T) {
	rest := newFastREST("N\"a\\m\u2028e\x00\x7f", "weird status")
	p := fastPairConfig(t, RigConfig{REST: rest, Server: ServerConfig{MaxResponseBytes: -1, Federation: true}})
	reps := []any{
		map[string]any{"__typename": "Payment", "id": "pay_a"},
		map[string]any{"__typename": "Payment", "id": "pay_zz"},
		map[string]any{"__typename": "PaymentLink", "id": "pl_x"},
		map[string]any{"__typename": "Payment", "id": "pay_a"},
	}
	for _, tc := range []struct {
		name, query string
		vars        map[string]any
		wantFast    bool
	}{
		{"payments and a link", `query($r: [_Any!]!) { _entities(representations: $r) { __typename ... on Payment { id status amount { amount currency } customer { name address } } ... on PaymentLink { url } } }`, map[string]any{"r": reps}, true},
		{"_service", `{ _service { sdl } }`, nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := fastCompiled.Load()
			p.compare(t, tc.query, tc.vars)
			if got := fastCompiled.Load() > before; got != tc.wantFast {
				t.Errorf("the fast path compiled a plan: %v, want %v", got, tc.wantFast)
			}
		})
	}
}

package sessiontoken

import (
	"encoding/json"
	"strings"
	"sync"
	"testing"
)

// access is what a scope allows of the test resources.
type access struct {
	list, link, payment, sessionPayment, otherPayment, byRef, byID, otherSession bool
}

func accessOf(s Scope) access {
	return access{
		list:           s.AllowsList(),
		link:           s.AllowsPaymentLink("pl_abc"),
		payment:        s.AllowsPayment("pay_prod_00000000000000000000000000000001"),
		sessionPayment: s.AllowsPayment(testSession.PaymentID),
		otherPayment:   s.AllowsPayment("pay_prod_99999999999999999999999999999999"),
		byRef:          s.AllowsCheckoutSession(testSession.Reference),
		byID:           s.AllowsCheckoutSession(testSession.ID),
		otherSession:   s.AllowsCheckoutSession("OTHER1"),
	}
}

func TestScopeAllows(t *testing.T) {
	t.Parallel()
	pinned, err := mustScope(t, ScopeCheckoutSession, testSession.Reference).withSession(testSession)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		scope Scope
		want  access
	}{
		{"zero scope allows nothing", Scope{}, access{}},
		{"all", AllReads(), access{list: true, link: true, payment: true, sessionPayment: true, otherPayment: true, byRef: true, byID: true, otherSession: true}},
		{"payment", mustScope(t, ScopePayment, "pay_prod_00000000000000000000000000000001"), access{payment: true}},
		{"checkout by reference, nothing learned", mustScope(t, ScopeCheckoutSession, testSession.Reference), access{byRef: true}},
		{"checkout by id, nothing learned", mustScope(t, ScopeCheckoutSession, testSession.ID), access{byID: true}},
		{"checkout pinned at minting", pinned, access{sessionPayment: true, byRef: true, byID: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := accessOf(tt.scope); got != tt.want {
				t.Errorf("allows %+v, want %+v", got, tt.want)
			}
			if tt.scope.AllowsPayment("") || tt.scope.AllowsCheckoutSession("") || tt.scope.AllowsPaymentLink("") {
				t.Error("an empty id is allowed")
			}
		})
	}
}

func TestScopeLearnsItsSession(t *testing.T) {
	t.Parallel()
	full := access{sessionPayment: true, byRef: true, byID: true}
	tests := []struct {
		name      string
		mintedAs  string
		learn     CheckoutSessionIDs
		wantTrue  bool
		wantAfter access
	}{
		{"minted by reference learns id and payment", testSession.Reference, testSession, true, full},
		{"minted by id learns reference and payment", testSession.ID, testSession, true, full},
		{"another session teaches nothing", testSession.Reference,
			CheckoutSessionIDs{ID: "pay_prod_11111111111111111111111111111111", Reference: "OTHER1", PaymentID: "pay_prod_22222222222222222222222222222222"},
			false, access{byRef: true}},
		{"a session with a bad id teaches nothing", testSession.Reference,
			CheckoutSessionIDs{ID: "../x", Reference: testSession.Reference, PaymentID: testSession.PaymentID},
			false, access{byRef: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := mustScope(t, ScopeCheckoutSession, tt.mintedAs)
			if ref, ok := s.SessionToLearn(); !ok || ref != tt.mintedAs {
				t.Fatalf("SessionToLearn = %q, %v; want %q, true", ref, ok, tt.mintedAs)
			}
			copyBefore := s // copies share what is learned
			if got := s.LearnCheckoutSession(tt.learn); got != tt.wantTrue {
				t.Errorf("LearnCheckoutSession = %v, want %v", got, tt.wantTrue)
			}
			if got := accessOf(copyBefore); got != tt.wantAfter {
				t.Errorf("allows %+v, want %+v", got, tt.wantAfter)
			}
			if _, ok := s.SessionToLearn(); ok != !tt.wantTrue {
				t.Errorf("SessionToLearn ok = %v after learning %v", ok, tt.wantTrue)
			}
		})
	}
	t.Run("what is learned is never overwritten", func(t *testing.T) {
		s := mustScope(t, ScopeCheckoutSession, testSession.Reference)
		s.LearnCheckoutSession(testSession)
		liar := testSession
		liar.PaymentID = "pay_prod_33333333333333333333333333333333"
		if s.LearnCheckoutSession(liar) {
			t.Error("a second, different session under the same reference was accepted")
		}
		if s.AllowsPayment(liar.PaymentID) || !s.AllowsPayment(testSession.PaymentID) {
			t.Error("the learned payment was replaced")
		}
	})
	t.Run("other kinds", func(t *testing.T) {
		if !AllReads().LearnCheckoutSession(testSession) {
			t.Error(`"all" does not include a session`)
		}
		p := mustScope(t, ScopePayment, testSession.PaymentID)
		if p.LearnCheckoutSession(testSession) || p.AllowsCheckoutSession(testSession.ID) {
			t.Error("a payment scope took in a checkout session")
		}
		if _, ok := p.SessionToLearn(); ok {
			t.Error("a payment scope has a session to learn")
		}
	})
	t.Run("each Verify has its own", func(t *testing.T) {
		kr := keyring(t, newClock(), testKeyA)
		tok := mint(t, kr, mustScope(t, ScopeCheckoutSession, testSession.Reference), 60e9)
		first, _ := kr.Verify(tok)
		second, _ := kr.Verify(tok)
		first.Scope.LearnCheckoutSession(testSession)
		if !first.Scope.AllowsCheckoutSession(testSession.ID) || second.Scope.AllowsCheckoutSession(testSession.ID) {
			t.Error("what one request learned is seen by another")
		}
	})
}

// Resolvers learn and ask concurrently (run with -race).
func TestScopeConcurrentLearning(t *testing.T) {
	t.Parallel()
	s := mustScope(t, ScopeCheckoutSession, testSession.Reference)
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			s.AllowsPayment(testSession.PaymentID)
			s.LearnCheckoutSession(testSession)
			s.AllowsCheckoutSession(testSession.ID)
		})
	}
	wg.Wait()
	if !s.AllowsPayment(testSession.PaymentID) {
		t.Error("not learned")
	}
}

func TestScopeJSON(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, in string
		want     string // re-marshalled; "" when refused
		errSays  string
	}{
		{"all", `{"kind":"all"}`, `{"kind":"all"}`, ""},
		{"checkout", `{"kind":"checkoutSession","id":"REF123"}`, `{"kind":"checkoutSession","id":"REF123"}`, ""},
		{"payment", `{"kind":"payment","id":"pay_prod_1"}`, `{"kind":"payment","id":"pay_prod_1"}`, ""},
		{"all with an id", `{"kind":"all","id":"x"}`, "", "takes no id"},
		{"payment without id", `{"kind":"payment"}`, "", "is missing"},
		{"unknown kind", `{"kind":"everything"}`, "", "unknown scope kind"},
		{"kind in another case", `{"kind":"ALL"}`, "", "unknown scope kind"},
		{"path in id", `{"kind":"payment","id":"../payments"}`, "", "only letters"},
		{"id too long", `{"kind":"payment","id":"` + strings.Repeat("a", MaxIDBytes+1) + `"}`, "", "longer than"},
		{"unknown field", `{"kind":"all","paymentId":"x"}`, "", "unknown field"},
		{"not an object", `"all"`, "", "scope is not"},
		{"null", `null`, "", "unknown scope kind"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var s Scope
			err := json.Unmarshal([]byte(tt.in), &s)
			if tt.want == "" {
				if err == nil || !strings.Contains(err.Error(), tt.errSays) {
					t.Fatalf("Unmarshal(%s) = %v, want an error saying %q", tt.in, err, tt.errSays)
				}
				return
			}
			if err != nil {
				t.Fatalf("Unmarshal(%s): %v", tt.in, err)
			}
			if out, _ := json.Marshal(s); string(out) != tt.want {
				t.Errorf("Marshal = %s, want %s", out, tt.want)
			}
		})
	}
}

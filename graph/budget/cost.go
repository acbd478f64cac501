package budget

// The estimate of the JSON a REST record renders is linear in its string
// lengths: a plan per selection says how often each string renders and
// the fixed bytes around them. Left out: JSON escaping, @skip/@include
// (counted), and resolvers that charge for themselves.

import (
	"context"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"

	"paygraph/graph/model"
	"paygraph/graph/relay"
	"paygraph/graph/selcache"
	"paygraph/restclient"
)

// slot is a string of a record whose length varies (or a count of entries).
type slot uint8

const (
	slotNone slot = iota
	slotID
	slotCurrency
	slotTransactionID
	slotPaymentMethod
	slotName
	slotEmail
	slotPhone
	slotCity
	slotURL
	slotSlug
	slotTitle
	slotDescription
	slotSuccessURL
	slotCancelURL
	slotReference
	slotPaymentID
	slotStatus
	slotPaymentStatus
	slotMetaKeys    // the sum of the metadata keys' lengths
	slotMetaValues  // the sum of the metadata values' lengths
	slotMetaEntries // the number of metadata entries
	slotCursor      // an edge's cursor (pageInfo: the longest)
	numSlots
)

// sizes are one record's values of the slots.
type sizes [numSlots]int

// Plan is what one selection renders per record: fixed bytes plus per[s]
// times the record's value of slot s.
type Plan struct {
	fixed int
	per   [numSlots]int
}

func (p *Plan) bytes(x *sizes) int {
	n := p.fixed
	for i, k := range p.per {
		n += k * x[i]
	}
	return n
}

// Bytes of the bounded values, as rendered at most (with quotes).
const (
	keyBytes      = 4  // `"` alias `":` and a comma, beyond the alias
	stringBytes   = 4  // quotes, or null
	enumBytes     = 12 // "CANCELLED"
	decimalBytes  = 24 // "90071992547409.91"
	safeIntBytes  = 20 // -9007199254740991
	intBytes      = 12
	boolBytes     = 5
	dateTimeBytes = 28 // "2026-11-21T09:30:00.000Z"
	// unknownBytes is charged for a field these rules do not know.
	unknownBytes = 64
)

// rule says how a field renders.
type rule struct {
	value   int    // bytes of a bounded value
	slot    slot   // a string of the record
	child   string // an object or list of objects of this type
	entries slot   // the child is a list in the record, its fixed bytes counted per entry here
	items   bool   // the child is a connection's list (edges, nodes): walked into the item plan
	skip    bool   // a resolver of its own, which charges for itself
}

var costRules = map[string]map[string]rule{
	"Money":    {"amount": {value: decimalBytes}, "paisa": {value: safeIntBytes}, "currency": {slot: slotCurrency}},
	"Customer": {"name": {slot: slotName}, "email": {slot: slotEmail}, "phone": {slot: slotPhone}, "city": {slot: slotCity}, "address": {skip: true}},
	"Payment": {
		"id": {slot: slotID}, "status": {value: enumBytes}, "amount": {child: "Money"},
		"transactionId": {slot: slotTransactionID}, "paymentMethod": {slot: slotPaymentMethod},
		"customer": {child: "Customer"}, "createdAt": {value: dateTimeBytes}, "updatedAt": {value: dateTimeBytes},
	},
	"PaymentLink": {
		"id": {slot: slotID}, "url": {slot: slotURL}, "slug": {slot: slotSlug}, "title": {slot: slotTitle},
		"description": {slot: slotDescription}, "amount": {child: "Money"}, "isReusable": {value: boolBytes},
		"isActive": {value: boolBytes}, "currentUses": {value: intBytes}, "maxUses": {value: intBytes},
		"expiresAt": {value: dateTimeBytes}, "successUrl": {slot: slotSuccessURL},
		"createdAt": {value: dateTimeBytes}, "updatedAt": {value: dateTimeBytes},
	},
	"CheckoutSession": {
		"sessionId": {slot: slotID}, "reference": {slot: slotReference}, "paymentId": {slot: slotPaymentID},
		"payment": {skip: true}, "status": {slot: slotStatus}, "paymentStatus": {slot: slotPaymentStatus},
		"amount": {child: "Money"}, "subtotal": {child: "Money"}, "customer": {child: "Customer"},
		"successUrl": {slot: slotSuccessURL}, "cancelUrl": {slot: slotCancelURL},
		"transactionId": {slot: slotTransactionID}, "paymentMethod": {slot: slotPaymentMethod},
		"metadata":  {child: "MetadataEntry", entries: slotMetaEntries},
		"createdAt": {value: dateTimeBytes}, "updatedAt": {value: dateTimeBytes},
	},
	"MetadataEntry":     {"key": {slot: slotMetaKeys}, "value": {slot: slotMetaValues}},
	"PaymentConnection": {"edges": {child: "PaymentEdge", items: true}, "nodes": {child: "Payment", items: true}, "pageInfo": {child: "PageInfo"}},
	"PaymentEdge":       {"cursor": {slot: slotCursor}, "node": {child: "Payment"}},
	"PageInfo": {
		"hasNextPage": {value: boolBytes}, "hasPreviousPage": {value: boolBytes},
		"startCursor": {slot: slotCursor}, "endCursor": {slot: slotCursor},
	},
}

// planWalker builds plans from a selection.
type planWalker struct {
	doc   *ast.QueryDocument
	items *Plan // a connection's per-item plan
}

// walk adds to p what sel renders for one object of type typ; the fixed
// bytes go to p.fixed, or, inside a list of entries, to p.per[fixedTo].
func (w *planWalker) walk(p *Plan, fixedTo slot, sel ast.SelectionSet, typ string) {
	add := func(n int) {
		if fixedTo == slotNone {
			p.fixed += n
		} else {
			p.per[fixedTo] += n
		}
	}
	rules := costRules[typ]
	for _, s := range sel {
		switch s := s.(type) {
		case *ast.Field:
			key := len(s.Alias) + keyBytes
			if s.Name == "__typename" {
				add(key + len(typ) + stringBytes)
				continue
			}
			r, ok := rules[s.Name]
			switch {
			case !ok:
				add(key + unknownBytes)
				w.walk(p, fixedTo, s.SelectionSet, "")
			case r.skip:
			case r.items:
				add(key + 2)
				if w.items != nil {
					w.items.fixed += 3 // the item's braces and comma
					w.walk(w.items, slotNone, s.SelectionSet, r.child)
				}
			case r.entries != slotNone:
				add(key + 2)
				p.per[r.entries] += 3
				w.walk(p, r.entries, s.SelectionSet, r.child)
			case r.child != "":
				add(key + 2)
				w.walk(p, fixedTo, s.SelectionSet, r.child)
			case r.slot != slotNone:
				add(key + stringBytes)
				p.per[r.slot]++
			default:
				add(key + r.value)
			}
		case *ast.InlineFragment:
			if typeApplies(s.TypeCondition, typ) {
				w.walk(p, fixedTo, s.SelectionSet, typ)
			}
		case *ast.FragmentSpread:
			def := s.Definition
			if def == nil && w.doc != nil {
				def = w.doc.Fragments.ForName(s.Name)
			}
			if def != nil && typeApplies(def.TypeCondition, typ) {
				w.walk(p, fixedTo, def.SelectionSet, typ)
			}
		}
	}
}

// typeApplies: a fragment on cond applies to type typ ("" unknown: counted, to be safe).
func typeApplies(cond, typ string) bool {
	return cond == "" || typ == "" || cond == typ || cond == "Node" && (typ == "Payment" || typ == "PaymentLink")
}

// FieldPlan returns b and the plan of field for an object of type typ (its
// key included), with items a connection's per-item plan; nil b: no budget.
func (b *Budget) FieldPlan(ctx context.Context, field graphql.CollectedField, typ string, items *Plan) (*Budget, Plan) {
	if b == nil || field.Field == nil {
		return nil, Plan{}
	}
	var doc *ast.QueryDocument
	if graphql.HasOperationContext(ctx) {
		doc = graphql.GetOperationContext(ctx).Doc
	}
	// Plans are behind a pointer: large frames grow resolvers' fresh stacks.
	tag := typ
	if items != nil {
		tag += "+items"
	}
	walk := func() *[2]Plan { return WalkPlans(doc, field, typ, items != nil) }
	plans, ok := plans.Get(doc, tag, field.Field, field.Selections, walk)
	if !ok {
		plans = walk()
	}
	if items != nil {
		*items = plans[1]
	}
	return b, plans[0]
}

func (b *Budget) plan(ctx context.Context, typ string) Plan {
	fc := graphql.GetFieldContext(ctx)
	if fc == nil {
		return Plan{}
	}
	_, p := b.FieldPlan(ctx, fc.Field, typ, nil)
	return p
}

// WalkPlans is the plan of field for type typ and, with items, a connection's item plan.
func WalkPlans(doc *ast.QueryDocument, field graphql.CollectedField, typ string, items bool) *[2]Plan {
	plans := new([2]Plan)
	w := planWalker{doc: doc}
	if items {
		w.items = &plans[1]
	}
	plans[0].fixed = len(field.Alias) + keyBytes + 2
	w.walk(&plans[0], slotNone, field.Selections, typ)
	return plans
}

// plans keeps FieldPlan's plans (and a connection's item plan).
var plans selcache.Cache[*[2]Plan]

func strLen(s *string) int {
	if s == nil {
		return 0
	}
	return len(*s)
}

func customerSizes(c *restclient.Customer, x *sizes) {
	x[slotName], x[slotEmail], x[slotPhone], x[slotCity] = strLen(c.Name), strLen(c.Email), strLen(c.Phone), strLen(c.City)
}

func paymentSizes(p *model.Payment, x *sizes) {
	x[slotID], x[slotCurrency] = len(p.ID), len(p.Currency)
	x[slotTransactionID], x[slotPaymentMethod] = strLen(p.TransactionID), strLen(p.PaymentMethod)
	customerSizes(&p.Payment.Customer, x)
}

// cursorLen is the most length relay's cursor of pos takes (a 2-byte skip).
func cursorLen(pos relay.Position) int {
	return ((2+2+len(pos.RestCursor)+relay.TagLen)*4 + 2) / 3
}

// sizesOf reads the sizes of v, a REST-backed object, and names its type ("": none).
func sizesOf(v any, x *sizes) string {
	switch v := v.(type) {
	case *model.Payment:
		paymentSizes(v, x)
		return "Payment"
	case *model.PaymentLink:
		x[slotID], x[slotCurrency], x[slotURL], x[slotSlug], x[slotTitle] = len(v.ID), len(v.Currency), len(v.URL), len(v.Slug), len(v.Title)
		x[slotDescription], x[slotSuccessURL] = strLen(v.Description), strLen(v.SuccessURL)
		return "PaymentLink"
	case *model.CheckoutSession:
		x[slotID], x[slotReference], x[slotPaymentID], x[slotCurrency] = len(v.ID), len(v.Reference), len(v.PaymentID), len(v.Currency)
		x[slotStatus], x[slotPaymentStatus] = len(v.Status), len(v.PaymentStatus)
		x[slotSuccessURL], x[slotCancelURL] = strLen(v.SuccessURL), strLen(v.CancelURL)
		x[slotTransactionID], x[slotPaymentMethod] = strLen(v.TransactionID), strLen(v.PaymentMethod)
		customerSizes(&v.CheckoutSession.Customer, x)
		x[slotMetaEntries] = len(v.Metadata)
		for _, e := range v.Metadata {
			x[slotMetaKeys] += len(e.Key)
			x[slotMetaValues] += len(e.Value)
		}
		return "CheckoutSession"
	}
	return ""
}

// ChargeObject charges what the field being resolved renders of v, a REST-backed object.
func (b *Budget) ChargeObject(ctx context.Context, v any) error {
	if b == nil {
		return nil
	}
	var x sizes
	typ := sizesOf(v, &x)
	if typ == "" {
		return nil
	}
	plan := b.plan(ctx, typ)
	return b.Charge(plan.bytes(&x))
}

// ChargePayment charges what a field of plan renders of x (the root fast
// path's payment fields, which have no field context).
func (b *Budget) ChargePayment(plan *Plan, x *model.Payment) error {
	if b == nil {
		return nil
	}
	var s sizes
	paymentSizes(x, &s)
	return b.Charge(plan.bytes(&s))
}

// ChargeNodes charges what a nodes field renders of its objects, its
// selection walked once per kind (each object charged the field's key).
func (b *Budget) ChargeNodes(ctx context.Context, nodes []model.Node) error {
	if b == nil {
		return nil
	}
	var made [2]Plan
	var have [2]bool
	total := 0
	for _, n := range nodes {
		var x sizes
		typ := sizesOf(n, &x)
		k := 0
		if typ == "PaymentLink" {
			k = 1
		} else if typ != "Payment" {
			continue
		}
		if !have[k] {
			made[k], have[k] = b.plan(ctx, typ), true
		}
		total += made[k].bytes(&x)
	}
	return b.Charge(total)
}

// ChargeConnection charges what a payments field renders: plan is the
// connection's (pageInfo), items each edge's and node's.
func (b *Budget) ChargeConnection(plan, items *Plan, edges []*model.PaymentEdge) error {
	if b == nil {
		return nil
	}
	var x sizes
	total, longest := 0, 0
	for _, e := range edges {
		paymentSizes(e.Node, &x)
		x[slotCursor] = cursorLen(e.After)
		longest = max(longest, x[slotCursor])
		total += items.bytes(&x)
	}
	x = sizes{}
	x[slotCursor] = longest
	return b.Charge(total + plan.bytes(&x))
}

// ChargeString charges a string-valued resolver (Customer.address).
func (b *Budget) ChargeString(ctx context.Context, s *string) error {
	if b == nil {
		return nil
	}
	alias := 0
	if fc := graphql.GetFieldContext(ctx); fc != nil && fc.Field.Field != nil {
		alias = len(fc.Field.Alias)
	}
	return b.ChargeAddresses(s, alias)
}

// ChargeAddresses charges address s written under each alias of these lengths.
func (b *Budget) ChargeAddresses(s *string, aliases ...int) error {
	for _, alias := range aliases {
		if err := b.Charge(keyBytes + stringBytes + strLen(s) + alias); err != nil {
			return err
		}
	}
	return nil
}

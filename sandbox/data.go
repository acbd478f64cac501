package sandbox

import (
	"cmp"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"
)

// DefaultSeed is the seed used when Options.Seed is 0.
const DefaultSeed int64 = 20261101

// ReferenceTime is the generated data's fixed "now": every timestamp lies before it.
var ReferenceTime = time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)

// TimeLayout is the timestamp format used in every rendered timestamp.
const TimeLayout = "2006-01-02T15:04:05.000Z"

// Payment statuses.
const (
	StatusPending   = "PENDING"
	StatusSucceeded = "SUCCEEDED"
	StatusFailed    = "FAILED"
	StatusCancelled = "CANCELLED"
	StatusRefunded  = "REFUNDED"
)

// Statuses lists every payment status value, in documentation order.
func Statuses() []string {
	return []string{StatusPending, StatusSucceeded, StatusFailed, StatusCancelled, StatusRefunded}
}

// Payment methods used by the generated data. The first three are mobile
// wallet merchant methods, the last two card/bank gateway methods.
var (
	WalletMethods  = []string{"bkash", "nagad", "rocket"}
	GatewayMethods = []string{"sslcommerz", "card"}
)

// Business is one tenant of the sandbox with its credential pair.
type Business struct {
	Name      string
	APIKey    string
	APISecret string
}

// Customer is the customer of a payment. Address is only rendered by the
// retrieve-payment endpoint, never in list items.
type Customer struct {
	Name    string `json:"name"`
	Email   string `json:"email"`
	Phone   string `json:"phone"`
	Address string `json:"address,omitempty"`
}

// Payment is the sandbox's record of a payment, tagged with its wire shape
// (field order follows rest-api.md).
type Payment struct {
	ID            string      `json:"id"`
	Status        string      `json:"status"`
	AmountPaisa   int64       `json:"-"`
	AmountText    json.Number `json:"amount"` // the exact JSON number text
	Currency      string      `json:"currency"`
	TransactionID string      `json:"transaction_id,omitempty"` // "" when the payment has none: the key is omitted
	PaymentMethod string      `json:"payment_method"`
	Customer      Customer    `json:"customer"`
	CreatedAt     string      `json:"created_at"` // TimeLayout
	UpdatedAt     string      `json:"updated_at"`
}

// PaymentLink is the sandbox's record of a payment link, tagged with its wire shape.
type PaymentLink struct {
	ID          string      `json:"id"`
	URL         string      `json:"url"`
	Slug        string      `json:"slug"`
	Title       string      `json:"title"`
	Description string      `json:"description,omitempty"` // "" when absent
	AmountPaisa int64       `json:"-"`
	AmountText  json.Number `json:"amount"` // the exact JSON number text
	Currency    string      `json:"currency"`
	IsReusable  bool        `json:"is_reusable"`
	IsActive    bool        `json:"is_active"`
	CurrentUses int         `json:"current_uses"`
	MaxUses     *int        `json:"max_uses"`   // nil renders null
	ExpiresAt   *string     `json:"expires_at"` // nil renders null
	SuccessURL  string      `json:"success_url"`
	CreatedAt   string      `json:"created_at"`
	UpdatedAt   string      `json:"updated_at"`
}

// SessionCustomer is the customer object of a checkout session.
type SessionCustomer struct {
	Name    string `json:"name"`
	Email   string `json:"email"`
	Phone   string `json:"phone"`
	Address string `json:"address"`
	City    string `json:"city"`
}

// MetaPair is one meta_data entry.
type MetaPair struct {
	Key   string
	Value string
}

// Meta is a checkout session's meta_data, rendered as one JSON object in
// this (insertion) order; empty renders {}.
type Meta []MetaPair

// CheckoutSession is the sandbox's record of a checkout session, tagged
// with its wire shape (field order follows rest-api.md).
type CheckoutSession struct {
	ID            string          `json:"id"`
	PaymentID     string          `json:"payment_id"`
	Reference     string          `json:"reference"`
	Status        string          `json:"status"`
	PaymentStatus string          `json:"payment_status"`
	Amount        string          `json:"amount"` // decimal string, two fractional digits
	AmountPaisa   int64           `json:"amount_paisa"`
	Subtotal      string          `json:"subtotal"` // decimal string, two fractional digits
	SubtotalPaisa int64           `json:"subtotal_paisa"`
	Currency      string          `json:"currency"`
	Customer      SessionCustomer `json:"customer"`
	SuccessURL    string          `json:"success_url"`
	CancelURL     string          `json:"cancel_url"`
	TransactionID string          `json:"transaction_id"` // the payment's; "" (rendered as "") when it has none
	PaymentMethod string          `json:"payment_method"`
	MetaData      Meta            `json:"meta_data"`
	CreatedAt     string          `json:"created_at"`
	UpdatedAt     string          `json:"updated_at"`
}

// cloneAll copies records deeply, so callers cannot change the server's.
func cloneAll[T any](in []T, clone func(T) T) []T {
	out := make([]T, len(in))
	for i, v := range in {
		out[i] = clone(v)
	}
	return out
}

func (l PaymentLink) clone() PaymentLink {
	if l.MaxUses != nil {
		l.MaxUses = new(*l.MaxUses)
	}
	if l.ExpiresAt != nil {
		l.ExpiresAt = new(*l.ExpiresAt)
	}
	return l
}

// setStatus sets the payment's status; a REFUNDED payment's checkout itself SUCCEEDED.
func (c *CheckoutSession) setStatus(payment string) {
	c.PaymentStatus, c.Status = payment, payment
	if payment == StatusRefunded {
		c.Status = StatusSucceeded
	}
}

func (c CheckoutSession) clone() CheckoutSession {
	c.MetaData = slices.Clone(c.MetaData)
	return c
}

// ---- generation ----

type bizSpec struct {
	name, domain                                string
	payments, links, sessions, minTaka, maxTaka int
	titles, metaKeys                            []string
}

var bizSpecs = []bizSpec{
	{
		name: "Padma Tea House", domain: "padmateahouse.example.com",
		payments: 240, links: 10, sessions: 15, minTaka: 20, maxTaka: 6000,
		titles: []string{
			"Masala Chai Box", "Darjeeling Gift Pack", "Afternoon Tea for Two", "Monthly Tea Subscription",
			"Sylhet Green Tea 250g", "Catering Deposit", "Tea Tasting Workshop", "Gift Card ৳500",
			"Bulk Order Advance", "Rooftop \"Adda\" Booking", "Seven-Layer Tea Special", "Corporate Hamper",
		},
		metaKeys: []string{"order_id", "table", "cashier", "branch", "note", "channel", "invoice_no"},
	},
	{
		name: "Jamuna Electronics", domain: "jamuna-electronics.example.com",
		payments: 120, links: 10, sessions: 15, minTaka: 300, maxTaka: 180000,
		titles: []string{
			"Fridge Booking Advance", "Smartphone EMI Down Payment", "LED TV 43\" Booking",
			"Laptop Repair Service", "Extended Warranty", "Rice Cooker 2.8L",
			"Power Bank 20000mAh", "Router Installation", "AC Servicing & Gas Refill",
			"Gift Voucher", "Washing Machine Pre-order", "Solar Panel Deposit",
		},
		metaKeys: []string{"order_id", "sku", "warranty", "showroom", "salesperson", "emi_months", "serial_no"},
	},
}

// Exact amounts (in paisa) that are awkward for binary floating point or
// rendering; sprinkled over each business's payments and links.
var nastyPaisa = []int64{1999, 29, 10010, 1, 115, 435, 820, 9999999999, 125000, 125050, 33, 1005}

var (
	firstNames = []string{
		"Rahim", "Karim", "Fatema", "Ayesha", "Tanvir", "Nusrat", "Sadia", "Arif",
		"Farhana", "Imran", "Mahmud", "Shirin", "Rafiq", "Jannat", "Sabbir", "Tahmina",
		"Habib", "Rumana", "Shakib", "Moushumi", "Anika", "Zubair", "Lamia", "Nafis",
	}
	lastNames = []string{
		"Ahmed", "Hossain", "Rahman", "Islam", "Chowdhury", "Khan", "Akter", "Uddin",
		"Siddique", "Begum", "Sarkar", "Das", "Roy", "Talukder", "Mia", "Karim",
	}
	// Names that exercise JSON escaping and non-ASCII text.
	oddNames = []string{
		`Nazrul "Bulbul" Islam`, "Zahir O'Neil Rahman", "রবীন্দ্রনাথ ঠাকুর",
		`Back\Slash & <Sons>`, "Ñandú Café — Ltd.", "Mim 🙂 Akter",
	}
	areas = []string{
		"Dhanmondi", "Gulshan", "Banani", "Mirpur", "Uttara", "Mohammadpur",
		"Agrabad", "Zindabazar", "Shaheb Bazar", "Boyra", "Kazir Dewri",
	}
	cities      = []string{"Dhaka", "Chattogram", "Sylhet", "Rajshahi", "Khulna", "Barishal"}
	emailHosts  = []string{"example.com", "mail.example.net", "example.org"}
	metaValues  = []string{"A-12", "walk-in", "online", "Gulshan branch", "ফেরত নয়", "2 pcs", "gift wrap, please", "\"urgent\"", "x&y", "0"}
	linkDescrip = []string{
		"Pay securely with bKash, Nagad, Rocket or card.", "Advance payment; balance due on delivery.",
		"Includes VAT. Non-refundable.", "মূল্য পরিশোধের লিংক", "Line one\nLine two",
	}
)

const (
	hexDigits   = "0123456789abcdef"
	lowerAlnum  = "abcdefghijklmnopqrstuvwxyz0123456789"
	upperAlnum  = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	mixedAlnum  = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	credSeed    = 0x5eed_c0de_2026
	rngStream   = 0x9e3779b97f4a7c15
	dayMillis   = int64(24 * time.Hour / time.Millisecond)
	spreadDays  = 200
	minuteMilli = int64(time.Minute / time.Millisecond)
)

func newRand(seed int64) *rand.Rand {
	return rand.New(rand.NewPCG(uint64(seed), rngStream))
}

type generator struct {
	rng  *rand.Rand
	used map[string]bool
}

func (g *generator) str(alphabet string, n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = alphabet[g.rng.IntN(len(alphabet))]
	}
	return string(b)
}

// unique returns prefix+random string not used before by any business.
func (g *generator) unique(prefix, alphabet string, n int) string {
	for {
		s := prefix + g.str(alphabet, n)
		if !g.used[s] {
			g.used[s] = true
			return s
		}
	}
}

func (g *generator) pick(list []string) string { return list[g.rng.IntN(len(list))] }

func formatTime(ms int64) string {
	return time.UnixMilli(ms).UTC().Format(TimeLayout)
}

// paisaFixed renders paisa as a decimal with exactly two fractional digits.
func paisaFixed(p int64) string { return fmt.Sprintf("%d.%02d", p/100, p%100) }

// renderAmount renders paisa with two fractional digits or, at random, without
// trailing zeros.
func (g *generator) renderAmount(p int64) string {
	if g.rng.IntN(2) == 0 {
		return paisaFixed(p)
	}
	return strings.TrimSuffix(strings.TrimRight(paisaFixed(p), "0"), ".")
}

// amount draws a random amount in paisa for a business.
func (g *generator) amount(spec bizSpec) int64 {
	taka := int64(spec.minTaka + g.rng.IntN(spec.maxTaka-spec.minTaka+1))
	switch r := g.rng.IntN(10); {
	case r < 5:
		return taka * 100
	case r < 7:
		return taka*100 + int64(g.rng.IntN(10))*10
	}
	return taka*100 + int64(g.rng.IntN(100))
}

// customer draws customer i, its address "street, area, city".
func (g *generator) customer(i int) Customer {
	first, last := g.pick(firstNames), g.pick(lastNames)
	c := Customer{
		Name:    first + " " + last,
		Email:   strings.ToLower(first+"."+last) + strconv.Itoa(i+1) + "@" + g.pick(emailHosts),
		Phone:   "+8801" + strconv.Itoa(3+g.rng.IntN(7)) + g.str("0123456789", 8),
		Address: "House " + strconv.Itoa(1+g.rng.IntN(120)) + ", Road " + strconv.Itoa(1+g.rng.IntN(30)) + ", " + g.pick(areas) + ", " + g.pick(cities),
	}
	if i%9 == 4 {
		c.Name = oddNames[(i/9)%len(oddNames)]
	}
	return c
}

func (g *generator) status(i int) string {
	all := Statuses()
	if i < len(all) {
		return all[i] // every status appears in every business
	}
	switch r := g.rng.IntN(100); {
	case r < 55:
		return StatusSucceeded
	case r < 70:
		return StatusPending
	case r < 82:
		return StatusFailed
	case r < 92:
		return StatusCancelled
	default:
		return StatusRefunded
	}
}

func (g *generator) transactionID(method string) string {
	switch method {
	case "bkash":
		return "TRX" + g.str(upperAlnum, 10)
	case "nagad":
		return "NG" + g.str("0123456789", 12)
	case "rocket":
		return "RKT" + g.str(upperAlnum, 9)
	case "sslcommerz":
		return "SSLCZ" + g.str("0123456789", 10) + g.str(lowerAlnum, 4)
	default:
		return "CRD-" + g.str(upperAlnum, 12)
	}
}

// generate makes each business's records; New indexes and renders them.
func generate(seed int64, payURL string) []*business {
	// Credentials do not depend on the data seed, so the demo credentials
	// stay the same whatever seed is used.
	cg := &generator{rng: newRand(credSeed), used: map[string]bool{}}

	g := &generator{rng: newRand(seed), used: map[string]bool{}}
	out := make([]*business, 0, len(bizSpecs))
	for _, spec := range bizSpecs {
		b := &business{info: Business{
			Name:      spec.name,
			APIKey:    cg.unique("ak_test_", mixedAlnum, 24),
			APISecret: cg.unique("sk_test_", mixedAlnum, 32),
		}}
		b.payments = g.payments(spec)
		b.links = g.links(spec, payURL)
		b.sessions = g.sessions(spec, b.payments)
		out = append(out, b)
	}
	return out
}

func (g *generator) payments(spec bizSpec) []Payment {
	n := spec.payments
	people := make([]Customer, 60)
	for i := range people {
		people[i] = g.customer(i)
	}
	nastyAt := map[int]int64{}
	for k, idx := range g.rng.Perm(n)[:min(n, len(nastyPaisa))] {
		nastyAt[idx] = nastyPaisa[k]
	}
	ps := make([]Payment, n)
	var prevCreated int64
	for i := range ps {
		p := &ps[i]
		p.ID = g.unique("pay_prod_", hexDigits, 32)
		p.Status = g.status(i)
		if v, ok := nastyAt[i]; ok {
			p.AmountPaisa = v
		} else {
			p.AmountPaisa = g.amount(spec)
		}
		p.AmountText = json.Number(g.renderAmount(p.AmountPaisa))
		p.Currency = "BDT"
		if g.rng.IntN(10) < 7 {
			p.PaymentMethod = g.pick(WalletMethods)
		} else {
			p.PaymentMethod = g.pick(GatewayMethods)
		}
		switch p.Status {
		case StatusSucceeded, StatusRefunded:
			if g.rng.IntN(12) != 0 {
				p.TransactionID = g.transactionID(p.PaymentMethod)
			}
		case StatusFailed:
			if g.rng.IntN(2) == 0 {
				p.TransactionID = g.transactionID(p.PaymentMethod)
			}
		}
		p.Customer = people[g.rng.IntN(len(people))]

		created := ReferenceTime.UnixMilli() - minuteMilli*30 - g.rng.Int64N(spreadDays*dayMillis)
		if g.rng.IntN(8) == 0 {
			created -= created % 1000 // whole second: ".000"
		}
		if i > 0 && g.rng.IntN(20) == 0 {
			created = prevCreated // same created_at: exercises the id tie-break
		}
		prevCreated = created
		updated := created
		switch p.Status {
		case StatusSucceeded, StatusFailed, StatusCancelled:
			updated += 500 + g.rng.Int64N(10*minuteMilli)
		case StatusRefunded:
			updated += dayMillis + g.rng.Int64N(10*dayMillis)
		}
		updated = min(updated, ReferenceTime.UnixMilli()-1000)
		p.CreatedAt, p.UpdatedAt = formatTime(created), formatTime(updated)
	}
	slices.SortFunc(ps, comparePayments)
	return ps
}

// comparePayments orders payments as the list endpoint does: created_at
// descending, then id descending. The timestamp format sorts lexically.
func comparePayments(a, b Payment) int {
	return cmp.Or(strings.Compare(b.CreatedAt, a.CreatedAt), strings.Compare(b.ID, a.ID))
}

func slugify(title string) string {
	var sb strings.Builder
	dash := false
	for _, r := range strings.ToLower(title) {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			sb.WriteRune(r)
			dash = false
		} else if !dash && sb.Len() > 0 {
			sb.WriteByte('-')
			dash = true
		}
	}
	return strings.TrimSuffix(sb.String(), "-")
}

func (g *generator) links(spec bizSpec, payURL string) []PaymentLink {
	titles := slices.Clone(spec.titles)
	g.rng.Shuffle(len(titles), func(i, j int) { titles[i], titles[j] = titles[j], titles[i] })
	ls := make([]PaymentLink, spec.links)
	for i := range ls {
		l := &ls[i]
		l.ID = g.unique("pl_", mixedAlnum, 10)
		l.Title = titles[i%len(titles)]
		l.Slug = g.unique(slugify(l.Title)+"-", lowerAlnum, 5)
		l.URL = payURL + "/" + l.Slug
		if i%4 != 3 {
			l.Description = g.pick(linkDescrip)
		}
		if i < len(nastyPaisa)/2 && i%2 == 0 {
			l.AmountPaisa = nastyPaisa[(i+len(nastyPaisa)/2)%len(nastyPaisa)]
		} else {
			l.AmountPaisa = g.amount(spec)
		}
		l.AmountText = json.Number(g.renderAmount(l.AmountPaisa))
		l.Currency = "BDT"
		l.IsReusable = i%3 != 2
		created := ReferenceTime.UnixMilli() - 2*dayMillis - g.rng.Int64N(spreadDays*dayMillis)
		if i%5 == 1 {
			created -= created % 1000
		}
		updated := created + g.rng.Int64N(dayMillis)
		l.CreatedAt, l.UpdatedAt = formatTime(created), formatTime(updated)
		switch {
		case !l.IsReusable:
			l.MaxUses, l.CurrentUses = new(1), g.rng.IntN(2)
		case i%2 == 0:
			m := 10 + g.rng.IntN(490)
			l.MaxUses, l.CurrentUses = &m, g.rng.IntN(m+1)
		default:
			l.CurrentUses = g.rng.IntN(800)
		}
		expired := false
		switch i % 3 { // 0: no expiry
		case 1:
			l.ExpiresAt = new(formatTime(ReferenceTime.UnixMilli() + int64(1+g.rng.IntN(60))*dayMillis))
		case 2:
			l.ExpiresAt = new(formatTime(created + int64(1+g.rng.IntN(30))*dayMillis))
			expired = *l.ExpiresAt < formatTime(ReferenceTime.UnixMilli())
		}
		l.IsActive = !expired && i%7 != 6 && (l.MaxUses == nil || l.CurrentUses < *l.MaxUses)
		l.SuccessURL = "https://" + spec.domain + "/thank-you?link=" + l.Slug
	}
	return ls
}

func (g *generator) sessions(spec bizSpec, pays []Payment) []CheckoutSession {
	idx := g.rng.Perm(len(pays))[:min(spec.sessions, len(pays))]
	ss := make([]CheckoutSession, len(idx))
	for i, pi := range idx {
		p := pays[pi]
		s := &ss[i]
		s.ID = g.unique("pay_prod_", hexDigits, 32)
		s.PaymentID = p.ID
		s.Reference = g.unique("", upperAlnum, 10)
		s.setStatus(p.Status)
		s.AmountPaisa, s.SubtotalPaisa = p.AmountPaisa, p.AmountPaisa
		if i%3 == 1 && p.AmountPaisa > 10000 {
			// amount includes a delivery/service charge on top of the subtotal
			s.SubtotalPaisa = p.AmountPaisa - int64(50+g.rng.IntN(100))*100
		}
		s.Amount, s.Subtotal = paisaFixed(s.AmountPaisa), paisaFixed(s.SubtotalPaisa)
		s.Currency = "BDT"
		c := p.Customer
		at := strings.LastIndex(c.Address, ", ") // the address is "street, area, city"
		s.Customer = SessionCustomer{Name: c.Name, Email: c.Email, Phone: c.Phone, Address: c.Address[:at], City: c.Address[at+2:]}
		s.SuccessURL = "https://" + spec.domain + "/checkout/success?ref=" + s.Reference + "&src=sandbox"
		s.CancelURL = "https://" + spec.domain + "/checkout/cancel?ref=" + s.Reference
		s.TransactionID, s.PaymentMethod = p.TransactionID, p.PaymentMethod
		s.MetaData = Meta{}
		if i%4 != 2 {
			keys := slices.Clone(spec.metaKeys)
			g.rng.Shuffle(len(keys), func(a, b int) { keys[a], keys[b] = keys[b], keys[a] })
			k := 2 + g.rng.IntN(4)
			if slices.IsSorted(keys[:k]) {
				keys[0], keys[1] = keys[1], keys[0] // insertion order, not sorted
			}
			for _, key := range keys[:k] {
				v := g.pick(metaValues)
				if key == "order_id" || key == "invoice_no" || key == "serial_no" {
					v = strings.ToUpper(key[:2]) + "-" + g.str("0123456789", 6)
				}
				s.MetaData = append(s.MetaData, MetaPair{Key: key, Value: v})
			}
		}
		created, _ := time.Parse(TimeLayout, p.CreatedAt)
		s.CreatedAt = formatTime(created.UnixMilli() - 1000 - g.rng.Int64N(5*minuteMilli))
		s.UpdatedAt = p.UpdatedAt
	}
	return ss
}

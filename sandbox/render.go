package sandbox

import (
	"bytes"
	"encoding/json"
)

// MarshalJSON renders m as one object, keeping its order.
func (m Meta) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, kv := range m {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(marshal(kv.Key))
		b.WriteByte(':')
		b.Write(marshal(kv.Value))
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// marshal renders v as compact JSON without HTML escaping; it panics on error (the data is ours).
func marshal(v any) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic("sandbox: render: " + err.Error())
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

// putPayment renders payment i's retrieve form and its list form.
func (b *business) putPayment(i int) {
	p := b.payments[i]
	b.detailJSON[i] = marshal(p)
	p.Customer.Address = "" // omitted from the list; every generated address is non-empty
	b.listJSON[i] = marshal(p)
}

// putSession renders cs, found by its id and by its reference.
func (b *business) putSession(cs CheckoutSession) {
	body := marshal(struct {
		Data CheckoutSession `json:"data"`
	}{cs})
	b.sessionJSON[cs.ID], b.sessionJSON[cs.Reference] = body, body
}

func errorBody(msg string) []byte {
	return marshal(map[string]string{"error": msg})
}

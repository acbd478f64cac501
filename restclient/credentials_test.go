package restclient

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"
)

func TestCredentialsFrom(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		ctx  context.Context
		ok   bool
	}{
		{"none", context.Background(), false},
		{"both", WithCredentials(context.Background(), Credentials{"ak_test_1", "sk_test_2"}), true},
		{"no secret", WithCredentials(context.Background(), Credentials{APIKey: "ak_test_1"}), false},
		{"no key", WithCredentials(context.Background(), Credentials{APISecret: "sk_test_2"}), false},
	}
	for _, tt := range tests {
		if _, ok := CredentialsFrom(tt.ctx); ok != tt.ok {
			t.Errorf("%s: ok = %v; want %v", tt.name, ok, tt.ok)
		}
	}
	c, _ := CredentialsFrom(WithCredentials(context.Background(), Credentials{"ak_test_1", "sk_test_2"}))
	if c.APIKey != "ak_test_1" || c.APISecret != "sk_test_2" {
		t.Errorf("got %q/%q", c.APIKey, c.APISecret)
	}
}

func TestCredentialsNeverPrintSecret(t *testing.T) {
	t.Parallel()
	const secret = "sk_test_TOPSECRETvalue123"
	creds := []Credentials{
		{APIKey: "ak_test_abcdef123456", APISecret: secret},
		{APIKey: "ak_prod_abcdef123456", APISecret: secret},
		{APIKey: "weird-key-without-prefix", APISecret: secret},
		{APIKey: "", APISecret: secret},
		{APIKey: secret, APISecret: secret}, // even a key that looks like the secret shows only a prefix
	}
	for _, c := range creds {
		var outputs []string
		for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%X", "%d", "%T %v", "%10.3v"} {
			outputs = append(outputs, fmt.Sprintf(verb, c), fmt.Sprintf(verb, &c))
		}
		outputs = append(outputs, c.String(), c.GoString(), fmt.Sprint(c), fmt.Sprintln(c),
			fmt.Sprintf("%v", struct{ C Credentials }{c}), fmt.Sprintf("%+v", []Credentials{c}))
		var buf bytes.Buffer
		slog.New(slog.NewTextHandler(&buf, nil)).Info("x", "creds", c, "ptr", &c)
		slog.New(slog.NewJSONHandler(&buf, nil)).Info("x", "creds", c)
		outputs = append(outputs, buf.String())
		j, _ := json.Marshal(struct{ C Credentials }{c})
		outputs = append(outputs, string(j))
		for _, out := range outputs {
			if strings.Contains(out, "TOPSECRET") || strings.Contains(out, "abcdef123456") {
				t.Errorf("output leaks a credential: %s", out)
			}
		}
	}
	if got := (Credentials{APIKey: "ak_test_abc", APISecret: "s"}).String(); got != "ak_test_…" {
		t.Errorf("String() = %q; want %q", got, "ak_test_…")
	}
	if got := (Credentials{APIKey: "weird", APISecret: "s"}).String(); got != "[redacted]" {
		t.Errorf("String() = %q; want [redacted]", got)
	}
}

func TestScrub(t *testing.T) {
	t.Parallel()
	c := Credentials{APIKey: "ak_test_k1", APISecret: "sk_test_s1"}
	got := c.scrub("bad key ak_test_k1 with secret sk_test_s1")
	if strings.Contains(got, "k1") || strings.Contains(got, "s1") {
		t.Errorf("scrub left a credential: %q", got)
	}
}

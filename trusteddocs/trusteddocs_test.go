package trusteddocs

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

const (
	listedQuery   = "query Listed { payments(first: 1) { nodes { id } } }"
	listedID      = "listed-1"
	unlistedQuery = "query Unlisted { payment(id: \"pay_x\") { id } }"
	otherQuery    = "query Other { paymentLink(id: \"pl_x\") { url } }"
)

// writeFile writes content into a new file under t's temporary folder.
func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// apollo returns an Apollo manifest of the given id -> body pairs.
func apollo(t *testing.T, docs ...string) string {
	t.Helper()
	m := map[string]any{"format": FormatApollo, "version": 1}
	var ops []map[string]string
	for i := 0; i+1 < len(docs); i += 2 {
		ops = append(ops, map[string]string{"id": docs[i], "body": docs[i+1], "name": fmt.Sprintf("Op%d", i/2), "type": "query"})
	}
	m["operations"] = ops
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func newStore(t *testing.T, mode Mode, manifest string, introspection bool) *Store {
	t.Helper()
	s, err := New(Config{Mode: mode, Path: writeFile(t, "manifest.json", manifest), Introspection: introspection})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestLoadManifest(t *testing.T) {
	t.Parallel()
	good := []struct {
		name, content, format string
		ops                   int
	}{
		{"apollo", apollo(t, listedID, listedQuery, "other-1", otherQuery), FormatApollo, 2},
		{"apollo, the same id twice with the same body", apollo(t, listedID, listedQuery, listedID, listedQuery), FormatApollo, 1},
		{"apollo, extra members ignored", `{"format":"apollo-persisted-query-manifest","version":1,"generator":"x","operations":[{"id":"a","body":"{ __typename }","name":"A","type":"query","clientName":"ios"}]}`, FormatApollo, 1},
		{"relay", fmt.Sprintf(`{"%s": %q, "b7c3": %q}`, listedID, listedQuery, otherQuery), FormatRelay, 2},
	}
	for _, tc := range good {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := newStore(t, Enforce, tc.content, false)
			info := s.Info()
			if info.Format != tc.format || info.Operations != tc.ops || len(info.SHA256) != 64 {
				t.Fatalf("Info %+v; want format %s, %d operations", info, tc.format, tc.ops)
			}
		})
	}

	bad := []struct{ name, content, want string }{
		{"not JSON", "{", "not a JSON object"},
		{"a JSON array", `[{"id":"a"}]`, "not a JSON object"},
		{"another format", `{"format":"something-else","version":1,"operations":[]}`, "want"},
		{"apollo version 2", `{"format":"apollo-persisted-query-manifest","version":2,"operations":[{"id":"a","body":"{ a }"}]}`, "version 2"},
		{"apollo operations not a list", `{"format":"apollo-persisted-query-manifest","version":1,"operations":{}}`, "apollo manifest"},
		{"apollo with no operations", apollo(t), "lists no operations"},
		{"relay with no operations", `{}`, "lists no operations"},
		{"an empty body", apollo(t, "a", " "), "required"},
		{"an empty id", apollo(t, "", listedQuery), "required"},
		{"a body that is not GraphQL", apollo(t, "a", "query { payments("), `id "a"`},
		{"one id, two bodies", apollo(t, "a", listedQuery, "a", otherQuery), "two different documents"},
		{"an unknown operation type", `{"format":"apollo-persisted-query-manifest","version":1,"operations":[{"id":"a","body":"{ a }","type":"select"}]}`, "type"},
		{"relay value not a string", `{"a": 1}`, "not a string"},
	}
	for _, tc := range bad {
		t.Run("refused: "+tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := New(Config{Mode: Enforce, Path: writeFile(t, "m.json", tc.content)})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v; want one containing %q", err, tc.want)
			}
		})
	}

	t.Run("refused: a missing file", func(t *testing.T) {
		if _, err := New(Config{Mode: Allow, Path: filepath.Join(t.TempDir(), "none.json")}); err == nil {
			t.Fatal("accepted")
		}
	})
	t.Run("refused: a file over the size limit, unread", func(t *testing.T) {
		p := filepath.Join(t.TempDir(), "big.json")
		if err := os.WriteFile(p, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Truncate(p, MaxManifestBytes+1); err != nil { // sparse: nothing written
			t.Fatal(err)
		}
		_, err := New(Config{Mode: Allow, Path: p})
		if err == nil || !strings.Contains(err.Error(), "larger than") {
			t.Fatalf("error %v", err)
		}
	})
	t.Run("refused: allow or enforce without a path", func(t *testing.T) {
		for _, m := range []Mode{Allow, Enforce} {
			if _, err := New(Config{Mode: m}); err == nil {
				t.Fatalf("%s without a path accepted", m)
			}
		}
	})
	t.Run("refused: an unknown mode", func(t *testing.T) {
		if _, err := New(Config{Mode: "strict"}); err == nil {
			t.Fatal("accepted")
		}
	})
	t.Run("off checks a manifest it is given, and decides nothing", func(t *testing.T) {
		if _, err := New(Config{Path: writeFile(t, "m.json", "{")}); err == nil {
			t.Fatal("a bad manifest accepted in mode off")
		}
		s := newStore(t, Off, apollo(t, listedID, listedQuery), false)
		if d := s.Decide(Request{Query: unlistedQuery}); d.Action != ServeSent || d.Outcome != OutcomeOff {
			t.Fatalf("%+v", d)
		}
		var zero Store
		if d := zero.Decide(Request{DocumentID: listedID}); d.Action != ServeSent || d.Outcome != OutcomeOff {
			t.Fatalf("zero Store: %+v", d)
		}
	})
}

func TestParseMode(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]Mode{"": Off, "off": Off, "ALLOW": Allow, " enforce ": Enforce} {
		t.Run(fmt.Sprintf("%q", in), func(t *testing.T) {
			t.Parallel()
			if got, err := ParseMode(in); err != nil || got != want {
				t.Fatalf("%q: %q, %v", in, got, err)
			}
		})
	}
	if _, err := ParseMode("on"); err == nil {
		t.Fatal(`"on" accepted`)
	}
}

func TestLookup(t *testing.T) {
	t.Parallel()
	apolloStore := newStore(t, Enforce, apollo(t, listedID, listedQuery, hashOf(otherQuery), otherQuery), false)
	relayStore := newStore(t, Enforce, fmt.Sprintf(`{"%s": %q}`, "3be4abb81fa595e25eb725b2c6a87508", listedQuery), false)
	cases := []struct {
		name  string
		store *Store
		req   Request
		want  string // the text served, "" for a refusal
	}{
		{"apollo by APQ hash", apolloStore, Request{SHA256Hash: hashOf(listedQuery)}, listedQuery},
		{"apollo by documentId, plain id", apolloStore, Request{DocumentID: listedID}, listedQuery},
		{"apollo by documentId, sha256 form", apolloStore, Request{DocumentID: "sha256:" + hashOf(listedQuery)}, listedQuery},
		{"apollo by documentId, an id that is the hash", apolloStore, Request{DocumentID: hashOf(otherQuery)}, otherQuery},
		{"relay by documentId", relayStore, Request{DocumentID: "3be4abb81fa595e25eb725b2c6a87508"}, listedQuery},
		{"relay by APQ hash", relayStore, Request{SHA256Hash: hashOf(listedQuery)}, listedQuery},
		{"relay by documentId, sha256 form", relayStore, Request{DocumentID: "sha256:" + hashOf(listedQuery)}, listedQuery},
		{"unknown id", apolloStore, Request{DocumentID: "nope"}, ""},
		{"unknown sha256 id", apolloStore, Request{DocumentID: "sha256:" + hashOf(unlistedQuery)}, ""},
		{"a hash in upper case is not the hash", apolloStore, Request{SHA256Hash: strings.ToUpper(hashOf(listedQuery))}, ""},
		{"an id is not a hash", apolloStore, Request{SHA256Hash: listedID}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			d := tc.store.Decide(tc.req)
			if tc.want == "" {
				if d.Action != Refuse {
					t.Fatalf("%+v; want a refusal", d)
				}
				return
			}
			if d.Action != ServeListed || d.Query != tc.want {
				t.Fatalf("%+v; want %q served", d, tc.want)
			}
		})
	}
}

const introspectionQuery = "query IntrospectionQuery { __schema { queryType { name } types { name fields { name } } } }"

func TestDecide(t *testing.T) {
	t.Parallel()
	manifest := apollo(t, listedID, listedQuery)
	stores := map[string]*Store{
		"off":                      newStore(t, Off, manifest, false),
		"allow":                    newStore(t, Allow, manifest, false),
		"enforce":                  newStore(t, Enforce, manifest, false),
		"enforce+introspection":    newStore(t, Enforce, manifest, true),
		"allow, introspection set": newStore(t, Allow, manifest, true),
	}
	hl, hu := hashOf(listedQuery), hashOf(unlistedQuery)
	type want struct {
		action  Action
		code    string
		outcome string
		hash    string
	}
	served := want{ServeListed, "", OutcomeListed, hl}
	cases := []struct {
		store string
		name  string
		req   Request
		want  want
	}{
		{"off", "an unlisted query", Request{Query: unlistedQuery}, want{ServeSent, "", OutcomeOff, ""}},
		{"off", "an unknown documentId", Request{DocumentID: "nope"}, want{ServeSent, "", OutcomeOff, ""}},

		{"allow", "a listed query (POST or GET)", Request{Query: listedQuery}, served},
		{"allow", "an unlisted query is served and reported by hash", Request{Query: unlistedQuery}, want{ServeSent, "", OutcomeUnlisted, hu}},
		{"allow", "a listed APQ hash", Request{SHA256Hash: hl}, served},
		{"allow", "an unlisted APQ hash goes to the APQ cache", Request{SHA256Hash: hu}, want{ServeSent, "", OutcomeUnlisted, hu}},
		{"allow", "an APQ registration of an unlisted query", Request{Query: unlistedQuery, SHA256Hash: hu}, want{ServeSent, "", OutcomeUnlisted, hu}},
		{"allow", "an APQ registration of a listed query", Request{Query: listedQuery, SHA256Hash: hl}, served},
		{"allow", "a listed documentId", Request{DocumentID: listedID}, want{ServeListed, "", OutcomeListed, ""}},
		{"allow", "an unknown documentId alone", Request{DocumentID: "nope"}, want{Refuse, CodeNotFound, OutcomeUnknownID, ""}},
		{"allow", "an unknown documentId with a query", Request{DocumentID: "nope", Query: unlistedQuery}, want{ServeSent, "", OutcomeUnlisted, hu}},
		{"allow", "introspection is any query", Request{Query: introspectionQuery}, want{ServeSent, "", OutcomeUnlisted, hashOf(introspectionQuery)}},
		{"allow, introspection set", "introspection is any query", Request{Query: introspectionQuery}, want{ServeSent, "", OutcomeUnlisted, hashOf(introspectionQuery)}},

		{"enforce", "a listed query", Request{Query: listedQuery}, served},
		{"enforce", "an unlisted query", Request{Query: unlistedQuery}, want{Refuse, CodeNotListed, OutcomeNotListed, hu}},
		{"enforce", "the listed text with one more space", Request{Query: listedQuery + " "}, want{Refuse, CodeNotListed, OutcomeNotListed, hashOf(listedQuery + " ")}},
		{"enforce", "a listed APQ hash", Request{SHA256Hash: hl}, served},
		{"enforce", "an unlisted APQ hash", Request{SHA256Hash: hu}, want{Refuse, CodeNotListed, OutcomeNotListed, hu}},
		{"enforce", "an APQ registration", Request{Query: unlistedQuery, SHA256Hash: hu}, want{Refuse, CodeNotListed, OutcomeAPQRegistrationRefused, hu}},
		{"enforce", "an APQ registration claiming a listed hash", Request{Query: unlistedQuery, SHA256Hash: hl}, want{Refuse, CodeNotListed, OutcomeAPQRegistrationRefused, hu}},
		{"enforce", "an APQ registration of a listed query", Request{Query: listedQuery, SHA256Hash: hl}, served},
		{"enforce", "a listed documentId", Request{DocumentID: listedID}, want{ServeListed, "", OutcomeListed, ""}},
		{"enforce", "a listed documentId, sha256 form", Request{DocumentID: "sha256:" + hl}, want{ServeListed, "", OutcomeListed, ""}},
		{"enforce", "an unknown documentId", Request{DocumentID: "nope", Query: listedQuery}, want{Refuse, CodeNotListed, OutcomeNotListed, ""}},
		{"enforce", "introspection, not allowed", Request{Query: introspectionQuery}, want{Refuse, CodeNotListed, OutcomeNotListed, hashOf(introspectionQuery)}},
		{"enforce", "nothing sent", Request{}, want{Refuse, CodeNotListed, OutcomeNotListed, ""}},

		{"enforce+introspection", "__schema", Request{Query: introspectionQuery}, want{ServeSent, "", OutcomeIntrospection, hashOf(introspectionQuery)}},
		{"enforce+introspection", "__type and __typename through fragments",
			Request{Query: `query { ...Meta ... on Query { __type(name: "Payment") { name } } } fragment Meta on Query { __typename t: __typename }`},
			want{ServeSent, "", OutcomeIntrospection, hashOf(`query { ...Meta ... on Query { __type(name: "Payment") { name } } } fragment Meta on Query { __typename t: __typename }`)}},
		{"enforce+introspection", "introspection mixed with data", Request{Query: "{ __typename payments(first: 1) { nodes { id } } }"},
			want{Refuse, CodeNotListed, OutcomeNotListed, hashOf("{ __typename payments(first: 1) { nodes { id } } }")}},
		{"enforce+introspection", "data hidden in a fragment", Request{Query: "{ ...F } fragment F on Query { payment(id: \"pay_x\") { id } }"},
			want{Refuse, CodeNotListed, OutcomeNotListed, hashOf("{ ...F } fragment F on Query { payment(id: \"pay_x\") { id } }")}},
		{"enforce+introspection", "a second operation with data", Request{Query: "query A { __typename } query B { payment(id: \"x\") { id } }"},
			want{Refuse, CodeNotListed, OutcomeNotListed, hashOf("query A { __typename } query B { payment(id: \"x\") { id } }")}},
		{"enforce+introspection", "a mutation of __typename", Request{Query: "mutation { __typename }"}, want{Refuse, CodeNotListed, OutcomeNotListed, hashOf("mutation { __typename }")}},
		{"enforce+introspection", "text that does not parse", Request{Query: "{ __schema "}, want{Refuse, CodeNotListed, OutcomeNotListed, hashOf("{ __schema ")}},
		{"enforce+introspection", "an unlisted query", Request{Query: unlistedQuery}, want{Refuse, CodeNotListed, OutcomeNotListed, hu}},
	}
	for _, tc := range cases {
		t.Run(tc.store+"/"+tc.name, func(t *testing.T) {
			t.Parallel()
			d := stores[tc.store].Decide(tc.req)
			got := want{d.Action, d.Code, d.Outcome, d.Hash}
			if got != tc.want {
				t.Fatalf("got %+v; want %+v", got, tc.want)
			}
			switch d.Action {
			case ServeListed:
				if d.Query != listedQuery {
					t.Fatalf("served %q", d.Query)
				}
			case Refuse:
				if d.Message == "" || strings.Contains(d.Message, tc.req.Query) && tc.req.Query != "" {
					t.Fatalf("message %q: want one that does not echo the query", d.Message)
				}
			case ServeSent:
				if d.Query != "" {
					t.Fatalf("ServeSent with a query %q", d.Query)
				}
			}
		})
	}
}

// TestReloadAtomic: requests decided while the manifest is replaced, again
// and again, and sometimes by a bad file, always see a whole manifest.
func TestReloadAtomic(t *testing.T) {
	t.Parallel()
	v1 := apollo(t, listedID, listedQuery)
	v2 := apollo(t, listedID, listedQuery, "other-1", otherQuery)
	path := writeFile(t, "manifest.json", v1)
	s, err := New(Config{Mode: Enforce, Path: path})
	if err != nil {
		t.Fatal(err)
	}

	t.Run("a bad file keeps the old set", func(t *testing.T) {
		for _, bad := range []string{"", "{", v2[:len(v2)/2], apollo(t)} {
			if err := os.WriteFile(path, []byte(bad), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := s.Reload(); err == nil {
				t.Fatalf("Reload of %q succeeded", bad)
			}
			if d := s.Decide(Request{Query: listedQuery}); d.Action != ServeListed {
				t.Fatalf("after a bad reload: %+v", d)
			}
		}
	})

	t.Run("a good file replaces the set", func(t *testing.T) {
		if err := os.WriteFile(path, []byte(v2), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := s.Reload(); err != nil {
			t.Fatal(err)
		}
		if d := s.Decide(Request{DocumentID: "other-1"}); d.Action != ServeListed || d.Query != otherQuery {
			t.Fatalf("%+v", d)
		}
	})

	t.Run("concurrent requests never see an empty or partial set", func(t *testing.T) {
		var stop atomic.Bool
		var decided, sawOther, sawNoOther atomic.Int64
		var wg sync.WaitGroup
		errs := make(chan string, 2)
		for range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for !stop.Load() {
					if d := s.Decide(Request{DocumentID: listedID}); d.Action != ServeListed || d.Query != listedQuery {
						errs <- fmt.Sprintf("a listed document was not served during reloads: %+v", d)
						return
					}
					if d := s.Decide(Request{Query: otherQuery}); d.Action == ServeListed {
						sawOther.Add(1)
					} else {
						sawNoOther.Add(1)
					}
					decided.Add(1)
					runtime.Gosched() // let the reloads run on a 2-core machine
				}
			}()
		}
		for i := range 100 {
			content := []string{v1, v2, "{", v2[:len(v2)/3]}[i%4]
			if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
				t.Fatal(err)
			}
			err := s.Reload()
			if (i%4 < 2) != (err == nil) {
				t.Fatalf("reload %d: %v", i, err)
			}
		}
		stop.Store(true)
		wg.Wait()
		close(errs)
		for e := range errs {
			t.Fatal(e)
		}
		t.Logf("%d decisions during 100 reloads (other listed in %d, not in %d)", decided.Load(), sawOther.Load(), sawNoOther.Load())
		if decided.Load() == 0 {
			t.Fatal("no decision ran during the reloads")
		}
	})

	t.Run("concurrent reloads", func(t *testing.T) {
		if err := os.WriteFile(path, []byte(v2), 0o600); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				if err := s.Reload(); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		if info := s.Info(); info.Operations != 2 {
			t.Fatalf("%+v", info)
		}
	})
}

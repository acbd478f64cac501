package main

import (
	"strings"
	"testing"
)

// TestGqlgenFence: gen runs only with the gqlgen it was verified against
// (the one go.mod requires, as the build sees it) and refuses any other,
// saying what to re-verify.
func TestGqlgenFence(t *testing.T) {
	t.Parallel()
	if got := gqlgenVersion(); got != verifiedGqlgen {
		t.Errorf("the build's gqlgen is %s, graph/gen verified %s: re-verify (see reverify) and move verifiedGqlgen", got, verifiedGqlgen)
	}
	for _, tc := range []struct {
		name, version string
		refused       bool
	}{
		{"the verified version", verifiedGqlgen, false},
		{"the one before", "v0.17.94", true},
		{"a later one", "v0.17.99", true},
		{"a pseudo-version of it", verifiedGqlgen + "-0.20260101000000-abcdef123456", true},
		{"a replacement", "../gqlgen@", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := checkGqlgen(tc.version)
			if (err != nil) != tc.refused {
				t.Fatalf("checkGqlgen(%q) = %v, want refused %v", tc.version, err, tc.refused)
			}
			if err == nil {
				return
			}
			for _, want := range []string{tc.version, verifiedGqlgen, "MarshalSliceConcurrently", "graph/fast.go", "graph/lists.go"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("refusal does not name %q:\n%v", want, err)
				}
			}
		})
	}
}

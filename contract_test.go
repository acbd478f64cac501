package main

// The public contract in the repository (docs/contract.md) is the shared
// one, word for word, and schema.graphqls is a superset of its SDL: every
// type, field, argument (with its default), interface and enum value it
// names, with the same type and nullability.

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/vektah/gqlparser/v2"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/parser"
)

const contractCopy = "docs/contract.md"

// sharedContract is where the contract's owners keep it: beside the
// repository's checkout (../shared/contract.md). A fresh clone elsewhere
// has none, and the copy is then checked only against the schema.
var sharedContract = filepath.Join("..", "shared", "contract.md")

// TestContractCopyIsTheSharedOne: docs/contract.md equals
// ../shared/contract.md, when that file is present.
func TestContractCopyIsTheSharedOne(t *testing.T) {
	shared, err := os.ReadFile(sharedContract)
	if os.IsNotExist(err) {
		t.Skipf("%s is not present beside this checkout: nothing to compare the copy with", sharedContract)
	}
	if err != nil {
		t.Fatal(err)
	}
	copied, err := os.ReadFile(contractCopy)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(shared, copied) {
		t.Errorf("%s differs from %s: copy it again (cp %s %s)", contractCopy, sharedContract, sharedContract, contractCopy)
	}
}

var sdlBlockRe = regexp.MustCompile("(?s)```graphql\n(.*?)```")

// TestSchemaHoldsTheContract: every name of the contract's SDL is in
// schema.graphqls as written there; a contract naming what the schema
// lacks, or typing it otherwise, fails.
func TestSchemaHoldsTheContract(t *testing.T) {
	text, err := os.ReadFile(contractCopy)
	if err != nil {
		t.Fatal(err)
	}
	m := sdlBlockRe.FindSubmatch(text)
	if m == nil {
		t.Fatalf("%s has no ```graphql block", contractCopy)
	}
	contract := string(m[1])
	schema, gqlErr := gqlparser.LoadSchema(&ast.Source{Name: "schema.graphqls", Input: schemaSDL})
	if gqlErr != nil {
		t.Fatal(gqlErr)
	}
	missing, err := contractGaps(contract, schema)
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range missing {
		t.Error(g)
	}

	for name, spoil := range map[string][2]string{
		"broken_renamed_field": {"paisa: SafeInt!", "paise: SafeInt!"},
		"broken_nullability":   {"payment(id: ID!): Payment\n", "payment(id: ID!): Payment!\n"},
		"broken_default":       {"first: Int = 20", "first: Int = 10"},
		"broken_enum_value":    {"REFUNDED }", "REFUNDED DISPUTED }"},
	} {
		t.Run(name, func(t *testing.T) {
			if strings.Count(contract, spoil[0]) != 1 {
				t.Fatalf("the contract holds %q %d times: update this case", spoil[0], strings.Count(contract, spoil[0]))
			}
			gaps, err := contractGaps(strings.Replace(contract, spoil[0], spoil[1], 1), schema)
			if err != nil {
				t.Fatal(err)
			}
			if len(gaps) == 0 {
				t.Errorf("a contract with %q passes", spoil[1])
			}
		})
	}
}

// contractGaps lists what the contract's SDL names that schema lacks or
// has otherwise.
func contractGaps(sdl string, schema *ast.Schema) ([]string, error) {
	doc, err := parser.ParseSchema(&ast.Source{Name: "contract", Input: sdl})
	if err != nil {
		return nil, err
	}
	var gaps []string
	for _, def := range doc.Definitions {
		have := schema.Types[def.Name]
		if have == nil {
			gaps = append(gaps, fmt.Sprintf("type %s: not in the schema", def.Name))
			continue
		}
		if have.Kind != def.Kind {
			gaps = append(gaps, fmt.Sprintf("type %s: %s in the schema, %s in the contract", def.Name, have.Kind, def.Kind))
		}
		for _, iface := range def.Interfaces {
			if !strings.Contains(" "+strings.Join(have.Interfaces, " ")+" ", " "+iface+" ") {
				gaps = append(gaps, fmt.Sprintf("type %s: does not implement %s", def.Name, iface))
			}
		}
		for _, v := range def.EnumValues {
			if have.EnumValues.ForName(v.Name) == nil {
				gaps = append(gaps, fmt.Sprintf("enum %s: no value %s", def.Name, v.Name))
			}
		}
		for _, f := range def.Fields {
			hf := have.Fields.ForName(f.Name)
			if hf == nil {
				gaps = append(gaps, fmt.Sprintf("%s.%s: not in the schema", def.Name, f.Name))
				continue
			}
			if hf.Type.String() != f.Type.String() {
				gaps = append(gaps, fmt.Sprintf("%s.%s: %s in the schema, %s in the contract", def.Name, f.Name, hf.Type, f.Type))
			}
			for _, a := range f.Arguments {
				ha := hf.Arguments.ForName(a.Name)
				switch {
				case ha == nil:
					gaps = append(gaps, fmt.Sprintf("%s.%s(%s): not in the schema", def.Name, f.Name, a.Name))
				case ha.Type.String() != a.Type.String():
					gaps = append(gaps, fmt.Sprintf("%s.%s(%s): %s in the schema, %s in the contract", def.Name, f.Name, a.Name, ha.Type, a.Type))
				case valueString(ha.DefaultValue) != valueString(a.DefaultValue):
					gaps = append(gaps, fmt.Sprintf("%s.%s(%s): default %s in the schema, %s in the contract", def.Name, f.Name, a.Name, valueString(ha.DefaultValue), valueString(a.DefaultValue)))
				}
			}
		}
	}
	return gaps, nil
}

func valueString(v *ast.Value) string {
	if v == nil {
		return "(none)"
	}
	return v.String()
}

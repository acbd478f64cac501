package main

// The fast path's per-type part (graph/fast_gen.go): for each object of
// fastObjects, an op per field a plan may hold, the type's table, its
// marshaler and its appender, which writes values as gqlgen does. A field
// is in a plan when it is bound to the record without arguments or a
// context, is not a list, and is a scalar of fastScalars, an enum or an
// object of fastObjects; any other leaves the selection to gqlgen.

import (
	"cmp"
	"fmt"
	"go/types"
	"maps"
	"slices"
	"strings"

	"github.com/99designs/gqlgen/codegen"
	"github.com/vektah/gqlparser/v2/ast"
)

// fastScalars: how a plan appends a scalar's value to b, as its marshaller does.
var fastScalars = map[string]string{
	"String":   "b = appendQuoted(b, %s)",
	"ID":       "b = appendQuoted(b, %s)",
	"DateTime": "b = append(b, '\"')\nb = scalar.AppendDateTime(b, %s)\nb = append(b, '\"')",
	"Decimal":  "b = append(b, '\"')\nb = (%s).AppendTaka(b)\nb = append(b, '\"')",
	"SafeInt": "if n := int64(%s); n > scalar.MaxSafeInt || n < -scalar.MaxSafeInt {\n" +
		"b = append(b, \"null\"...) // as scalar.MarshalSafeInt\n} else {\nb = strconv.AppendInt(b, n, 10)\n}",
}

// fastAccessors: fields bound to a method the fast path does not call,
// read from the record instead.
var fastAccessors = map[string]string{"Payment.customer": "x.Customer()"}

// fastDelegated: fields a plan may leave to gqlgen's generated code (op ...Gqlgen).
var fastDelegated = []string{"Payment.customer", "Customer.address"}

// fastVariant is a second table of a type for the root fast path, whose
// records hold their address: extra fields, and objects of a variant's type.
type fastVariant struct {
	name, typ, tag string
	extra          map[string]string // field -> accessor
	objects        map[string]string // field -> the variant's table
}

var fastVariants = []fastVariant{
	{name: "fastCustomerDetail", typ: "Customer", tag: "Customer/detail", extra: map[string]string{"address": "x.Address"}},
	{name: "fastPaymentDetail", typ: "Payment", tag: "Payment/detail", objects: map[string]string{"customer": "fastCustomerDetail"}},
	// A payments page's edges, whose addresses the list join filled.
	{name: "fastPaymentEdgeDetail", typ: "PaymentEdge", tag: "PaymentEdge/detail", objects: map[string]string{"node": "fastPaymentDetail"}},
}

// fastSpare is the room a type's marshaler asks of gqlgen's buffer.
var fastSpare = map[string]int{"Payment": 512, "Money": 128, "Customer": 256, "PaymentEdge": 640}

type fastGenField struct {
	name, op, accessor string
	write              string // the code that appends the value (v)
	object             string // the object's type, when one
	note               string // the op's comment
	delegated          bool
}

func opName(typ, field, suffix string) string {
	return "op" + typ + strings.ToUpper(field[:1]) + field[1:] + suffix
}

func lowerFirst(s string) string { return strings.ToLower(s[:1]) + s[1:] }

// fastFieldOf returns how a plan writes f of o, or ok false.
func fastFieldOf(o *codegen.Object, f *codegen.Field, accessor string) (fastGenField, bool) {
	g := fastGenField{name: f.Name, op: opName(o.Name, f.Name, "")}
	if accessor = cmp.Or(accessor, fastAccessors[o.Name+"."+f.Name]); accessor == "" {
		if f.IsResolver || f.MethodHasContext || len(f.Args) > 0 || f.VOkFunc || !f.NoErr && f.IsMethod() || f.IsMap() ||
			f.GoFieldName == "" || f.Stream {
			return g, false
		}
		accessor = strings.Replace(f.GoReceiverName, "obj", "x", 1) + "." + f.GoFieldName
		if f.IsMethod() {
			accessor += "()"
		}
	}
	ref := f.TypeReference
	if ref == nil || ref.GQL.Elem != nil || len(f.ImplDirectives()) > 0 {
		return g, false
	}
	_, ptr := ref.GO.(*types.Pointer)
	nullable := !ref.GQL.NonNull
	named := ref.GQL.NamedType
	write, deref := "", "*" // an object's appender takes the pointer
	switch def := ref.Definition; {
	case def.Kind == ast.Object && fastObjects[named] != "":
		if !ptr {
			return g, false
		}
		g.object, g.note = named, " // sub: "+named
		write, deref = "b = f.sub.append"+named+"(b, w, %s, nil)", ""
	case def.Kind == ast.Enum:
		write = "b = appendEnum(b, string(%s))"
	case def.Kind == ast.Scalar && fastScalars[named] != "":
		write = fastScalars[named]
	default:
		return g, false
	}
	switch {
	case ptr && nullable:
		write = "if v := " + accessor + "; v == nil {\nb = append(b, \"null\"...)\n} else {\n" + fmt.Sprintf(write, deref+"v") + "\n}"
	case ptr:
		write = fmt.Sprintf(write, deref+accessor)
	default:
		write = fmt.Sprintf(write, accessor)
	}
	g.accessor, g.write = accessor, write
	return g, true
}

// fastCode returns graph/fast_gen.go.
func fastCode(data *codegen.Data, pkg string) (string, error) {
	typeNames := slices.Sorted(maps.Keys(fastObjects))
	fields := map[string][]fastGenField{} // type -> the fields of its base table and its appender
	for _, name := range typeNames {
		o := data.Objects.ByName(name)
		if o == nil {
			return "", fmt.Errorf("fast path: no object %s in the schema", name)
		}
		for _, f := range o.Fields {
			if f.IsReserved() {
				continue
			}
			if g, ok := fastFieldOf(o, f, ""); ok {
				fields[name] = append(fields[name], g)
			}
			if slices.Contains(fastDelegated, name+"."+f.Name) {
				fields[name] = append(fields[name], fastGenField{name: f.Name, op: opName(name, f.Name, "Gqlgen"), delegated: true,
					note: " // gqlgen's generated code marshals it (delegated)"})
			}
		}
	}
	variantFields := map[string][]fastGenField{} // variant name -> its extra fields
	for _, v := range fastVariants {
		o := data.Objects.ByName(v.typ)
		for _, f := range o.Fields {
			acc, ok := v.extra[f.Name]
			if !ok {
				continue
			}
			g, ok := fastFieldOf(o, f, acc)
			if !ok {
				return "", fmt.Errorf("fast path: %s.%s cannot be written from %s", v.typ, f.Name, acc)
			}
			g.op, g.note = opName(v.typ, f.Name, "Detail"), " // "+v.name+" only"
			variantFields[v.name] = append(variantFields[v.name], g)
		}
	}

	var b strings.Builder
	b.WriteString(`// Code generated by go run ./graph/gen, DO NOT EDIT.

// The fast path's per-type part (graph/gen/fast.go): the ops, tables,
// marshalers and appenders of the objects graph/fast.go's plans write.

package ` + pkg + `

import (
	"io"
	"strconv"

	"github.com/99designs/gqlgen/graphql"

	"paygraph/graph/model"
	"paygraph/graph/scalar"
)

// The fields a plan may hold, an op each.
const (
	opTypename fastOp = iota // the object's type name
`)
	for _, name := range typeNames {
		for _, f := range fields[name] {
			fmt.Fprintf(&b, "\t%s%s\n", f.op, f.note)
		}
	}
	for _, v := range fastVariants {
		for _, f := range variantFields[v.name] {
			fmt.Fprintf(&b, "\t%s%s\n", f.op, f.note)
		}
	}
	b.WriteString(")\n\n// The tables: each type's fields by name, and the tables of their object values.\nvar (\n")
	table := func(varName, typ, tag string, fs []fastGenField, objects map[string]string) {
		fmt.Fprintf(&b, "\t%s = &fastType{name: %q, ", varName, typ)
		if tag != "" {
			fmt.Fprintf(&b, "tag: %q, ", tag)
		}
		fmt.Fprintf(&b, "satisfies: %sImplementors,\n\t\tops: map[string]fastOp{", lowerFirst(typ))
		var subs []string
		for _, f := range fs {
			if f.delegated {
				continue
			}
			fmt.Fprintf(&b, "%q: %s, ", f.name, f.op)
			if f.object != "" {
				subs = append(subs, f.op+": "+cmp.Or(objects[f.name], "fast"+f.object))
			}
		}
		b.WriteString("}")
		if len(subs) > 0 {
			fmt.Fprintf(&b, ",\n\t\tobjectType: map[fastOp]*fastType{%s}", strings.Join(subs, ", "))
		}
		b.WriteString("}\n")
	}
	for _, name := range typeNames {
		table("fast"+name, name, "", fields[name], nil)
	}
	for _, v := range fastVariants {
		table(v.name, v.typ, v.tag, append(slices.Clone(fields[v.typ]), variantFields[v.name]...), v.objects)
	}
	b.WriteString(")\n")

	for _, name := range typeNames {
		delegates := slices.ContainsFunc(fields[name], func(f fastGenField) bool { return f.delegated })
		j := lowerFirst(name) + "JSON"
		fmt.Fprintf(&b, "\n// %s marshals a %s with a plan.\ntype %s struct {\n\tp *fastPlan\n\tx *model.%s\n", j, name, j, name)
		arg := "nil"
		if delegates {
			b.WriteString("\tdelegated [maxDelegated]graphql.Marshaler\n")
			arg = "&m.delegated"
		}
		b.WriteString("}\n\n")
		fmt.Fprintf(&b, "func (m *%s) MarshalGQL(w io.Writer) { w.Write(m.p.append%s(spare(w, %d), w, m.x, %s)) }\n", j, name, fastSpare[name], arg)

		fmt.Fprintf(&b, "\n// append%s appends x as gqlgen writes it for the plan's selection.\n", name)
		fmt.Fprintf(&b, "func (p *fastPlan) append%s(b []byte, w io.Writer, x *model.%s, delegated *[maxDelegated]graphql.Marshaler) []byte {\n", name, name)
		b.WriteString("\tb = append(b, '{')\n\tfor i := range p.fields {\n\t\tf := &p.fields[i]\n\t\tb = append(b, f.key...)\n\t\tswitch f.op {\n")
		b.WriteString("\t\tcase opTypename:\n\t\t\tb = appendQuoted(b, f.lit)\n")
		all := slices.Clone(fields[name])
		for _, v := range fastVariants {
			if v.typ == name {
				all = append(all, variantFields[v.name]...)
			}
		}
		for _, f := range all {
			fmt.Fprintf(&b, "\t\tcase %s:\n", f.op)
			if f.delegated {
				fmt.Fprintf(&b, "\t\t\t// gqlgen's marshaler writes to w: what is before it first.\n\t\t\tw.Write(b)\n\t\t\tdelegated[f.dix].MarshalGQL(w)\n\t\t\tb = spare(w, %d)\n", fastSpare[name]/2)
				continue
			}
			b.WriteString(f.write + "\n")
		}
		b.WriteString("\t\t}\n\t}\n\treturn append(b, '}')\n}\n")
	}
	return b.String(), nil
}

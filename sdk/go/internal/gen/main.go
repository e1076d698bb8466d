// Command gen writes the SDK's wire types, types_gen.go, from the API's
// OpenAPI document, openapi.json: the document the dashboard serves
// (services/dashboard/cmd/openapi writes it), so the job fields that
// package jobspec declares reach the SDK without a hand copy. `go generate
// ./sdk/go/` runs it; its test fails while types_gen.go is not what it makes
// of openapi.json.
//
// Every schema under components.schemas that is an object with properties
// becomes a struct of the same name, its fields in the order of their JSON
// names. A field is named after its property in Go's style (run_at →
// RunAt, with the initialisms ID, IDs, URL, UTC, MS, TTL, HTML and DST), and
// its doc comment is the property's description; a type's is its schema's.
// The types follow from the schema:
//
//   - string is string, or time.Time with format date-time; integer is int,
//     or int64 with format int64; number is float64; boolean is bool;
//   - an array is a slice, and an object with additionalProperties a map
//     with string keys;
//   - a $ref (or an allOf of one $ref) is the named type; one to a free-form
//     schema (an object without properties, such as a job type's payload
//     that only has an example) is json.RawMessage;
//   - an object with properties written in place is a struct of its own,
//     named after its parent and the field (Notify's webhook is
//     NotifyWebhook); a free-form object is json.RawMessage;
//   - oneOf, anyOf or no type at all (any JSON value) is any.
//
// A field that is not required has omitempty. A struct or time.Time that is
// not required, or nullable, is a pointer; so is a nullable string, number
// or boolean.
//
// Where the Go type the SDK wants differs, the schema says so with these
// extensions, which other generators ignore:
//
//   - x-go-name, on a property: the field's Go name ("RRule" for rrule).
//   - x-go-type-name, on a schema under components.schemas or an object
//     written in place: the name of the type declared for it. A lower-case
//     name keeps a type the SDK only uses inside (a list it unwraps) out of
//     its API; "-" declares none, for a schema the SDK does not use.
//   - x-go-type, on any schema (a property, an array's items, a map's
//     values): its Go type, written as is ("*int", "int64",
//     "json.RawMessage", "[]string", or a declared type such as JobSpec).
//     Nothing is declared for it and no pointer is added.
//   - x-go-patch: true, on an object: the body of a PATCH, where a field
//     left out and a field set to its zero value differ. Each property that
//     is not required and would be a string, number, boolean or time.Time is
//     a pointer, and a map or a slice has omitzero instead of omitempty, so
//     that an empty one (which clears) is sent while a nil one is not.
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"go/format"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

func main() {
	in := flag.String("in", "openapi.json", "the OpenAPI document to read")
	out := flag.String("out", "types_gen.go", "the Go file to write")
	flag.Parse()
	if err := run(*in, *out); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}

// run writes the types that the document at in describes to out.
func run(in, out string) error {
	doc, err := os.ReadFile(in)
	if err != nil {
		return err
	}
	src, err := generate(doc, filepath.Base(in))
	if err != nil {
		return fmt.Errorf("%s: %w", in, err)
	}
	return os.WriteFile(out, src, 0o644)
}

// schema is one JSON schema of the document, as decoded.
type schema = map[string]any

// kind is what a schema's value is, whatever Go type it gets: it decides
// pointers and omit options.
type kind int

const (
	scalarKind kind = iota // string, number, boolean
	timeKind               // string with format date-time
	structKind             // object with properties, or a $ref to one
	sliceKind
	mapKind
	rawKind // free-form object
	anyKind // any JSON value
)

// decl is a struct to declare: a schema under components.schemas or an
// object written in place.
type decl struct {
	name string // Go name
	// path is where the schema is: its name under components.schemas, then
	// .property, [] for an array's items and {} for a map's values
	// (BulkResult.skipped[]).
	path      string
	component bool
	s         schema
}

// what says what d's schema is, for its doc comment.
func (d *decl) what() string {
	switch {
	case d.component:
		return "the API's " + d.path + " schema"
	case strings.HasSuffix(d.path, "[]"):
		return "the schema of the items of " + strings.TrimSuffix(d.path, "[]")
	case strings.HasSuffix(d.path, "{}"):
		return "the schema of the values of " + strings.TrimSuffix(d.path, "{}")
	}
	return "the schema of " + d.path
}

// gen holds what one run has found.
type gen struct {
	schemas map[string]schema
	// types maps a schema's name to its Go type: a declared struct,
	// json.RawMessage for a free-form schema, "-" for none.
	types map[string]string
	decls map[string]*decl
	queue []*decl
	// imports are the packages the fields' types name.
	imports map[string]bool
}

// generate returns the Go source of the types doc describes; source names
// the document in the header.
func generate(doc []byte, source string) ([]byte, error) {
	var d struct {
		Components struct {
			Schemas map[string]schema `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(doc, &d); err != nil {
		return nil, err
	}
	if len(d.Components.Schemas) == 0 {
		return nil, errors.New("no components.schemas")
	}
	g := &gen{schemas: d.Components.Schemas, types: map[string]string{}, decls: map[string]*decl{}, imports: map[string]bool{}}
	for _, name := range sorted(g.schemas) {
		s := g.schemas[name]
		tn := name
		if v, ok := s["x-go-type-name"].(string); ok {
			tn = v
		}
		switch {
		case tn == "-":
			g.types[name] = "-"
		case hasProperties(s):
			g.types[name] = tn
			if err := g.declare(&decl{name: tn, path: name, component: true, s: s}); err != nil {
				return nil, err
			}
		case s["type"] == "object" && s["allOf"] == nil:
			g.types[name] = "json.RawMessage"
		default:
			return nil, fmt.Errorf("schema %s: neither an object with properties nor a free-form object; give it x-go-type-name \"-\"", name)
		}
	}
	// Declaring a struct may find more, written in place in it.
	structs := map[string]string{}
	for len(g.queue) > 0 {
		d := g.queue[0]
		g.queue = g.queue[1:]
		src, err := g.structOf(d)
		if err != nil {
			return nil, err
		}
		structs[d.name] = src
	}

	var b bytes.Buffer
	fmt.Fprintf(&b, "// Code generated by internal/gen from %s; DO NOT EDIT.\n\n", source)
	b.WriteString("package tock\n\n")
	if len(g.imports) > 0 {
		b.WriteString("import (\n")
		for _, p := range sorted(g.imports) {
			fmt.Fprintf(&b, "\t%q\n", p)
		}
		b.WriteString(")\n")
	}
	for _, name := range sorted(structs) {
		b.WriteString("\n" + structs[name])
	}
	out, err := format.Source(b.Bytes())
	if err != nil {
		return nil, fmt.Errorf("format the generated source: %w\n%s", err, b.Bytes())
	}
	return out, nil
}

// declare queues d's struct to be written, refusing a second type of the
// same name.
func (g *gen) declare(d *decl) error {
	if prior, ok := g.decls[d.name]; ok {
		return fmt.Errorf("%s and %s are both Go type %s; name one with x-go-type-name", prior.path, d.path, d.name)
	}
	g.decls[d.name] = d
	g.queue = append(g.queue, d)
	return nil
}

// structOf returns the declaration of d's struct, with its doc comment.
func (g *gen) structOf(d *decl) (string, error) {
	props, _ := d.s["properties"].(map[string]any)
	required := map[string]bool{}
	if req, ok := d.s["required"].([]any); ok {
		for _, r := range req {
			if name, ok := r.(string); ok {
				required[name] = true
			}
		}
	}
	patch := d.s["x-go-patch"] == true
	var b strings.Builder
	doc := d.name + " is " + d.what() + "."
	if desc, _ := d.s["description"].(string); desc != "" {
		doc += " " + desc
	}
	comment(&b, "", doc)
	fmt.Fprintf(&b, "type %s struct {\n", d.name)
	fields := map[string]string{}
	for i, name := range sorted(props) {
		p, ok := props[name].(map[string]any)
		if !ok {
			return "", fmt.Errorf("%s: property %s is not a schema", d.path, name)
		}
		field := goName(name)
		if v, ok := p["x-go-name"].(string); ok {
			field = v
		}
		if prior, ok := fields[field]; ok {
			return "", fmt.Errorf("%s: properties %s and %s are both field %s; name one with x-go-name", d.path, prior, name, field)
		}
		fields[field] = name
		t, k, err := g.typeOf(p, d.name+field, d.path+"."+name)
		if err != nil {
			return "", err
		}
		req, nullable := required[name], p["nullable"] == true
		if _, verbatim := p["x-go-type"]; !verbatim {
			switch {
			case (k == structKind || k == timeKind) && (!req || nullable):
				t = "*" + t
			case k == scalarKind && (nullable || patch && !req):
				t = "*" + t
			}
		}
		for pkg, path := range map[string]string{"json.": "encoding/json", "time.": "time"} {
			if strings.Contains(t, pkg) {
				g.imports[path] = true
			}
		}
		tag := name
		switch {
		case req:
		case patch && (k == mapKind || k == sliceKind):
			tag += ",omitzero"
		default:
			tag += ",omitempty"
		}
		if desc := describe(p); desc != "" {
			if i > 0 {
				b.WriteString("\n")
			}
			comment(&b, "\t", desc)
		}
		fmt.Fprintf(&b, "\t%s %s `json:%q`\n", field, t, tag)
	}
	b.WriteString("}\n")
	return b.String(), nil
}

// typeOf returns the Go type of s and what its value is, declaring the
// struct of an object written in place under name; where is s's path (see
// decl).
func (g *gen) typeOf(s schema, name, where string) (string, kind, error) {
	k, err := g.kindOf(s, where)
	if err != nil {
		return "", 0, err
	}
	if t, ok := s["x-go-type"].(string); ok {
		return t, k, nil
	}
	if ref := refOf(s); ref != "" {
		t, err := g.refType(ref, where)
		return t, k, err
	}
	switch k {
	case anyKind:
		return "any", k, nil
	case rawKind:
		return "json.RawMessage", k, nil
	case timeKind:
		return "time.Time", k, nil
	case structKind:
		tn := name
		if v, ok := s["x-go-type-name"].(string); ok {
			tn = v
		}
		if err := g.declare(&decl{name: tn, path: where, s: s}); err != nil {
			return "", 0, err
		}
		return tn, k, nil
	case sliceKind:
		items, ok := s["items"].(map[string]any)
		if !ok {
			return "", 0, fmt.Errorf("%s: an array without items", where)
		}
		t, _, err := g.typeOf(items, name, where+"[]")
		return "[]" + t, k, err
	case mapKind:
		t, _, err := g.typeOf(s["additionalProperties"].(map[string]any), name+"Value", where+"{}")
		return "map[string]" + t, k, err
	}
	switch s["type"] {
	case "integer":
		switch s["format"] {
		case "int64":
			return "int64", k, nil
		case "int32":
			return "int32", k, nil
		}
		return "int", k, nil
	case "number":
		return "float64", k, nil
	case "boolean":
		return "bool", k, nil
	}
	return "string", k, nil
}

// kindOf says what s's value is.
func (g *gen) kindOf(s schema, where string) (kind, error) {
	if ref := refOf(s); ref != "" {
		t, err := g.refType(ref, where)
		if err != nil {
			return 0, err
		}
		if t == "json.RawMessage" {
			return rawKind, nil
		}
		return structKind, nil
	}
	if s["allOf"] != nil {
		return 0, fmt.Errorf("%s: an allOf that is not one $ref; give it x-go-type", where)
	}
	if s["oneOf"] != nil || s["anyOf"] != nil {
		return anyKind, nil
	}
	switch t := s["type"]; t {
	case "string":
		if s["format"] == "date-time" {
			return timeKind, nil
		}
		return scalarKind, nil
	case "integer", "number", "boolean":
		return scalarKind, nil
	case "array":
		return sliceKind, nil
	case "object":
		switch {
		case hasProperties(s):
			return structKind, nil
		case isSchema(s["additionalProperties"]):
			return mapKind, nil
		}
		return rawKind, nil
	case nil:
		return anyKind, nil
	default:
		return 0, fmt.Errorf("%s: unknown type %v", where, t)
	}
}

// refOf returns the schema name s refers to, directly or as an allOf of one
// $ref (how a property adds a description to a reference); "" if none.
func refOf(s schema) string {
	ref, _ := s["$ref"].(string)
	if all, ok := s["allOf"].([]any); ok && len(all) == 1 {
		if one, ok := all[0].(map[string]any); ok {
			ref, _ = one["$ref"].(string)
		}
	}
	return strings.TrimPrefix(ref, "#/components/schemas/")
}

func (g *gen) refType(ref, where string) (string, error) {
	t, ok := g.types[ref]
	switch {
	case !ok:
		return "", fmt.Errorf("%s: $ref to %s, which is not under components.schemas", where, ref)
	case t == "-":
		return "", fmt.Errorf("%s: $ref to %s, which declares no Go type (x-go-type-name \"-\")", where, ref)
	}
	return t, nil
}

func hasProperties(s schema) bool {
	p, ok := s["properties"].(map[string]any)
	return ok && len(p) > 0
}

func isSchema(v any) bool {
	_, ok := v.(map[string]any)
	return ok
}

// describe is a property's doc comment: its description, and the values of
// an enum that the description does not show each of.
func describe(p schema) string {
	desc, _ := p["description"].(string)
	enum, _ := p["enum"].([]any)
	if items, ok := p["items"].(map[string]any); ok && enum == nil {
		enum, _ = items["enum"].([]any)
	}
	var values []string
	shown := true
	for _, v := range enum {
		s := fmt.Sprint(v)
		values = append(values, "`"+s+"`")
		shown = shown && strings.Contains(desc, "`"+s+"`")
	}
	if len(values) == 0 || shown {
		return desc
	}
	list := values[0]
	if n := len(values); n > 1 {
		list = strings.Join(values[:n-1], ", ") + " or " + values[n-1]
	}
	if desc != "" {
		desc += " "
	}
	if len(values) == 1 {
		return desc + "Always " + list + "."
	}
	return desc + "One of " + list + "."
}

// initialisms are the words Go writes in capitals.
var initialisms = map[string]string{
	"id": "ID", "ids": "IDs", "url": "URL", "utc": "UTC", "ms": "MS",
	"ttl": "TTL", "html": "HTML", "dst": "DST",
}

// goName is a JSON name in Go's style: run_at → RunAt, job_id → JobID.
func goName(json string) string {
	var b strings.Builder
	for _, w := range strings.Split(json, "_") {
		if up, ok := initialisms[w]; ok {
			b.WriteString(up)
			continue
		}
		r, n := utf8.DecodeRuneInString(w)
		b.WriteRune(unicode.ToUpper(r))
		b.WriteString(w[n:])
	}
	return b.String()
}

// comment writes text as a // comment, indented by indent and wrapped at 78
// columns (a tab counting as 4).
func comment(b *strings.Builder, indent, text string) {
	width := 78 - 3 - 4*len(indent)
	for _, para := range strings.Split(text, "\n") {
		line := ""
		for _, w := range strings.Fields(para) {
			if line != "" && len(line)+1+len(w) > width {
				fmt.Fprintf(b, "%s// %s\n", indent, line)
				line = ""
			}
			if line != "" {
				line += " "
			}
			line += w
		}
		if line == "" {
			fmt.Fprintf(b, "%s//\n", indent)
			continue
		}
		fmt.Fprintf(b, "%s// %s\n", indent, line)
	}
}

// sorted returns m's keys in order.
func sorted[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

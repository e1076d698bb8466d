package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestTypesAreCurrent fails while the checked-in types_gen.go is not what
// the generator makes of the checked-in openapi.json: someone changed the
// API's document (or this generator) without running `make generate`.
func TestTypesAreCurrent(t *testing.T) {
	t.Parallel()
	out := filepath.Join(t.TempDir(), "types_gen.go")
	if err := run("../../openapi.json", out); err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("../../types_gen.go")
	if err != nil {
		t.Fatal(err)
	}
	if line, ok := firstDifference(got, want); ok {
		t.Fatalf("sdk/go/types_gen.go is not what sdk/go/openapi.json generates (first difference at line %d: have %q, want %q); run `make generate`",
			line+1, lineAt(got, line), lineAt(want, line))
	}
}

func firstDifference(a, b []byte) (int, bool) {
	la, lb := bytes.Split(a, []byte("\n")), bytes.Split(b, []byte("\n"))
	for i := range max(len(la), len(lb)) {
		if i >= len(la) || i >= len(lb) || !bytes.Equal(la[i], lb[i]) {
			return i, true
		}
	}
	return 0, false
}

func lineAt(b []byte, i int) string {
	lines := bytes.Split(b, []byte("\n"))
	if i >= len(lines) {
		return "(end of file)"
	}
	return string(lines[i])
}

// fieldLine is a struct field as generated: name, type and tag.
var fieldLine = regexp.MustCompile("(?m)^\t(\\w+) +(\\S+) +`json:\"([^\"]*)\"`$")

// fields returns the fields of the struct typ declares in src, each as
// "Name Type tag".
func fields(t *testing.T, src, typ string) []string {
	t.Helper()
	_, body, ok := strings.Cut(src, "\ntype "+typ+" struct {\n")
	if !ok {
		t.Fatalf("no struct %s in:\n%s", typ, src)
	}
	body, _, _ = strings.Cut(body, "\n}\n")
	var out []string
	for _, m := range fieldLine.FindAllStringSubmatch(body, -1) {
		out = append(out, m[1]+" "+m[2]+" "+m[3])
	}
	return out
}

// doc is an OpenAPI document with these components.schemas.
func doc(schemas string) []byte {
	return []byte(`{"openapi": "3.0.3", "components": {"schemas": {` + schemas + `}}}`)
}

func TestGenerate(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		schemas string
		typ     string
		want    []string
	}{
		{
			name: "RequiredFieldsHaveNoOmitempty",
			schemas: `"Run": {"type": "object", "required": ["id", "attempt"], "properties": {
				"id": {"type": "string"}, "attempt": {"type": "integer"}, "error": {"type": "string"}}}`,
			typ:  "Run",
			want: []string{"Attempt int attempt", "Error string error,omitempty", "ID string id"},
		},
		{
			name: "TypesFollowTheSchema",
			schemas: `"T": {"type": "object", "required": ["a", "b", "c", "d", "e", "f", "g", "h", "i"], "properties": {
				"a": {"type": "integer", "format": "int64"}, "b": {"type": "number"}, "c": {"type": "boolean"},
				"d": {"type": "array", "items": {"type": "string"}}, "e": {"type": "object", "additionalProperties": {"type": "integer"}},
				"f": {"type": "object"}, "g": {}, "h": {"oneOf": [{"type": "string"}, {"type": "integer"}]},
				"i": {"type": "string", "format": "date-time"}}}`,
			typ: "T",
			want: []string{"A int64 a", "B float64 b", "C bool c", "D []string d", "E map[string]int e",
				"F json.RawMessage f", "G any g", "H any h", "I time.Time i"},
		},
		{
			name: "OptionalOrNullableStructsAndTimesArePointers",
			schemas: `"S": {"type": "object", "properties": {"x": {"type": "string"}}},
			"T": {"type": "object", "required": ["a", "b", "c"], "properties": {
				"a": {"$ref": "#/components/schemas/S"}, "b": {"nullable": true, "allOf": [{"$ref": "#/components/schemas/S"}]},
				"c": {"type": "string", "format": "date-time", "nullable": true},
				"d": {"$ref": "#/components/schemas/S"}, "e": {"type": "string", "format": "date-time"}}}`,
			typ:  "T",
			want: []string{"A S a", "B *S b", "C *time.Time c", "D *S d,omitempty", "E *time.Time e,omitempty"},
		},
		{
			name: "ObjectsInPlaceAreNamedAfterParentAndField",
			schemas: `"Notify": {"type": "object", "properties": {
				"webhook": {"type": "object", "properties": {"url": {"type": "string"}}}}}`,
			typ:  "NotifyWebhook",
			want: []string{"URL string url,omitempty"},
		},
		{
			name:    "FreeFormSchemaIsRawJSON",
			schemas: `"NATSPayload": {"type": "object"}, "T": {"type": "object", "properties": {"p": {"$ref": "#/components/schemas/NATSPayload"}}}`,
			typ:     "T",
			want:    []string{"P json.RawMessage p,omitempty"},
		},
		{
			name: "GoNameAndGoType",
			schemas: `"T": {"type": "object", "properties": {"rrule": {"type": "string", "x-go-name": "RRule"},
				"label": {"oneOf": [{"type": "string"}, {"type": "array"}], "x-go-name": "Labels", "x-go-type": "[]string"},
				"max_retries": {"type": "integer", "x-go-type": "*int"},
				"blocks": {"type": "array", "items": {"type": "object", "x-go-type": "any"}}}}`,
			typ:  "T",
			want: []string{"Blocks []any blocks,omitempty", "Labels []string label,omitempty", "MaxRetries *int max_retries,omitempty", "RRule string rrule,omitempty"},
		},
		{
			name: "GoTypeName",
			schemas: `"KeyCreate": {"type": "object", "x-go-type-name": "KeyOptions", "properties": {"name": {"type": "string"}}},
			"Health": {"type": "object", "x-go-type-name": "-", "properties": {"status": {"type": "string"}}},
			"T": {"type": "object", "properties": {"dst": {"type": "object", "x-go-type-name": "DST", "properties": {"gap": {"type": "string"}}},
				"k": {"$ref": "#/components/schemas/KeyCreate"}}}`,
			typ:  "T",
			want: []string{"DST *DST dst,omitempty", "K *KeyOptions k,omitempty"},
		},
		{
			name: "PatchHasPointersAndOmitzeroMapsAndSlices",
			schemas: `"S": {"type": "object", "properties": {"x": {"type": "string"}}},
			"P": {"type": "object", "x-go-patch": true, "required": ["id"], "properties": {
				"id": {"type": "string"}, "name": {"type": "string"}, "n": {"type": "integer"}, "at": {"type": "string", "format": "date-time"},
				"labels": {"type": "object", "additionalProperties": {"type": "string"}}, "s": {"$ref": "#/components/schemas/S"},
				"payload": {"anyOf": [{"$ref": "#/components/schemas/S"}]}, "tags": {"type": "array", "items": {"type": "string"}}}}`,
			typ: "P",
			want: []string{"At *time.Time at,omitempty", "ID string id", "Labels map[string]string labels,omitzero",
				"N *int n,omitempty", "Name *string name,omitempty", "Payload any payload,omitempty", "S *S s,omitempty",
				"Tags []string tags,omitzero"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			src, err := generate(doc(tc.schemas), "openapi.json")
			if err != nil {
				t.Fatal(err)
			}
			got := fields(t, string(src), tc.typ)
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Fatalf("fields of %s:\n%s\nwant:\n%s\nsource:\n%s", tc.typ, strings.Join(got, "\n"), strings.Join(tc.want, "\n"), src)
			}
		})
	}

	t.Run("DocCommentsComeFromDescriptions", func(t *testing.T) {
		t.Parallel()
		src, err := generate(doc(`"Upcoming": {"type": "object", "description": "One future occurrence.", "properties": {
			"at": {"type": "string", "description": "The occurrence in the job's zone."},
			"kind": {"type": "string", "enum": ["once", "again"]}}}`), "openapi.json")
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{
			"// Code generated by internal/gen from openapi.json; DO NOT EDIT.\n",
			"// Upcoming is the API's Upcoming schema. One future occurrence.\ntype Upcoming struct {\n",
			"\t// The occurrence in the job's zone.\n\tAt string",
			"\t// One of `once` or `again`.\n\tKind string",
		} {
			if !strings.Contains(string(src), want) {
				t.Errorf("no %q in:\n%s", want, src)
			}
		}
	})

	t.Run("RefusesWhatItCannotMap", func(t *testing.T) {
		t.Parallel()
		for name, schemas := range map[string]string{
			"AllOfOfTwo": `"A": {"type": "object", "properties": {"x": {"type": "string"}}},
				"T": {"type": "object", "properties": {"a": {"allOf": [{"$ref": "#/components/schemas/A"}, {"required": ["x"]}]}}}`,
			"RefToNoType": `"H": {"type": "object", "x-go-type-name": "-", "properties": {"x": {"type": "string"}}},
				"T": {"type": "object", "properties": {"h": {"$ref": "#/components/schemas/H"}}}`,
			"TwoTypesOfOneName": `"A": {"type": "object", "x-go-type-name": "B", "properties": {"x": {"type": "string"}}},
				"B": {"type": "object", "properties": {"y": {"type": "string"}}}`,
			"TwoFieldsOfOneName": `"T": {"type": "object", "properties": {"ids": {"type": "string"}, "i_ds": {"type": "string"}}}`,
			"ComposedSchema":     `"NewKey": {"allOf": [{"type": "object"}]}`,
		} {
			if _, err := generate(doc(schemas), "openapi.json"); err == nil {
				t.Errorf("%s: no error", name)
			}
		}
	})
}

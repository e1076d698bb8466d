package strictjson

import (
	"bytes"
	"encoding"
	"encoding/json"
	"reflect"
	"strings"
	"sync"
)

// Strict decodes raw into v as a json.Decoder with DisallowUnknownFields
// decodes its first value, with the same error. A job's payload and its
// fields' objects are small structs read ten thousand times a bulk create:
// when v is a struct whose keys knownKeys can follow, raw is read with
// json.Unmarshal, which needs none of a Decoder's buffers, and its keys
// are then checked against v's fields; anything else, and any failure, is
// read again by a Decoder, whose error is the answer.
func Strict(raw []byte, v any) error {
	if unmarshalKnown(raw, v) {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

// unmarshalKnown reports whether raw, one JSON object with nothing after
// it, decoded into v, a pointer to a struct, without error, every key of
// every object in it naming a field. On false, v may be partly written.
func unmarshalKnown(raw []byte, v any) bool {
	t := reflect.TypeOf(v)
	if t == nil || t.Kind() != reflect.Pointer {
		return false
	}
	p := planOf(t.Elem())
	if !p.ok {
		return false
	}
	// Unmarshal checks that raw is well formed before the keys are read.
	return json.Unmarshal(raw, v) == nil && p.known(raw)
}

// A plan is what knownKeys needs of a struct type: its fields' JSON names
// and which of them hold objects whose keys are checked in turn.
type plan struct {
	// ok is false for a type knownKeys does not follow (an embedded
	// struct, names that only differ in case, a map or slice of structs):
	// it is always read by a Decoder.
	ok     bool
	fields []planField
}

type planField struct {
	name string
	// object is the field's struct type (through pointers) when its value
	// is an object whose keys must be known; nil for any other field.
	object reflect.Type
}

var plans sync.Map // reflect.Type → *plan

func planOf(t reflect.Type) *plan {
	if p, ok := plans.Load(t); ok {
		return p.(*plan)
	}
	p := makePlan(t)
	plans.Store(t, p)
	return p
}

var (
	jsonUnmarshaler = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()
)

func makePlan(t reflect.Type) *plan {
	if t.Kind() != reflect.Struct || decodesItself(t) {
		return &plan{}
	}
	p := &plan{ok: true}
	for f := range t.Fields() {
		if f.Anonymous {
			return &plan{}
		}
		tag := f.Tag.Get("json")
		if !f.IsExported() || tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if name == "" {
			name = f.Name
		}
		for _, g := range p.fields {
			if strings.EqualFold(g.name, name) {
				return &plan{}
			}
		}
		pf := planField{name: name}
		switch ft := deref(f.Type); {
		case decodesItself(ft):
		case ft.Kind() == reflect.Struct:
			pf.object = ft
		case holdsStruct(ft):
			return &plan{}
		}
		p.fields = append(p.fields, pf)
	}
	return p
}

func deref(t reflect.Type) reflect.Type {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t
}

// decodesItself reports whether t reads its own JSON (time.Time, say):
// a Decoder checks no keys within it.
func decodesItself(t reflect.Type) bool {
	pt := reflect.PointerTo(t)
	return t.Implements(jsonUnmarshaler) || pt.Implements(jsonUnmarshaler) ||
		t.Implements(textUnmarshaler) || pt.Implements(textUnmarshaler)
}

// holdsStruct reports whether a map, slice or array type holds structs
// whose keys a Decoder would check.
func holdsStruct(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Map, reflect.Slice, reflect.Array:
		e := deref(t.Elem())
		if decodesItself(e) {
			return false
		}
		return e.Kind() == reflect.Struct || holdsStruct(e)
	}
	return false
}

// known reports whether every key of raw, a well-formed JSON object or
// null, names one of p's fields, and every object below a struct field
// holds known keys in turn. Keys are matched as encoding/json matches
// them, without regard to case; a key with an escape or a byte beyond
// ASCII, whose folding this does not follow, counts as unknown.
func (p *plan) known(raw []byte) bool {
	if bytes.Equal(raw, []byte("null")) {
		return true
	}
	ok := true
	isObject := eachMember(raw, func(key, value []byte) bool {
		k := key[1 : len(key)-1]
		if bytes.IndexByte(k, '\\') >= 0 || !ascii(k) {
			ok = false
			return false
		}
		var f *planField
		for i := range p.fields {
			if foldEqual(p.fields[i].name, k) {
				f = &p.fields[i]
				break
			}
		}
		if f == nil {
			ok = false
			return false
		}
		if f.object != nil {
			sub := planOf(f.object)
			ok = sub.ok && sub.known(value)
		}
		return ok
	})
	return isObject && ok
}

// foldEqual reports whether name and k, ASCII, are equal without regard
// to case.
func foldEqual(name string, k []byte) bool {
	if len(name) != len(k) {
		return false
	}
	for i := range len(k) {
		a, b := name[i], k[i]
		if a != b && lower(a) != lower(b) {
			return false
		}
	}
	return true
}

func lower(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

func ascii(b []byte) bool {
	for _, c := range b {
		if c >= 0x80 {
			return false
		}
	}
	return true
}

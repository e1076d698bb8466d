package strictjson

import (
	"bytes"
	"encoding"
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"
)

// Strict decodes raw into v as a json.Decoder with DisallowUnknownFields
// decodes its first value, with the same error. A job's payload and its
// fields' objects are small structs read ten thousand times a bulk create:
// when v is a struct whose keys known can follow, raw is read with
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
	if p.flat(raw, reflect.ValueOf(v).Elem(), false) {
		return true
	}
	// Unmarshal checks that raw is well formed before the keys are read.
	return json.Unmarshal(raw, v) == nil && p.known(raw)
}

// UnmarshalFlat is json.Unmarshal of raw into v, a pointer to a struct,
// read directly when raw is an object of plain strings (and, for
// json.RawMessage fields, any values): the shape of most payloads (a
// webhook's URL, method and body), which a worker reads once per attempt.
// Keys that name no field are skipped, as json.Unmarshal skips them.
func UnmarshalFlat(raw []byte, v any) error {
	if t := reflect.TypeOf(v); t != nil && t.Kind() == reflect.Pointer {
		if p := planOf(t.Elem()); p.ok && p.flat(raw, reflect.ValueOf(v).Elem(), true) {
			return nil
		}
	}
	return json.Unmarshal(raw, v)
}

// A plan is what known and flat need of a struct type: its fields' JSON
// names, which of them hold objects whose keys are checked in turn, and
// which flat can set.
type plan struct {
	// ok is false for a type known does not follow (an embedded struct,
	// names that only differ in case, a map or slice of structs): it is
	// always read by a Decoder.
	ok     bool
	fields []planField
}

type planField struct {
	name string
	// object is the field's struct type (through pointers) when its value
	// is an object whose keys must be known; nil for any other field.
	object reflect.Type
	// index is the field's index in its struct; set says how flat sets
	// it (setNone: flat does not).
	index int
	set   setKind
}

type setKind int

const (
	setNone   setKind = iota
	setString         // a string field, from a JSON string without escapes
	setRaw            // a json.RawMessage field, from any JSON value
)

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
	rawMessageType  = reflect.TypeFor[json.RawMessage]()
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
		name, opts, _ := strings.Cut(tag, ",")
		if name == "" {
			name = f.Name
		}
		for _, g := range p.fields {
			if strings.EqualFold(g.name, name) {
				return &plan{}
			}
		}
		pf := planField{name: name, index: f.Index[0]}
		switch {
		case f.Type == rawMessageType:
			pf.set = setRaw
		case f.Type.Kind() == reflect.String && !slices.Contains(strings.Split(opts, ","), "string"):
			pf.set = setString
		}
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
		f := p.field(k)
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

// flat reads raw into dst, the struct p plans, when raw is an object whose
// every value is a string without escapes for a string field, or any JSON
// value for a json.RawMessage field, and every key names such a field
// (lenient: or no field, and is skipped). It checks raw's syntax as it
// reads, and sets nothing unless it reads all of raw: false leaves dst as
// it was, for json.Unmarshal or a Decoder to read.
func (p *plan) flat(raw []byte, dst reflect.Value, lenient bool) bool {
	type assign struct {
		field *planField
		value []byte
	}
	var sets [8]assign
	n := 0
	i := skipSpace(raw, 0)
	if i >= len(raw) || raw[i] != '{' {
		return false
	}
	i = skipSpace(raw, i+1)
	if i < len(raw) && raw[i] == '}' {
		i++
	} else {
		for {
			kend, ok := plainString(raw, i)
			if !ok {
				return false
			}
			key := raw[i+1 : kend-1]
			i = skipSpace(raw, kend)
			if i >= len(raw) || raw[i] != ':' {
				return false
			}
			i = skipSpace(raw, i+1)
			if !ascii(key) {
				// encoding/json folds case beyond ASCII (K, the Kelvin
				// sign, matches k): leave such keys to it.
				return false
			}
			f := p.field(key)
			var vend int
			switch {
			case f != nil && f.set == setString:
				if vend, ok = plainString(raw, i); !ok {
					return false
				}
			case f != nil && f.set == setRaw, f == nil && lenient:
				if i >= len(raw) {
					return false
				}
				if vend = skipValue(raw, i); !json.Valid(raw[i:vend]) {
					return false
				}
			default:
				return false
			}
			if f != nil {
				if n == len(sets) {
					return false
				}
				sets[n] = assign{f, raw[i:vend]}
				n++
			}
			i = skipSpace(raw, vend)
			if i >= len(raw) {
				return false
			}
			if raw[i] == '}' {
				i++
				break
			}
			if raw[i] != ',' {
				return false
			}
			i = skipSpace(raw, i+1)
		}
	}
	if skipSpace(raw, i) != len(raw) {
		return false
	}
	for _, a := range sets[:n] {
		fv := dst.Field(a.field.index)
		if a.field.set == setString {
			fv.SetString(string(a.value[1 : len(a.value)-1]))
			continue
		}
		if string(a.value) == "null" {
			// json.Unmarshal leaves a RawMessage's null as the text null.
			fv.SetBytes([]byte("null"))
			continue
		}
		fv.SetBytes(bytes.Clone(a.value))
	}
	return true
}

// field returns the field key (ASCII, unescaped) names, nil for none.
func (p *plan) field(key []byte) *planField {
	for i := range p.fields {
		if foldEqual(p.fields[i].name, key) {
			return &p.fields[i]
		}
	}
	return nil
}

// PlainString reads raw, one JSON string, when it needs no unescaping:
// quoted, without a backslash or a control character, valid UTF-8. A
// request is mostly such strings; anything else is left to encoding/json.
func PlainString(raw []byte) (string, bool) {
	if end, ok := plainString(raw, 0); ok && end == len(raw) {
		return string(raw[1 : end-1]), true
	}
	return "", false
}

// plainString returns the index just past the JSON string at raw[i] when
// it holds no escape, no control character and only valid UTF-8.
func plainString(raw []byte, i int) (int, bool) {
	if i >= len(raw) || raw[i] != '"' {
		return 0, false
	}
	for j := i + 1; j < len(raw); j++ {
		switch c := raw[j]; {
		case c == '"':
			return j + 1, utf8.Valid(raw[i+1 : j])
		case c == '\\' || c < 0x20:
			return 0, false
		}
	}
	return 0, false
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

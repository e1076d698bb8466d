// Package strictjson decodes one JSON value the way tock's API reads
// requests: no unknown fields, nothing after the value, and every failure a
// *job.FieldError naming the field by its dotted JSON path
// ("schedule.start_at"), so a client can show the message next to it. The
// API's bodies and the job fields' own values (a schedule, a notify) are all
// read through it.
package strictjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tockhq/tock/pkg/job"
)

// Decode reads raw into v strictly: one JSON value, no unknown fields,
// nothing after it. prefix is the path of raw within the request ("" for
// the whole body); errors name fields below it.
func Decode(raw []byte, v any, prefix string) error {
	if unmarshalKnown(raw, v) {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return describe(err, raw, reflect.TypeOf(v), prefix)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		if prefix != "" {
			return invalid(prefix, "must be a single JSON value")
		}
		return invalid("", "the body must hold a single JSON object")
	}
	return nil
}

// Unmarshal reads raw, one JSON value already known to be well formed (a
// field's value taken from a decoded object), into v, which holds no
// struct whose unknown fields matter (a string, a number, a map or a
// slice of them): without Decode's search for trailing data and unknown
// fields, and its buffers. Its errors are Decode's.
func Unmarshal(raw []byte, v any, prefix string) error {
	if err := json.Unmarshal(raw, v); err != nil {
		return describe(err, raw, reflect.TypeOf(v), prefix)
	}
	return nil
}

// Object splits raw, which must be one JSON object, into its members: each
// key, unescaped, with its value as it stands in raw (no copy), in the
// order given. A body that is not valid JSON, or not an object, is the
// same *job.FieldError Decode would return. It reads raw once to check it
// and once to split it, allocating only the members' slice: a bulk create
// reads ten thousand of these.
func Object(raw []byte) ([]Member, error) {
	if !json.Valid(raw) {
		return nil, invalid("", "the body is not valid JSON")
	}
	return Members(raw)
}

// Members is Object for raw that is already known to be well-formed JSON,
// such as one element of a body json.Valid accepted: it does not read raw
// a second time to check it. Its only error is raw not being an object.
func Members(raw []byte) ([]Member, error) {
	out := make([]Member, 0, 8)
	if !eachMember(raw, func(key, value []byte) bool {
		out = append(out, Member{Key: key, Value: value})
		return true
	}) {
		return nil, invalid("", "the body must be a JSON object")
	}
	return out, nil
}

// eachMember calls yield with each key (quoted) and value of the object
// raw, well-formed JSON, until yield returns false. It returns false when
// raw is not an object.
func eachMember(raw []byte, yield func(key, value []byte) bool) bool {
	i := skipSpace(raw, 0)
	if i >= len(raw) || raw[i] != '{' {
		return false
	}
	i = skipSpace(raw, i+1)
	if raw[i] == '}' {
		return true
	}
	for {
		end := skipString(raw, i)
		key := raw[i:end]
		i = skipSpace(raw, end)
		i = skipSpace(raw, i+1) // the colon
		vend := skipValue(raw, i)
		if !yield(key, raw[i:vend]) {
			return true
		}
		i = skipSpace(raw, vend)
		if raw[i] == '}' {
			return true
		}
		i = skipSpace(raw, i+1) // the comma
	}
}

// Elements splits raw, a well-formed JSON array (such as a member's value
// from Object), into its elements as they stand in raw (no copy); false
// when raw is not an array.
func Elements(raw []byte) ([]json.RawMessage, bool) {
	i := skipSpace(raw, 0)
	if i >= len(raw) || raw[i] != '[' {
		return nil, false
	}
	out := make([]json.RawMessage, 0, 16)
	i = skipSpace(raw, i+1)
	if raw[i] == ']' {
		return out, true
	}
	for {
		end := skipValue(raw, i)
		out = append(out, raw[i:end:end])
		i = skipSpace(raw, end)
		if raw[i] == ']' {
			return out, true
		}
		i = skipSpace(raw, i+1) // the comma
	}
}

// Member is one member of a JSON object: its key as it stands in the
// object (quoted; Name unquotes it) and its value.
type Member struct {
	Key   []byte
	Value []byte
}

// Name is the member's key, unquoted.
func (m Member) Name() string {
	s, err := unquote(m.Key)
	if err != nil {
		return string(m.Key)
	}
	return s
}

// Plain returns the key unquoted without allocating when it holds no
// escape; ok false otherwise (then Name unquotes it).
func (m Member) Plain() ([]byte, bool) {
	if bytes.IndexByte(m.Key, '\\') >= 0 {
		return nil, false
	}
	return m.Key[1 : len(m.Key)-1], true
}

// The skips below read JSON that json.Valid accepted: they only find where
// each part ends.

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipString returns the index just past the string starting at b[i].
func skipString(b []byte, i int) int {
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return len(b)
}

// skipValue returns the index just past the value starting at b[i].
func skipValue(b []byte, i int) int {
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				j = skipString(b, j) - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1
				}
			}
		}
		return len(b)
	}
	j := i
	for j < len(b) && b[j] != ',' && b[j] != '}' && b[j] != ']' && b[j] != ' ' && b[j] != '\t' && b[j] != '\n' && b[j] != '\r' {
		j++
	}
	return j
}

// unquote reads a JSON string, quotes included.
func unquote(q []byte) (string, error) {
	if bytes.IndexByte(q, '\\') < 0 {
		return string(q[1 : len(q)-1]), nil
	}
	var s string
	err := json.Unmarshal(q, &s)
	return s, err
}

func invalid(field, msg string) error { return &job.FieldError{Field: field, Message: msg} }

func join(prefix, field string) string {
	switch {
	case prefix == "":
		return field
	case field == "":
		return prefix
	}
	return prefix + "." + field
}

func describe(err error, raw []byte, target reflect.Type, prefix string) error {
	var (
		syntaxErr *json.SyntaxError
		typeErr   *json.UnmarshalTypeError
		timeErr   *time.ParseError
	)
	switch {
	case errors.Is(err, io.EOF):
		return invalid(prefix, whole(prefix, "must be a JSON object"))
	case errors.Is(err, io.ErrUnexpectedEOF), errors.As(err, &syntaxErr):
		return invalid(prefix, whole(prefix, "is not valid JSON"))
	case errors.As(err, &typeErr):
		if typeErr.Field == "" {
			if prefix == "" {
				return invalid("", "the body must be a JSON object")
			}
			return invalid(prefix, "must be "+Kind(typeErr.Type))
		}
		return invalid(join(prefix, jsonPath(typeErr.Field, target)), "must be "+Kind(typeErr.Type))
	case errors.As(err, &timeErr), strings.HasPrefix(err.Error(), "Time.UnmarshalJSON"):
		// The decoder does not say which time failed: look for it.
		field, _ := locate(raw, target)
		return invalid(join(prefix, field), "is not an RFC 3339 time with offset, such as 2030-01-02T15:04:05Z")
	}
	// encoding/json reports an unknown field only in its message, and
	// without the path of the object holding it.
	if rest, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		field, uerr := strconv.Unquote(rest)
		if uerr != nil {
			field = rest
		}
		if path, ok := locate(raw, target); ok {
			field = path
		}
		return invalid(join(prefix, field), "is not a known field")
	}
	var fe *job.FieldError
	if errors.As(err, &fe) {
		// A type's own UnmarshalJSON named what is wrong.
		return invalid(join(prefix, fe.Field), fe.Message)
	}
	return invalid(prefix, whole(prefix, "is not valid JSON"))
}

// whole words a failure of the entire value: "the body ..." at the top.
func whole(prefix, msg string) string {
	if prefix != "" {
		return msg
	}
	switch msg {
	case "must be a JSON object":
		return "the body must be a JSON object"
	}
	return "the body " + msg
}

// jsonPath drops from a field path that encoding/json reports the names of
// embedded structs ("Spec.priority"), which are not part of the JSON.
func jsonPath(field string, target reflect.Type) string {
	for target.Kind() == reflect.Pointer {
		target = target.Elem()
	}
	if target.Kind() != reflect.Struct {
		return field
	}
	for f := range target.Fields() {
		if !f.Anonymous || f.Tag.Get("json") != "" {
			continue
		}
		if rest, ok := strings.CutPrefix(field, f.Name+"."); ok {
			return jsonPath(rest, f.Type)
		}
	}
	return field
}

var (
	timeType    = reflect.TypeFor[time.Time]()
	rawJSONType = reflect.TypeFor[json.RawMessage]()
)

// locate finds in raw, decoded as target, the first key target does not
// know or the first time that is not RFC 3339, and returns its dotted path.
// It follows struct fields by their JSON names, matched without regard to
// case as encoding/json does, and descends through objects only.
func locate(raw []byte, target reflect.Type) (string, bool) {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return "", false
	}
	return locateIn(v, target, "")
}

func locateIn(v any, t reflect.Type, path string) (string, bool) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if v == nil || t == rawJSONType {
		return "", false
	}
	if t == timeType {
		s, ok := v.(string)
		if !ok {
			return path, true
		}
		if _, err := time.Parse(time.RFC3339, s); err != nil {
			return path, true
		}
		return "", false
	}
	obj, ok := v.(map[string]any)
	if !ok || t.Kind() != reflect.Struct {
		return "", false
	}
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		p := k
		if path != "" {
			p = path + "." + k
		}
		ft, known := fieldType(t, k)
		if !known {
			return p, true
		}
		if found, ok := locateIn(obj[k], ft, p); ok {
			return found, true
		}
	}
	return "", false
}

// fieldType returns the type of t's field that JSON key k decodes into.
func fieldType(t reflect.Type, k string) (reflect.Type, bool) {
	for f := range t.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if f.Anonymous && name == "" {
			et := f.Type
			if et.Kind() == reflect.Pointer {
				et = et.Elem()
			}
			if et.Kind() == reflect.Struct {
				if ft, ok := fieldType(et, k); ok {
					return ft, true
				}
				continue
			}
		}
		if !f.IsExported() || name == "-" {
			continue
		}
		if name == "" {
			name = f.Name
		}
		if strings.EqualFold(name, k) {
			return f.Type, true
		}
	}
	return nil, false
}

// Kind names what a Go type looks like in JSON, for error messages: "a
// string", "an integer", "an object".
func Kind(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "an array"
	default:
		return "an object"
	}
}

package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v5"
)

// decodeJSON reads the request body into v strictly: one JSON value, no
// unknown fields, nothing after it. Every failure is a 400 naming the field
// (with its path, such as "schedule.start_at"), or a 413 when the body passes
// the cap. The body is read whole first (limitBody caps it), so that the
// fields encoding/json does not name can be found in it.
func decodeJSON(c *echo.Context, v any) error {
	raw, err := readBody(c)
	if err != nil {
		return err
	}
	return decodeRaw(raw, v)
}

// readBody reads the whole request body; limitBody caps it.
func readBody(c *echo.Context) ([]byte, error) {
	raw, err := io.ReadAll(c.Request().Body)
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, errTooLarge
		}
		return nil, invalid("", "the body could not be read")
	}
	return raw, nil
}

// decodeRaw decodes one JSON value strictly, as decodeJSON does, from bytes
// already read: one item of a batch, say. Every string in it must be text
// Postgres can store (see checkText).
func decodeRaw(raw []byte, v any) error {
	if err := checkText(raw); err != nil {
		return err
	}
	return decodeStrict(raw, v)
}

// decodeStrict is decodeRaw without the text check, for an envelope whose
// parts are decoded, and checked, one by one (a bulk create's jobs).
func decodeStrict(raw []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return decodeError(err, raw, reflect.TypeOf(v))
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return invalid("", "the body must hold a single JSON object")
	}
	return nil
}

func decodeError(err error, raw []byte, target reflect.Type) error {
	var (
		syntaxErr *json.SyntaxError
		typeErr   *json.UnmarshalTypeError
		timeErr   *time.ParseError
	)
	switch {
	case errors.Is(err, io.EOF):
		return invalid("", "the body must be a JSON object")
	case errors.Is(err, io.ErrUnexpectedEOF), errors.As(err, &syntaxErr):
		return invalid("", "the body is not valid JSON")
	case errors.As(err, &typeErr):
		if typeErr.Field == "" {
			return invalid("", "the body must be a JSON object")
		}
		return invalid(jsonPath(typeErr.Field, target), "must be "+jsonKind(typeErr.Type))
	case errors.As(err, &timeErr), strings.HasPrefix(err.Error(), "Time.UnmarshalJSON"):
		// The decoder does not say which time failed: look for it.
		field, _ := locate(raw, target)
		return invalid(field, "is not an RFC 3339 time with offset, such as 2030-01-02T15:04:05Z")
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
		return invalid(field, "is not a known field")
	}
	return invalid("", "the body is not valid JSON")
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

// jsonKind names what a Go type looks like in JSON, for error messages.
func jsonKind(t reflect.Type) string {
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

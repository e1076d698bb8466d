package api

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v5"
)

// decodeJSON reads the request body into v strictly: one JSON value, no
// unknown fields, nothing after it. Every failure is a 400 naming the field
// when the decoder says which, or a 413 when the body passes the cap.
func decodeJSON(c *echo.Context, v any) error {
	dec := json.NewDecoder(c.Request().Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return decodeError(err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return errTooLarge
		}
		return invalid("", "the body must hold a single JSON object")
	}
	return nil
}

func decodeError(err error) error {
	var (
		mbe       *http.MaxBytesError
		syntaxErr *json.SyntaxError
		typeErr   *json.UnmarshalTypeError
		timeErr   *time.ParseError
	)
	switch {
	case errors.As(err, &mbe):
		return errTooLarge
	case errors.Is(err, io.EOF):
		return invalid("", "the body must be a JSON object")
	case errors.Is(err, io.ErrUnexpectedEOF), errors.As(err, &syntaxErr):
		return invalid("", "the body is not valid JSON")
	case errors.As(err, &typeErr):
		if typeErr.Field == "" {
			return invalid("", "the body must be a JSON object")
		}
		return invalid(typeErr.Field, "must be "+jsonKind(typeErr.Type))
	case errors.As(err, &timeErr), strings.HasPrefix(err.Error(), "Time.UnmarshalJSON"):
		// run_at is the request's only time: the decoder does not name it.
		return invalid("run_at", "is not an RFC 3339 time with offset, such as 2030-01-02T15:04:05Z")
	}
	// encoding/json reports an unknown field only in its message.
	if rest, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		field, uerr := strconv.Unquote(rest)
		if uerr != nil {
			field = rest
		}
		return invalid(field, "is not a known field")
	}
	return invalid("", "the body is not valid JSON")
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

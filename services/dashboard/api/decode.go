package api

import (
	"errors"
	"io"
	"net/http"

	"github.com/labstack/echo/v5"

	"github.com/tockhq/tock/pkg/strictjson"
	"github.com/tockhq/tock/services/dashboard/apierr"
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
		return nil, apierr.Invalid("", "the body could not be read")
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
// parts are decoded, and checked, one by one (a bulk create's jobs). Its
// errors are *job.FieldError, answered 400 naming the field.
func decodeStrict(raw []byte, v any) error { return strictjson.Decode(raw, v, "") }

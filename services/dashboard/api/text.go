package api

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/labstack/echo/v5"

	"github.com/tockhq/tock/services/dashboard/apierr"
)

// checkText refuses, naming the field, a JSON body holding a string (a key or
// a value, at any depth) that Postgres cannot store: bytes that are not
// UTF-8, a NUL character (\u0000), or half of a UTF-16 surrogate pair
// (\ud800 alone). encoding/json lets all three through (it replaces the
// first and last with U+FFFD in Go strings, and keeps them as they are in a
// json.RawMessage such as a payload), and Postgres refused them with an
// error that looked like an outage. Syntax errors are left to the decoder.
func checkText(raw []byte) error {
	if plainText(raw) {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var path jsonPathStack
	for {
		start := dec.InputOffset()
		tok, err := dec.Token()
		if err != nil {
			return nil
		}
		switch v := tok.(type) {
		case json.Delim:
			if v == '{' || v == '[' {
				path.open(v == '{')
			} else {
				path.close()
			}
			continue
		case string:
			key := path.atKey()
			if msg := badString(raw[start:dec.InputOffset()]); msg != "" {
				if key {
					// The key itself cannot be shown: name its object.
					return apierr.Invalid(path.String(), "has a key that "+msg)
				}
				return apierr.Invalid(path.String(), msg)
			}
			if key {
				path.setKey(v)
				continue
			}
		}
		path.value()
	}
}

// plainText reports whether checkText has nothing to look at in raw:
// valid UTF-8 without an escaped character (a NUL or a surrogate needs an
// escape in valid JSON). What holds for a body holds for every part of it.
func plainText(raw []byte) bool {
	return utf8.Valid(raw) && !bytes.Contains(raw, []byte(`\u`))
}

// badString says what is wrong with one JSON string as it appears in the
// body (with any separator before it), or "" if nothing is.
func badString(span []byte) string {
	if !utf8.Valid(span) {
		return "is not valid UTF-8: send text as UTF-8"
	}
	q := bytes.IndexByte(span, '"')
	if q < 0 {
		return ""
	}
	s := span[q+1:]
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' || i+1 >= len(s) {
			continue
		}
		if s[i+1] != 'u' {
			i++ // \" \\ \n ...: skip the escaped character
			continue
		}
		r, ok := hex4(s[i+2:])
		if !ok {
			return "" // the decoder reports the syntax error
		}
		i += 5
		switch {
		case r == 0:
			return `holds a NUL character (\u0000), which cannot be stored`
		case utf16.IsSurrogate(r) && r < 0xdc00:
			// A high surrogate must be followed by a low one.
			if i+6 < len(s) && s[i+1] == '\\' && s[i+2] == 'u' {
				if lo, ok := hex4(s[i+3:]); ok && lo >= 0xdc00 && lo <= 0xdfff {
					i += 6
					continue
				}
			}
			return halfPair(r)
		case utf16.IsSurrogate(r):
			return halfPair(r)
		}
	}
	return ""
}

func halfPair(r rune) string {
	return `holds half of a UTF-16 surrogate pair (\u` + strconv.FormatInt(int64(r), 16) + `) without the other half`
}

func hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	n, err := strconv.ParseUint(string(b[:4]), 16, 32)
	return rune(n), err == nil
}

// jsonPathStack follows where a token stream is: the keys and indexes of
// the objects and arrays it is in, named as API errors name fields
// (payload.headers.X-Trace, payload.to[1]).
type jsonPathStack struct{ frames []jsonFrame }

type jsonFrame struct {
	object  bool
	key     string
	wantKey bool // in an object, the next string is a key
	index   int  // in an array, the index of the next value
}

func (p *jsonPathStack) open(object bool) {
	p.frames = append(p.frames, jsonFrame{object: object, wantKey: object})
}

// close ends the innermost object or array, which was a value of its parent.
func (p *jsonPathStack) close() {
	if len(p.frames) > 0 {
		p.frames = p.frames[:len(p.frames)-1]
	}
	p.value()
}

// value records that a value was read where the innermost frame expects one.
func (p *jsonPathStack) value() {
	if len(p.frames) == 0 {
		return
	}
	f := &p.frames[len(p.frames)-1]
	if f.object {
		f.wantKey = true
	} else {
		f.index++
	}
}

func (p *jsonPathStack) atKey() bool {
	return len(p.frames) > 0 && p.frames[len(p.frames)-1].object && p.frames[len(p.frames)-1].wantKey
}

func (p *jsonPathStack) setKey(k string) {
	f := &p.frames[len(p.frames)-1]
	f.key, f.wantKey = k, false
}

// String names the value being read: in an object between members, the
// object itself.
func (p *jsonPathStack) String() string {
	var b strings.Builder
	for _, f := range p.frames {
		switch {
		case !f.object:
			b.WriteString("[" + strconv.Itoa(f.index) + "]")
		case !f.wantKey:
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.WriteString(f.key)
		}
	}
	return b.String()
}

// checkQuery refuses a query parameter (name or value) that Postgres cannot
// store as text: not UTF-8, or holding a NUL. A search for "a\x00b" must be
// a 400 naming the parameter, not a failed query.
func checkQuery(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c *echo.Context) error {
		for name, values := range c.Request().URL.Query() {
			if !textOK(name) {
				return apierr.Invalid("", "a query parameter's name is not valid UTF-8 or holds a NUL character")
			}
			for _, v := range values {
				if !textOK(v) {
					return apierr.Invalid(name, "must be valid UTF-8 without NUL characters")
				}
			}
		}
		return next(c)
	}
}

// textOK reports whether s can be stored as Postgres text.
func textOK(s string) bool { return utf8.ValidString(s) && !strings.ContainsRune(s, 0) }

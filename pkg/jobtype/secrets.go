package jobtype

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/url"
	"regexp"
	"strings"

	"github.com/tockhq/tock/pkg/job"
)

// Secrets are write-only: a value that can carry a credential (a header of
// a webhook, the token part of a Slack webhook URL, the password of a
// broker URL) is accepted, kept sealed, used by the worker, and never shown
// again: views hold its fingerprint in its place. A type says where its
// credentials sit (Kind.Secrets); package jobspec swaps them for
// fingerprints, and the worker swaps them back.

// A Spot is one credential in a payload: a whole string field (a header's
// value), or the part of one that carries it (a URL's password).
type Spot struct {
	// Path names the place within the payload, for errors and diffs:
	// "headers.Authorization", "url".
	Path string
	// Value is what sits there now: the credential, or its fingerprint.
	Value string
	set   func(string)
}

// Set puts v in the spot's place.
func (s *Spot) Set(v string) {
	s.set(v)
	s.Value = v
}

// Secrets are the credentials of one payload, found by its type.
type Secrets struct {
	// Spots are the credentials, in a stable order.
	Spots []*Spot
	// Destination is where the credentials are sent (a URL without them):
	// a fingerprint keeps its secret only while it stays the same.
	Destination string
	encode      func() (json.RawMessage, error)
	raw         json.RawMessage
}

// Encode returns the payload with whatever the spots now hold; the payload
// as it was when no spot changed.
func (s *Secrets) Encode(changed bool) (json.RawMessage, error) {
	if !changed {
		return s.raw, nil
	}
	return s.encode()
}

// NewSecrets are the credentials found in a value that is not a payload
// (a job's notify): its spots set the value in place, so Encode returns
// nothing.
func NewSecrets(dest string, spots []*Spot) *Secrets {
	return &Secrets{Spots: spots, Destination: dest, encode: func() (json.RawMessage, error) { return nil, nil }}
}

// SecretsOf finds the credentials of a payload of type t: none for a type
// that carries none. raw must be a payload that passed Validate.
func SecretsOf(t job.Type, raw json.RawMessage) (*Secrets, error) {
	k, ok := Lookup(t)
	if !ok || k.Secrets == nil {
		return &Secrets{raw: raw}, nil
	}
	s, err := k.Secrets(raw)
	if err != nil {
		return nil, err
	}
	s.raw = raw
	return s, nil
}

// secretsOf makes a Kind.Secrets of a function that finds the spots of a
// decoded payload: the payload is encoded back from P when a spot changes.
// A payload that does not hold mark (the JSON key its credentials sit
// under; "" for every payload) has none, and is not decoded.
func secretsOf[P any](find func(p *P) (dest string, spots []*Spot), mark string) func(json.RawMessage) (*Secrets, error) {
	return func(raw json.RawMessage) (*Secrets, error) {
		if mark != "" && !bytes.Contains(raw, []byte(mark)) {
			return &Secrets{}, nil
		}
		p := new(P)
		if err := json.Unmarshal(raw, p); err != nil {
			return nil, err
		}
		dest, spots := find(p)
		return &Secrets{Spots: spots, Destination: dest, encode: func() (json.RawMessage, error) { return encodeJSON(p) }}, nil
	}
}

// encodeJSON writes v compactly without escaping <, > and &, so a body
// given as JSON keeps its text.
func encodeJSON(v any) (json.RawMessage, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}

// PlainHeaders are the request headers whose values are shown: they carry
// no credential. Every other header of a webhook (Authorization, X-Api-Key,
// a custom one) is a secret.
var PlainHeaders = []string{"Accept", "Accept-Charset", "Accept-Encoding", "Accept-Language",
	"Cache-Control", "Content-Encoding", "Content-Language", "Content-Type"}

// HeaderSpots are the secret headers of h, under prefix ("headers"), by
// name.
func HeaderSpots(prefix string, h map[string]string) []*Spot {
	var out []*Spot
	for _, k := range sortedKeys(h) {
		if plainHeader(k) {
			continue
		}
		out = append(out, &Spot{Path: prefix + "." + k, Value: h[k], set: func(v string) { h[k] = v }})
	}
	return out
}

func plainHeader(k string) bool {
	c := http.CanonicalHeaderKey(k)
	for _, p := range PlainHeaders {
		if c == p {
			return true
		}
	}
	return false
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	for i := 1; i < len(keys); i++ {
		for j := i; j > 0 && keys[j] < keys[j-1]; j-- {
			keys[j], keys[j-1] = keys[j-1], keys[j]
		}
	}
	return keys
}

// URLTokenSpot is the secret part of a URL that is itself a credential (a
// Slack incoming webhook's): its last path segment with any query. The
// destination is the URL up to that segment.
func URLTokenSpot(path string, u *string) (dest string, spot *Spot) {
	raw := *u
	end := len(raw)
	if i := strings.IndexByte(raw, '#'); i >= 0 {
		end = i
	}
	start := strings.LastIndexByte(raw[:pathEnd(raw, end)], '/')
	if start < 0 || start < schemeEnd(raw) {
		return raw, nil
	}
	start++
	if start >= end {
		return raw, nil
	}
	prefix, suffix := raw[:start], raw[end:]
	return prefix, &Spot{Path: path, Value: raw[start:end], set: func(v string) { *u = prefix + v + suffix }}
}

// pathEnd is where the path of raw ends: at its query, or at end.
func pathEnd(raw string, end int) int {
	if i := strings.IndexByte(raw[:end], '?'); i >= 0 {
		return i
	}
	return end
}

// schemeEnd is the index just past "scheme://host", so that a URL
// without a path has no token.
func schemeEnd(raw string) int {
	i := strings.Index(raw, "://")
	if i < 0 {
		return 0
	}
	rest := raw[i+3:]
	if j := strings.IndexAny(rest, "/?#"); j >= 0 {
		return i + 3 + j
	}
	return len(raw)
}

// UserinfoSpot is the credential in a URL's userinfo: its password, or,
// with no password, its user (a token, as NATS takes one). The
// destination is the URL without it.
func UserinfoSpot(path string, u *string) (dest string, spot *Spot) {
	raw := *u
	parsed, err := url.Parse(raw)
	if err != nil || parsed.User == nil {
		return raw, nil
	}
	i := strings.Index(raw, "://")
	if i < 0 {
		return raw, nil
	}
	hostStart := i + 3
	authEnd := len(raw)
	if j := strings.IndexAny(raw[hostStart:], "/?#"); j >= 0 {
		authEnd = hostStart + j
	}
	at := strings.LastIndexByte(raw[hostStart:authEnd], '@')
	if at < 0 {
		return raw, nil
	}
	at += hostStart
	userinfo := raw[hostStart:at]
	head, tail := raw[:hostStart], raw[at:]
	dest = head + tail[1:]
	user, _, hasPass := strings.Cut(userinfo, ":")
	if hasPass {
		p, _ := parsed.User.Password()
		return head + user + "@" + tail[1:], &Spot{Path: path, Value: p, set: func(v string) {
			if !IsFingerprint(v) {
				// A fingerprint's ':' may stand in a password as it is;
				// anything else is escaped.
				v = escapeUserinfo(v)
			}
			*u = head + user + ":" + v + tail
		}}
	}
	return dest, &Spot{Path: path, Value: parsed.User.Username(), set: func(v string) {
		*u = head + escapeUserinfo(v) + tail
	}}
}

// escapeUserinfo escapes v for a URL's userinfo.
func escapeUserinfo(v string) string {
	s := url.UserPassword("x", v).String()
	return s[len("x:"):]
}

// FingerprintPrefix starts a secret's fingerprint in a view.
const FingerprintPrefix = "secret:sha256:"

var fingerprintRE = regexp.MustCompile(`^secret:sha256:[0-9a-f]{32}$`)

// IsFingerprint reports whether v is a secret's fingerprint, as a view
// shows it in the secret's place.
func IsFingerprint(v string) bool {
	return len(v) == len(FingerprintPrefix)+32 && fingerprintRE.MatchString(v)
}

// spots is the one spot found, as a list; none for nil.
func spots(s *Spot) []*Spot {
	if s == nil {
		return nil
	}
	return []*Spot{s}
}

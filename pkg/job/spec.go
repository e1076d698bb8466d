package job

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Spec is a job as a client asks for it: the body of POST /api/v1/jobs.
type Spec struct {
	Name       string          `json:"name"`
	Type       Type            `json:"type"`
	RunAt      *time.Time      `json:"run_at"`
	Payload    json.RawMessage `json:"payload"`
	Priority   *int            `json:"priority"`
	MaxRetries *int            `json:"max_retries"`
	Timeout    string          `json:"timeout"`
}

// WebhookPayload is the payload of a webhook job.
type WebhookPayload struct {
	URL     string            `json:"url"`
	Method  string            `json:"method,omitempty"`
	Headers map[string]string `json:"headers,omitempty"`
	Body    json.RawMessage   `json:"body,omitempty"`
}

// PingPayload is the payload of a ping job: a GET whose 2xx answer is success.
type PingPayload struct {
	URL string `json:"url"`
}

// Limits bounds what a Spec may ask for; the dashboard fills it from config.
type Limits struct {
	MaxPayloadBytes int
}

// DefaultLimits are the limits when the operator sets none.
var DefaultLimits = Limits{MaxPayloadBytes: 64 << 10}

// Build validates a Spec against the clock and returns the job it describes,
// owned by owner. Every error is a *FieldError naming the offending field.
func (s *Spec) Build(owner [16]byte, now time.Time, lim Limits) (*Job, error) {
	j := &Job{
		ID:         NewID(),
		Owner:      owner,
		Status:     StatusScheduled,
		MaxRetries: DefaultMaxRetries,
		Timeout:    DefaultTimeout,
		CreatedAt:  now,
		UpdatedAt:  now,
	}
	j.Name = strings.TrimSpace(s.Name)
	switch {
	case j.Name == "":
		return nil, invalid("name", "is required")
	case len(j.Name) > MaxNameLen:
		return nil, invalid("name", "is longer than %d bytes", MaxNameLen)
	}
	if s.Priority != nil {
		if *s.Priority < MinPriority || *s.Priority > MaxPriority {
			return nil, invalid("priority", "must be between %d and %d", MinPriority, MaxPriority)
		}
		j.Priority = *s.Priority
	}
	if s.MaxRetries != nil {
		if *s.MaxRetries < 0 || *s.MaxRetries > MaxRetriesLimit {
			return nil, invalid("max_retries", "must be between 0 and %d", MaxRetriesLimit)
		}
		j.MaxRetries = *s.MaxRetries
	}
	if s.Timeout != "" {
		d, err := time.ParseDuration(s.Timeout)
		if err != nil {
			return nil, invalid("timeout", "is not a duration such as 30s or 2m")
		}
		if d < MinTimeout || d > MaxTimeout {
			return nil, invalid("timeout", "must be between %s and %s", MinTimeout, MaxTimeout)
		}
		j.Timeout = d
	}
	if s.RunAt == nil {
		return nil, invalid("run_at", "is required (RFC 3339 with offset)")
	}
	j.RunAt = s.RunAt.UTC().Truncate(time.Millisecond)
	if j.RunAt.Before(now.Truncate(time.Millisecond)) {
		return nil, invalid("run_at", "is in the past")
	}
	j.DueAt = j.RunAt
	j.Type = s.Type
	payload, err := validatePayload(s.Type, s.Payload, lim)
	if err != nil {
		return nil, err
	}
	j.Payload = payload
	return j, nil
}

// validatePayload checks the payload against its type and returns it compacted.
func validatePayload(t Type, raw json.RawMessage, lim Limits) (json.RawMessage, error) {
	if t == "" {
		return nil, invalid("type", "is required")
	}
	if len(bytes.TrimSpace(raw)) == 0 || bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		return nil, invalid("payload", "is required")
	}
	if lim.MaxPayloadBytes > 0 && len(raw) > lim.MaxPayloadBytes {
		return nil, invalid("payload", "is larger than %d bytes", lim.MaxPayloadBytes)
	}
	switch t {
	case TypeWebhook:
		var p WebhookPayload
		if err := decodeStrict(raw, &p); err != nil {
			return nil, invalid("payload", "%s", err)
		}
		if err := checkURL("payload.url", p.URL); err != nil {
			return nil, err
		}
		if p.Method != "" {
			switch strings.ToUpper(p.Method) {
			case http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete, http.MethodHead:
			default:
				return nil, invalid("payload.method", "must be one of GET, POST, PUT, PATCH, DELETE, HEAD")
			}
		}
		for k, v := range p.Headers {
			if k == "" || strings.ContainsAny(k, "\r\n: ") || strings.ContainsAny(v, "\r\n") {
				return nil, invalid("payload.headers", "header %q is not a valid header", k)
			}
		}
	case TypePing:
		var p PingPayload
		if err := decodeStrict(raw, &p); err != nil {
			return nil, invalid("payload", "%s", err)
		}
		if err := checkURL("payload.url", p.URL); err != nil {
			return nil, err
		}
	case TypeSlack, TypeEmail:
		return nil, invalid("type", "%q is not available yet; use webhook or ping", t)
	default:
		return nil, invalid("type", "must be webhook or ping")
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return nil, invalid("payload", "is not valid JSON")
	}
	return buf.Bytes(), nil
}

func decodeStrict(raw json.RawMessage, v any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("does not match its type: %s", strings.TrimPrefix(err.Error(), "json: "))
	}
	return nil
}

// checkURL accepts only absolute http(s) URLs with a host. Whether the host may
// be dialled is decided at connect time by the worker's guard, not here: a name
// can resolve differently later.
func checkURL(field, raw string) error {
	if raw == "" {
		return invalid(field, "is required")
	}
	u, err := url.Parse(raw)
	if err != nil {
		return invalid(field, "is not a URL")
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return invalid(field, "must use http or https")
	}
	if u.Hostname() == "" {
		return invalid(field, "must have a host")
	}
	if u.User != nil {
		return invalid(field, "must not carry credentials; use headers")
	}
	return nil
}

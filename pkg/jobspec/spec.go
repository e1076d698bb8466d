// Package jobspec turns what a client asks for (the body of POST or PATCH
// /api/v1/jobs) into a valid job.Job, with one field-level error per problem.
// The dashboard, the bulk API and generate-load all build jobs through it.
package jobspec

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/mail"
	"net/netip"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/tockhq/tock/pkg/job"
	"github.com/tockhq/tock/pkg/outbound"
	"github.com/tockhq/tock/pkg/schedule"
)

// Spec is a job as a client asks for it. A job runs once (run_at, delay, or
// run_on with timezone) or recurs (schedule), never both.
type Spec struct {
	Name       string          `json:"name"`
	Type       job.Type        `json:"type"`
	RunAt      *time.Time      `json:"run_at"`
	Delay      string          `json:"delay"`
	RunOn      string          `json:"run_on"`
	Timezone   string          `json:"timezone"`
	Schedule   *schedule.Spec  `json:"schedule"`
	Payload    json.RawMessage `json:"payload"`
	Priority   *int            `json:"priority"`
	MaxRetries *int            `json:"max_retries"`
	Timeout    string          `json:"timeout"`
}

// Limits bounds what a Spec may ask for; the dashboard fills it from config.
type Limits struct {
	MaxPayloadBytes int
	// Targets is the worker's outbound policy (TOCK_ALLOW_PRIVATE_TARGETS,
	// TOCK_ALLOWED_TARGET_CIDRS): a URL whose host is an address the worker
	// would refuse to dial, or a name that always means loopback, is refused
	// when the job is created rather than at every run.
	Targets outbound.Options
}

// DefaultLimits are the limits when the operator sets none.
var DefaultLimits = Limits{MaxPayloadBytes: 64 << 10}

// MaxDelay bounds how far ahead a delay may reach.
const MaxDelay = 10 * 366 * 24 * time.Hour

func invalid(field, format string, args ...any) error {
	return &job.FieldError{Field: field, Message: fmt.Sprintf(format, args...)}
}

// Build validates a Spec against the clock and returns the job it describes,
// owned by owner. Every error is a *job.FieldError naming the offending field.
// Its schedule work has a budget of its own; see BuildWithin.
func (s *Spec) Build(owner [16]byte, now time.Time, lim Limits) (*job.Job, error) {
	return s.BuildWithin(schedule.RequestBudget(context.Background()), owner, now, lim)
}

// BuildWithin is Build spending from b for the schedule's evaluation: a rule
// that needs more is refused on its field as too expensive to evaluate, and
// the end of b's context ends the work (its error is returned as it is).
func (s *Spec) BuildWithin(b *schedule.Budget, owner [16]byte, now time.Time, lim Limits) (*job.Job, error) {
	now = now.UTC().Truncate(time.Millisecond)
	j := &job.Job{
		ID:         job.NewID(),
		Owner:      owner,
		Status:     job.StatusScheduled,
		MaxRetries: job.DefaultMaxRetries,
		Timeout:    job.DefaultTimeout,
		CreatedAt:  now,
		UpdatedAt:  now,
	}
	name, err := validName(s.Name)
	if err != nil {
		return nil, err
	}
	j.Name = name
	if err := s.applyOptions(j); err != nil {
		return nil, err
	}
	if err := s.applyTiming(j, now, b); err != nil {
		return nil, err
	}
	j.Type = s.Type
	payload, err := ValidatePayload(s.Type, s.Payload, lim)
	if err != nil {
		return nil, err
	}
	j.Payload = payload
	return j, nil
}

// applyOptions sets priority, max_retries and timeout when given.
func (s *Spec) applyOptions(j *job.Job) error {
	if s.Priority != nil {
		if *s.Priority < job.MinPriority || *s.Priority > job.MaxPriority {
			return invalid("priority", "must be between %d and %d", job.MinPriority, job.MaxPriority)
		}
		j.Priority = *s.Priority
	}
	if s.MaxRetries != nil {
		if *s.MaxRetries < 0 || *s.MaxRetries > job.MaxRetriesLimit {
			return invalid("max_retries", "must be between 0 and %d", job.MaxRetriesLimit)
		}
		j.MaxRetries = *s.MaxRetries
	}
	if s.Timeout != "" {
		d, err := time.ParseDuration(s.Timeout)
		if err != nil {
			return invalid("timeout", "is not a duration such as 30s or 2m")
		}
		if d < job.MinTimeout || d > job.MaxTimeout {
			return invalid("timeout", "must be between %s and %s", job.MinTimeout, job.MaxTimeout)
		}
		j.Timeout = d
	}
	return nil
}

// applyTiming sets when the job runs: RunAt for one run, Schedule for a
// recurrence, and DueAt, the first occurrence, either way. A recurrence
// starts from now: with a start_at in the past, the occurrences before now
// are neither run nor recorded as missed (they only spend its count), so no
// start_at makes the loader walk through years of misfires.
func (s *Spec) applyTiming(j *job.Job, now time.Time, b *schedule.Budget) error {
	given := 0
	for _, set := range []bool{s.RunAt != nil, s.Delay != "", s.RunOn != "", s.Schedule != nil} {
		if set {
			given++
		}
	}
	switch {
	case given == 0:
		return invalid("run_at", "one of run_at, delay, run_on or schedule is required")
	case given > 1:
		field := "schedule"
		if s.Schedule == nil {
			field = "run_at"
		}
		return invalid(field, "give only one of run_at, delay, run_on or schedule")
	}
	zone := time.UTC
	if s.Timezone != "" {
		if s.Schedule != nil {
			return invalid("timezone", "goes inside schedule for a recurring job")
		}
		loc, err := time.LoadLocation(s.Timezone)
		if err != nil || s.Timezone == "Local" {
			return invalid("timezone", "is not an IANA time zone such as Europe/Berlin")
		}
		zone, j.Timezone = loc, s.Timezone
	}
	switch {
	case s.RunAt != nil:
		j.RunAt = s.RunAt.UTC().Truncate(time.Millisecond)
		if j.RunAt.Before(now) {
			return invalid("run_at", "is in the past")
		}
	case s.Delay != "":
		d, err := ParseDelay(s.Delay)
		if err != nil {
			return invalid("delay", "%s", err)
		}
		j.RunAt = now.Add(d)
	case s.RunOn != "":
		if s.Timezone == "" {
			return invalid("timezone", "is required with run_on (the date's local midnight)")
		}
		day, err := time.ParseInLocation("2006-01-02", s.RunOn, zone)
		if err != nil {
			return invalid("run_on", "is not a date such as 2026-12-24")
		}
		j.RunAt = day.UTC()
		if j.RunAt.Before(now) {
			return invalid("run_on", "is in the past")
		}
	default:
		sched, err := s.Schedule.CompileWithin(b, now)
		if err != nil {
			return err
		}
		first, ok := sched.Next(now.Add(-time.Millisecond))
		used := sched.UsedBefore(first)
		perHour := sched.PerHour(now.Add(-time.Millisecond))
		if err := sched.Err(); err != nil {
			return s.Schedule.BudgetError(err)
		}
		if !ok || sched.Count() > 0 && used >= sched.Count() {
			return invalid("schedule", "has no occurrence from now on")
		}
		raw, err := json.Marshal(sched.Spec())
		if err != nil {
			return fmt.Errorf("encode schedule: %w", err)
		}
		j.Schedule, j.Timezone, j.DueAt = raw, sched.Location().String(), first
		j.Occurrences, j.PerHour = used, perHour
		return nil
	}
	if j.Timezone == "" {
		j.Timezone = "UTC"
	}
	j.DueAt = j.RunAt
	return nil
}

// validName trims a job name and checks it is present and not too long.
func validName(name string) (string, error) {
	n := strings.TrimSpace(name)
	switch {
	case n == "":
		return "", invalid("name", "is required")
	case len(n) > job.MaxNameLen:
		return "", invalid("name", "is longer than %d bytes", job.MaxNameLen)
	}
	return n, nil
}

var delayRE = regexp.MustCompile(`^(?:(\d+)d)?(.*)$`)

// ParseDelay reads a delay such as 90s, 2h30m, 15d or 1d12h: a Go duration,
// optionally preceded by whole days. Zero runs at once.
func ParseDelay(s string) (time.Duration, error) {
	m := delayRE.FindStringSubmatch(strings.TrimSpace(s))
	if m == nil || (m[1] == "" && m[2] == "") {
		return 0, fmt.Errorf("is not a delay such as 90s, 2h30m or 15d")
	}
	var d time.Duration
	if m[1] != "" {
		days, err := strconv.Atoi(m[1])
		if err != nil || days > int(MaxDelay/(24*time.Hour)) {
			return 0, fmt.Errorf("is longer than %d days", int(MaxDelay/(24*time.Hour)))
		}
		d = time.Duration(days) * 24 * time.Hour
	}
	if m[2] != "" {
		rest, err := time.ParseDuration(m[2])
		if err != nil {
			return 0, fmt.Errorf("is not a delay such as 90s, 2h30m or 15d")
		}
		d += rest
	}
	switch {
	case d < 0:
		return 0, fmt.Errorf("is negative")
	case d > MaxDelay:
		return 0, fmt.Errorf("is longer than %d days", int(MaxDelay/(24*time.Hour)))
	}
	return d, nil
}

// ValidatePayload checks the payload against its type and returns it compacted.
func ValidatePayload(t job.Type, raw json.RawMessage, lim Limits) (json.RawMessage, error) {
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
	case job.TypeWebhook:
		var p job.WebhookPayload
		if err := decodeStrict(raw, &p); err != nil {
			return nil, invalid("payload", "%s", err)
		}
		if err := CheckURL("payload.url", p.URL, lim.Targets); err != nil {
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
		if _, err := job.ParseStatusSet(p.ExpectStatus); err != nil {
			return nil, invalid("payload.expect_status", "%s", err)
		}
		if len(p.ExpectBody) > 1024 {
			return nil, invalid("payload.expect_body", "is longer than 1024 bytes")
		}
	case job.TypePing:
		var p job.PingPayload
		if err := decodeStrict(raw, &p); err != nil {
			return nil, invalid("payload", "%s", err)
		}
		if err := CheckURL("payload.url", p.URL, lim.Targets); err != nil {
			return nil, err
		}
		if _, err := job.ParseStatusSet(p.ExpectStatus); err != nil {
			return nil, invalid("payload.expect_status", "%s", err)
		}
	case job.TypeSlack:
		if err := checkSlack(raw, lim.Targets); err != nil {
			return nil, err
		}
	case job.TypeEmail:
		if err := checkEmail(raw); err != nil {
			return nil, err
		}
	default:
		return nil, invalid("type", "must be one of webhook, ping, slack, email")
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return nil, invalid("payload", "is not valid JSON")
	}
	return buf.Bytes(), nil
}

// checkSlack validates a slack payload: a webhook URL, and text or blocks
// within Slack's limits, so that a job Slack would refuse is refused at once
// rather than failing at every run.
func checkSlack(raw json.RawMessage, targets outbound.Options) error {
	var p job.SlackPayload
	if err := decodeStrict(raw, &p); err != nil {
		return invalid("payload", "%s", err)
	}
	if err := CheckURL("payload.webhook_url", p.WebhookURL, targets); err != nil {
		return err
	}
	blocks := 0
	if b := bytes.TrimSpace(p.Blocks); len(b) > 0 && !bytes.Equal(b, []byte("null")) {
		var list []map[string]json.RawMessage
		if err := json.Unmarshal(b, &list); err != nil || slices.ContainsFunc(list, func(m map[string]json.RawMessage) bool { return m == nil }) {
			return invalid("payload.blocks", "must be an array of Block Kit objects")
		}
		if len(list) > job.MaxSlackBlocks {
			return invalid("payload.blocks", "has more than %d blocks", job.MaxSlackBlocks)
		}
		blocks = len(list)
	}
	switch {
	case strings.TrimSpace(p.Text) == "" && blocks == 0:
		return invalid("payload.text", "is required unless blocks are given")
	case utf8.RuneCountInString(p.Text) > job.MaxSlackTextLen:
		return invalid("payload.text", "is longer than %d characters", job.MaxSlackTextLen)
	}
	return nil
}

// checkEmail validates an email payload. It refuses header injection: no CR
// or LF in the subject or in any address, including a display name that
// decodes to one (an RFC 2047 encoded word can hide a line break).
func checkEmail(raw json.RawMessage) error {
	var p job.EmailPayload
	if err := decodeStrict(raw, &p); err != nil {
		return invalid("payload", "%s", err)
	}
	if len(p.To) == 0 {
		return invalid("payload.to", "needs at least one recipient")
	}
	if n := len(p.To) + len(p.Cc) + len(p.Bcc); n > job.MaxEmailRecipients {
		return invalid("payload.to", "to, cc and bcc have %d recipients; at most %d are allowed", n, job.MaxEmailRecipients)
	}
	for _, list := range []struct {
		field string
		addrs []string
	}{{"payload.to", p.To}, {"payload.cc", p.Cc}, {"payload.bcc", p.Bcc}} {
		for i, a := range list.addrs {
			if err := checkAddress(a); err != nil {
				return invalid(list.field, "recipient %d %s", i+1, err)
			}
		}
	}
	if p.ReplyTo != "" {
		if err := checkAddress(p.ReplyTo); err != nil {
			return invalid("payload.reply_to", "%s", err)
		}
	}
	switch {
	case strings.TrimSpace(p.Subject) == "":
		return invalid("payload.subject", "is required")
	case strings.ContainsAny(p.Subject, "\r\n"):
		return invalid("payload.subject", "must not contain a line break")
	case strings.ContainsFunc(p.Subject, func(r rune) bool { return r != '\t' && isControl(r) }):
		return invalid("payload.subject", "must not contain a control character")
	case len(p.Subject) > job.MaxEmailSubjectLen:
		return invalid("payload.subject", "is longer than %d bytes", job.MaxEmailSubjectLen)
	}
	if strings.TrimSpace(p.Text) == "" && strings.TrimSpace(p.HTML) == "" {
		return invalid("payload.text", "text or html is required")
	}
	return nil
}

// checkAddress accepts one RFC 5322 address, with or without a display name,
// that carries no control character before or after decoding.
func checkAddress(s string) error {
	if hasControl(s) {
		return fmt.Errorf("must not contain a line break or control character")
	}
	a, err := mail.ParseAddress(s)
	if err != nil {
		return fmt.Errorf("is not an email address such as ops@example.com")
	}
	if hasControl(a.Name) || hasControl(a.Address) {
		return fmt.Errorf("must not contain a line break or control character")
	}
	return nil
}

// hasControl reports whether s holds a control character, CR and LF among them.
func hasControl(s string) bool { return strings.ContainsFunc(s, isControl) }

// isControl reports whether r is an ASCII control character or DEL.
func isControl(r rune) bool { return r < 0x20 || r == 0x7f }

func decodeStrict(raw json.RawMessage, v any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("does not match its type: %s", strings.TrimPrefix(err.Error(), "json: "))
	}
	return nil
}

// CheckURL accepts only absolute http(s) URLs with a host that targets allows.
// A host written as an address is checked here with the worker's own guard, and
// so is localhost; any other name is checked at connect time by the worker's
// guard, since a name can resolve differently later.
func CheckURL(field, raw string, targets outbound.Options) error {
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
	if err := checkHost(u.Hostname(), targets); err != nil {
		return invalid(field, "%s", err)
	}
	return nil
}

// checkHost refuses a host the worker could never be allowed to reach: an
// address its guard denies, or localhost and its subdomains, which always
// resolve to loopback (RFC 6761).
func checkHost(host string, targets outbound.Options) error {
	name := strings.ToLower(host)
	addr, err := netip.ParseAddr(name)
	if err != nil {
		if strings.ContainsAny(name, ":%") {
			return fmt.Errorf("is not a valid IPv6 address")
		}
		// A name may end in the root's dot, and so may an IPv4 address
		// written as one ("127.0.0.1.").
		name = strings.TrimSuffix(name, ".")
		switch a, err := netip.ParseAddr(name); {
		case err == nil:
			addr = a
		case name == "localhost" || strings.HasSuffix(name, ".localhost"):
			addr = netip.IPv6Loopback()
		default:
			return nil
		}
	}
	if err := outbound.Check(addr, targets); err != nil {
		var denied *outbound.DeniedError
		if errors.As(err, &denied) {
			return fmt.Errorf("names a %s address, which tock does not call (an operator can allow it with TOCK_ALLOW_PRIVATE_TARGETS or TOCK_ALLOWED_TARGET_CIDRS)", denied.Reason)
		}
		return err
	}
	return nil
}

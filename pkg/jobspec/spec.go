// Package jobspec turns what a client asks for (the body of POST or PATCH
// /api/v1/jobs) into a valid job.Job, with one field-level error per problem.
// The dashboard, the bulk API and generate-load all build jobs through it.
package jobspec

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/tockhq/tock/pkg/job"
	"github.com/tockhq/tock/pkg/jobtype"
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
	// Retention is how long the job is kept once finished, as a delay
	// ("90d", "36h"); empty for the operator's default.
	Retention string `json:"retention"`
	// History is "all" (the default) or "failures".
	History string `json:"history"`
	// Labels are the caller's own references, at most 20 pairs.
	Labels map[string]string `json:"labels"`
	// Key is the caller's own name for the job, unique among their jobs
	// that can still run.
	Key string `json:"key"`
	// ExpiresAfter is how late an attempt may start, as a delay ("15m");
	// later, it is recorded expired and not run.
	ExpiresAfter string `json:"expires_after"`
	// Overlap is a recurring job's overlap policy: allow, skip or buffer_one.
	Overlap string `json:"overlap"`
	// Notify sends alerts on the job's failures.
	Notify *job.Notify `json:"notify"`
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
		History:    job.HistoryAll,
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
	if j.Overlap != "" && !j.Recurring() {
		return nil, invalid("overlap", "applies to recurring jobs only")
	}
	if s.Notify != nil {
		n, err := ValidNotify(s.Notify, lim)
		if err != nil {
			return nil, err
		}
		j.Notify = n
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
	if s.Retention != "" {
		d, err := parseRetention(s.Retention)
		if err != nil {
			return err
		}
		j.Retention = d
	}
	if s.History != "" {
		h, err := parseHistory(s.History)
		if err != nil {
			return err
		}
		j.History = h
	}
	if s.Key != "" {
		if err := ValidKey(s.Key); err != nil {
			return err
		}
		j.Key = s.Key
	}
	if s.Labels != nil {
		labels, err := ValidLabels(s.Labels)
		if err != nil {
			return err
		}
		j.Labels = labels
	}
	if s.ExpiresAfter != "" {
		d, err := ParseDelay(s.ExpiresAfter)
		if err != nil {
			return invalid("expires_after", "is not a duration such as 90s, 15m or 2h")
		}
		if d < job.MinExpiresAfter || d > job.MaxExpiresAfter {
			return invalid("expires_after", "must be between %s and %d days", job.MinExpiresAfter, int(job.MaxExpiresAfter/(24*time.Hour)))
		}
		j.ExpiresAfter = d
	}
	if s.Overlap != "" {
		switch o := job.Overlap(s.Overlap); o {
		case job.OverlapAllow:
			j.Overlap = ""
		case job.OverlapSkip, job.OverlapBufferOne:
			j.Overlap = o
		default:
			return invalid("overlap", "must be %q, %q or %q", job.OverlapAllow, job.OverlapSkip, job.OverlapBufferOne)
		}
	}
	return nil
}

// ValidNotify checks a job's alerting: one or more known events, each
// once, and exactly one destination, which must pass the checks of the job
// type that delivers it (the webhook's URL and headers, the Slack URL, the
// addresses) under the worker's outbound policy. It returns it with the
// events deduplicated, or nil when it asks for no event (which removes
// alerting from a job on PATCH).
func ValidNotify(n *job.Notify, lim Limits) (*job.Notify, error) {
	if len(n.On) == 0 {
		if n.Webhook != nil || n.Slack != nil || n.Email != nil {
			return nil, invalid("notify.on", "must name at least one event: %s", notifyEventList())
		}
		return nil, nil
	}
	out := &job.Notify{Webhook: n.Webhook, Slack: n.Slack, Email: n.Email}
	for _, e := range n.On {
		known := false
		for _, k := range job.NotifyEvents {
			known = known || k == e
		}
		if !known {
			return nil, invalid("notify.on", "must hold events among %s", notifyEventList())
		}
		if !out.Wants(e) {
			out.On = append(out.On, e)
		}
	}
	dests := 0
	for _, set := range []bool{n.Webhook != nil, n.Slack != nil, n.Email != nil} {
		if set {
			dests++
		}
	}
	if dests != 1 {
		return nil, invalid("notify", "must have exactly one of webhook, slack and email")
	}
	t, payload, err := jobtype.AlertTask(out, jobtype.Alert{Event: job.NotifyFailed, Job: jobtype.AlertJob{Name: "check"}})
	if err != nil {
		return nil, invalid("notify", "%s", err)
	}
	if _, err := jobtype.Validate(t, payload, 0, lim.Targets); err != nil {
		var fe *job.FieldError
		if errors.As(err, &fe) {
			return nil, invalid(notifyField(out, fe.Field), "%s", fe.Message)
		}
		return nil, err
	}
	return out, nil
}

// notifyField names, in notify's terms, the field a job type's check
// refused ("payload.url" of the webhook is "notify.webhook.url").
func notifyField(n *job.Notify, field string) string {
	rest := strings.TrimPrefix(strings.TrimPrefix(field, "payload"), ".")
	switch {
	case n.Webhook != nil:
		return strings.TrimSuffix("notify.webhook."+rest, ".")
	case n.Slack != nil:
		return strings.TrimSuffix("notify.slack."+rest, ".")
	}
	return strings.TrimSuffix("notify.email."+rest, ".")
}

func notifyEventList() string {
	names := make([]string, len(job.NotifyEvents))
	for i, e := range job.NotifyEvents {
		names[i] = string(e)
	}
	return strings.Join(names, ", ")
}

// ValidKey checks a job's key: 1 to 200 characters, none of them a
// control character, a space or '/', so that it names the job in a path.
func ValidKey(k string) error {
	if k == "" || utf8.RuneCountInString(k) > job.MaxKeyLen || !utf8.ValidString(k) {
		return invalid("key", "must be 1 to %d characters", job.MaxKeyLen)
	}
	if strings.IndexFunc(k, func(r rune) bool { return unicode.IsControl(r) || unicode.IsSpace(r) || r == '/' }) >= 0 {
		return invalid("key", "must not hold spaces, control characters or '/'")
	}
	return nil
}

// ValidLabels checks a job's labels: at most job.MaxLabels pairs, keys of
// [a-z0-9_.-] up to 63 long, values up to 200 characters without control
// characters. It returns them, nil when there are none.
func ValidLabels(m map[string]string) (map[string]string, error) {
	if len(m) > job.MaxLabels {
		return nil, invalid("labels", "at most %d labels", job.MaxLabels)
	}
	if len(m) == 0 {
		return nil, nil
	}
	for k, v := range m {
		if !job.ValidLabelKey(k) {
			return nil, invalid("labels", "key %q must be 1 to %d of a-z, 0-9, '_', '.' and '-'", k, job.MaxLabelKey)
		}
		if utf8.RuneCountInString(v) > job.MaxLabelValue {
			return nil, invalid("labels."+k, "must be at most %d characters", job.MaxLabelValue)
		}
		if strings.IndexFunc(v, unicode.IsControl) >= 0 || !utf8.ValidString(v) {
			return nil, invalid("labels."+k, "must be text without control characters")
		}
	}
	return m, nil
}

// parseRetention reads a job's retention, written as a delay is.
func parseRetention(s string) (time.Duration, error) {
	d, err := ParseDelay(s)
	if err != nil {
		return 0, invalid("retention", "is not a duration such as 90d or 36h")
	}
	if d < job.MinRetention || d > job.MaxRetention {
		return 0, invalid("retention", "must be between %s and %d days", job.MinRetention, int(job.MaxRetention/(24*time.Hour)))
	}
	return d, nil
}

func parseHistory(s string) (job.History, error) {
	switch h := job.History(s); h {
	case job.HistoryAll, job.HistoryFailures:
		return h, nil
	}
	return "", invalid("history", "must be %q or %q", job.HistoryAll, job.HistoryFailures)
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
		load := sched.Load(now.Add(-time.Millisecond), used)
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
		j.Occurrences, j.PerHour, j.Load = used, perHour, &load
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
	return jobtype.Validate(t, raw, lim.MaxPayloadBytes, lim.Targets)
}

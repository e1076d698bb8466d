// Package jobspec holds a job's fields, declared once (Fields), and turns
// what a client asks for (the body of POST /api/v1/jobs, PATCH
// /api/v1/jobs/{id} or PUT /api/v1/jobs/by-key/{key}) into a valid job.Job
// or a change of one, with one field-level error per problem. The store's
// column lists, the API's views, its OpenAPI document, the dry run's diff
// and the audit log are derived from the same table. The dashboard, the
// bulk API and generate-load all build jobs through it.
package jobspec

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/tockhq/tock/pkg/calendar"
	"github.com/tockhq/tock/pkg/job"
	"github.com/tockhq/tock/pkg/jobtype"
	"github.com/tockhq/tock/pkg/outbound"
	"github.com/tockhq/tock/pkg/secretbox"
)

// Limits bounds what a request may ask for; the dashboard fills it from config.
type Limits struct {
	MaxPayloadBytes int
	// Targets is the worker's outbound policy (TOCK_ALLOW_PRIVATE_TARGETS,
	// TOCK_ALLOWED_TARGET_CIDRS): a URL whose host is an address the worker
	// would refuse to dial, or a name that always means loopback, is refused
	// when the job is created rather than at every run.
	Targets outbound.Options
	// Box seals the credentials of payloads and notify (TOCK_SECRET_KEY)
	// and fingerprints them for views; nil keeps them in clear, with plain
	// SHA-256 fingerprints.
	Box *secretbox.Box
}

// DefaultLimits are the limits when the operator sets none.
var DefaultLimits = Limits{MaxPayloadBytes: 64 << 10}

// MaxDelay bounds how far ahead a delay may reach.
const MaxDelay = 10 * 366 * 24 * time.Hour

func invalid(field, format string, args ...any) error {
	return &job.FieldError{Field: field, Message: fmt.Sprintf(format, args...)}
}

// ValidNotify checks a job's alerting: one or more known events, each
// once, and exactly one destination, which must pass the checks of the job
// type that delivers it (the webhook's URL and headers, the Slack URL, the
// addresses) under the worker's outbound policy. It returns it with the
// events deduplicated, or nil when it asks for no event (which removes
// alerting from a job on PATCH).
func ValidNotify(n *job.Notify, lim Limits) (*job.Notify, error) {
	if len(n.On) == 0 {
		if n.Webhook != nil || n.Slack != nil || n.Email != nil || n.Callback != nil {
			return nil, invalid("notify.on", "must name at least one event: %s", notifyEventList())
		}
		return nil, nil
	}
	out := &job.Notify{Webhook: n.Webhook, Slack: n.Slack, Email: n.Email, Callback: n.Callback}
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
	for _, set := range []bool{n.Webhook != nil, n.Slack != nil, n.Email != nil, n.Callback != nil} {
		if set {
			dests++
		}
	}
	if dests != 1 {
		return nil, invalid("notify", "must have exactly one of webhook, slack, email and callback")
	}
	if out.Callback != nil {
		for _, e := range out.On {
			if !slices.Contains(job.CallbackEvents, e) {
				return nil, invalid("notify.on", "a callback is sent on an attempt's outcome or on the SLO's events: %s, not %s", eventList(job.CallbackEvents), e)
			}
		}
	}
	t, payload, err := jobtype.AlertTask(out, jobtype.Alert{Event: job.NotifyFailed, Job: jobtype.AlertJob{Name: "check"}})
	if err != nil {
		return nil, invalid("notify", "%s", err)
	}
	if _, err := jobtype.Validate(t, payload, 0, lim.Targets); err != nil {
		var fe *job.FieldError
		if errors.As(err, &fe) {
			return nil, invalid(notifyPath(out, fe.Field), "%s", fe.Message)
		}
		return nil, err
	}
	return out, nil
}

// notifyField names, in notify's terms, the field a job type's check
// refused ("payload.url" of the webhook is "notify.webhook.url").
func notifyPath(n *job.Notify, field string) string {
	rest := strings.TrimPrefix(strings.TrimPrefix(field, "payload"), ".")
	switch {
	case n.Webhook != nil:
		return strings.TrimSuffix("notify.webhook."+rest, ".")
	case n.Slack != nil:
		return strings.TrimSuffix("notify.slack."+rest, ".")
	case n.Callback != nil:
		return strings.TrimSuffix("notify.callback."+rest, ".")
	}
	return strings.TrimSuffix("notify.email."+rest, ".")
}

func notifyEventList() string { return eventList(job.NotifyEvents) }

func eventList(events []job.NotifyEvent) string {
	names := make([]string, len(events))
	for i, e := range events {
		names[i] = string(e)
	}
	return strings.Join(names, ", ")
}

// ValidKey checks a job's key: 1 to 200 characters, Showable, none of them
// a space or '/', so that it names the job in a path.
func ValidKey(k string) error {
	if k == "" || utf8.RuneCountInString(k) > job.MaxKeyLen || !utf8.ValidString(k) {
		return invalid("key", "must be 1 to %d characters", job.MaxKeyLen)
	}
	if !Showable(k) || strings.IndexFunc(k, func(r rune) bool { return unicode.IsSpace(r) || r == '/' }) >= 0 {
		return invalid("key", "must not hold spaces, '/', control characters or bidirectional formatting characters")
	}
	return nil
}

// ValidLabels checks a job's labels: at most job.MaxLabels pairs, keys of
// [a-z0-9_.-] up to 63 long, values up to 200 characters, Showable. It
// returns them, nil when there are none.
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
		if !Showable(v) {
			return nil, invalid("labels."+k, NotShowable)
		}
	}
	return m, nil
}

func parseHistory(s string) (job.History, error) {
	switch h := job.History(s); h {
	case job.HistoryAll, job.HistoryFailures:
		return h, nil
	}
	return "", invalid("history", "must be %q or %q", job.HistoryAll, job.HistoryFailures)
}

// validName trims a job name and checks it is present, not too long, and
// Showable as sent, as a label value (never trimmed) is: a control
// character is refused wherever it stands, a trailing line feed included.
func validName(name string) (string, error) {
	n := strings.TrimSpace(name)
	switch {
	case n == "":
		return "", invalid("name", "is required")
	case len(n) > job.MaxNameLen:
		return "", invalid("name", "is longer than %d bytes", job.MaxNameLen)
	case !Showable(name):
		return "", invalid("name", NotShowable)
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

// ParseFlow reads a job's flow: nil for {} or null.
func ParseFlow(raw json.RawMessage) (*job.Flow, error) {
	type flowIn struct {
		Key         string `json:"key"`
		Concurrency *int   `json:"concurrency"`
		Rate        string `json:"rate"`
	}
	var in flowIn
	if err := decodeValue("flow", raw, &in); err != nil {
		return nil, err
	}
	if in == (flowIn{}) {
		return nil, nil
	}
	if err := ValidFlowKey("flow.key", in.Key); err != nil {
		return nil, err
	}
	f := &job.Flow{Key: in.Key}
	if c := in.Concurrency; c != nil {
		if *c < 1 || *c > job.MaxFlowConcurrency {
			return nil, invalid("flow.concurrency", "must be from 1 to %d", job.MaxFlowConcurrency)
		}
		f.Concurrency = *c
	}
	if in.Rate != "" {
		r, err := job.ParseRate(in.Rate)
		if err != nil {
			return nil, invalid("flow.rate", "%s", err.Error())
		}
		f.Rate = &r
	}
	return f, nil
}

// ValidFlowKey checks a flow key given as field: 1 to job.MaxFlowKeyLen
// characters, no spaces, '/' (it names a path segment), control or
// bidirectional formatting characters.
func ValidFlowKey(field, k string) error {
	if k == "" || utf8.RuneCountInString(k) > job.MaxFlowKeyLen || !utf8.ValidString(k) {
		return invalid(field, "must be 1 to %d characters", job.MaxFlowKeyLen)
	}
	if !Showable(k) || strings.IndexFunc(k, func(r rune) bool { return unicode.IsSpace(r) || r == '/' }) >= 0 {
		return invalid(field, "must not hold spaces, '/', control characters or bidirectional formatting characters")
	}
	return nil
}

// ParseDebounce reads a job's debounce: nil for {} or null.
func ParseDebounce(raw json.RawMessage) (*job.Debounce, error) {
	type debounceIn struct {
		Key    string `json:"key"`
		Window string `json:"window"`
	}
	var in debounceIn
	if err := decodeValue("debounce", raw, &in); err != nil {
		return nil, err
	}
	if in == (debounceIn{}) {
		return nil, nil
	}
	if err := ValidFlowKey("debounce.key", in.Key); err != nil {
		return nil, err
	}
	if in.Window == "" {
		return nil, invalid("debounce.window", "is required")
	}
	w, err := time.ParseDuration(strings.TrimSpace(in.Window))
	if err != nil || w < job.MinDebounceWindow || w > job.MaxDebounceWindow {
		return nil, invalid("debounce.window", "must be a duration from 10ms to 24h, such as \"3s\"")
	}
	return &job.Debounce{Key: in.Key, Window: w}, nil
}

// ParseSkipCalendars reads a job's skip_calendars: at most
// calendar.MaxPerJob distinct calendar names, nil for none.
func ParseSkipCalendars(raw json.RawMessage) ([]string, error) {
	var names []string
	if err := decodeValue("skip_calendars", raw, &names); err != nil {
		return nil, err
	}
	if len(names) > calendar.MaxPerJob {
		return nil, invalid("skip_calendars", "names at most %d calendars", calendar.MaxPerJob)
	}
	for i, n := range names {
		if !calendar.ValidName(n) {
			return nil, invalid(fmt.Sprintf("skip_calendars[%d]", i), "is not a calendar name: 1 to 63 of a-z, 0-9, _, . and -, starting with a letter or digit")
		}
		if slices.Contains(names[:i], n) {
			return nil, invalid(fmt.Sprintf("skip_calendars[%d]", i), "names %q twice", n)
		}
	}
	if len(names) == 0 {
		return nil, nil
	}
	return names, nil
}

// ParseSLO reads a job's slo: late_after a Go duration from 1ms to 24h,
// silent_after a duration from 1s to 366 days (ParseDelay's forms), both
// optional; {} is none.
func ParseSLO(raw json.RawMessage) (job.SLO, error) {
	var in struct {
		LateAfter   *string `json:"late_after"`
		SilentAfter *string `json:"silent_after"`
	}
	if err := decodeValue("slo", raw, &in); err != nil {
		return job.SLO{}, err
	}
	var slo job.SLO
	if in.LateAfter != nil {
		d, err := time.ParseDuration(*in.LateAfter)
		if err != nil {
			return job.SLO{}, invalid("slo.late_after", "is not a duration such as 500ms or 5s")
		}
		if d < job.MinLateAfter || d > job.MaxLateAfter {
			return job.SLO{}, invalid("slo.late_after", "must be between %s and %s", job.MinLateAfter, job.MaxLateAfter)
		}
		slo.LateAfter = d.Truncate(time.Millisecond)
	}
	if in.SilentAfter != nil {
		d, err := ParseDelay(*in.SilentAfter)
		if err != nil {
			return job.SLO{}, invalid("slo.silent_after", "is not a duration such as 10m, 36h or 2d")
		}
		if d < job.MinSilentAfter || d > job.MaxSilentAfter {
			return job.SLO{}, invalid("slo.silent_after", "must be between %s and %d days", job.MinSilentAfter, int(job.MaxSilentAfter/(24*time.Hour)))
		}
		slo.SilentAfter = d.Truncate(time.Millisecond)
	}
	return slo, nil
}

package jobspec

import (
	"encoding/json"
	"time"

	"github.com/tockhq/tock/pkg/job"
)

// Fields are a job's fields, in the order views show them: the one
// definition the store, the API, the OpenAPI document and the audit log
// derive theirs from (see Field). The timing fields (run_at to timezone)
// stay together, timezone last (lastTimingField).
var Fields = []*Field{
	{
		Name:       "id",
		ViewSchema: `{"type": "string", "format": "uuid", "description": "The job's id, a time-ordered UUIDv7."}`,
		show:       func(j *job.Job, _ *ViewContext) (any, bool) { return j.ID, true },
		unaudited:  true,
		Columns: []Column{{Name: "id", Fixed: true,
			value: func(j *job.Job) any { return j.ID },
			scan:  func(j *job.Job) (any, func() error) { return &j.ID, nil }}},
	},
	{
		Name:       "name",
		Schema:     `{"type": "string", "minLength": 1, "maxLength": 200, "description": "Display name, at most 200 bytes after trimming blanks; no control character (CR, LF, tab, ESC, C1) or bidirectional formatting character (U+061C, U+200E, U+200F, U+202A to U+202E, U+2066 to U+2069)."}`,
		ViewSchema: `{"type": "string", "minLength": 1, "maxLength": 200}`,
		Example:    `"nightly report"`, Other: `"nightly report (EU)"`,
		Required: true,
		parse: func(raw json.RawMessage, _ *parser) (applier, error) {
			var s string
			if err := decodeValue("name", raw, &s); err != nil {
				return nil, err
			}
			name, err := validName(s)
			if err != nil {
				return nil, err
			}
			return func(j *job.Job, _ *applyState) error { j.Name = name; return nil }, nil
		},
		show: func(j *job.Job, _ *ViewContext) (any, bool) { return j.Name, true },
		Columns: []Column{{Name: "name",
			value: func(j *job.Job) any { return j.Name },
			scan:  func(j *job.Job) (any, func() error) { return &j.Name, nil }}},
	},
	{
		Name:       "type",
		Schema:     `{"type": "string", "x-tock-job-types": true, "description": "Which executor runs the job. It never changes: a replace must repeat it."}`,
		ViewSchema: `{"type": "string", "x-tock-job-types": true}`,
		Example:    `"webhook"`,
		Required:   true, Fixed: true,
		parse: func(raw json.RawMessage, p *parser) (applier, error) {
			var t job.Type
			if err := decodeValue("type", raw, &t); err != nil {
				return nil, err
			}
			if err := validType(t); err != nil {
				return nil, err
			}
			p.typ = t
			return func(j *job.Job, _ *applyState) error { j.Type = t; return nil }, nil
		},
		show: func(j *job.Job, _ *ViewContext) (any, bool) { return j.Type, true },
		Columns: []Column{{Name: "type", Fixed: true,
			value: func(j *job.Job) any { return string(j.Type) },
			scan:  func(j *job.Job) (any, func() error) { return &j.Type, nil }}},
	},
	{
		Name:       "status",
		ViewSchema: `{"type": "string", "enum": ["scheduled", "paused", "completed", "permanently_failed", "cancelled", "expired"], "description": "` + "`scheduled` and `paused` jobs can still run; a one-off job ends `completed` or `permanently_failed`; `cancelled` is what DELETE leaves behind. `expired`: the last occurrence could not start within `expires_after` of its due time." + `"}`,
		show:       func(j *job.Job, _ *ViewContext) (any, bool) { return j.Status, true },
		Columns: []Column{{Name: "status",
			value: func(j *job.Job) any { return string(j.Status) },
			scan:  func(j *job.Job) (any, func() error) { return &j.Status, nil }}},
	},
	payloadField,
	{
		Name:       "priority",
		Schema:     `{"type": "integer", "minimum": -32768, "maximum": 32767, "description": "Among occurrences due at the same millisecond, higher runs first. Default 0."}`,
		ViewSchema: `{"type": "integer", "minimum": -32768, "maximum": 32767}`,
		Default:    `0`, Example: `5`, Other: `-3`,
		parse: func(raw json.RawMessage, _ *parser) (applier, error) {
			var n int
			if err := decodeValue("priority", raw, &n); err != nil {
				return nil, err
			}
			if n < job.MinPriority || n > job.MaxPriority {
				return nil, invalid("priority", "must be between %d and %d", job.MinPriority, job.MaxPriority)
			}
			return func(j *job.Job, a *applyState) error { return setPriority(j, n, a) }, nil
		},
		show: func(j *job.Job, _ *ViewContext) (any, bool) { return j.Priority, true },
		Columns: []Column{{Name: "priority",
			value: func(j *job.Job) any { return int16(j.Priority) },
			scan:  func(j *job.Job) (any, func() error) { return &j.Priority, nil }}},
	},
	{
		Name:       "max_retries",
		Schema:     `{"type": "integer", "minimum": 0, "maximum": 25, "x-go-type": "*int", "description": "Retries after a failed attempt, with backoff. Default 3."}`,
		ViewSchema: `{"type": "integer", "minimum": 0, "maximum": 25}`,
		Default:    `3`, Example: `5`, Other: `0`,
		parse: func(raw json.RawMessage, _ *parser) (applier, error) {
			var n int
			if err := decodeValue("max_retries", raw, &n); err != nil {
				return nil, err
			}
			if n < 0 || n > job.MaxRetriesLimit {
				return nil, invalid("max_retries", "must be between 0 and %d", job.MaxRetriesLimit)
			}
			return func(j *job.Job, _ *applyState) error { j.MaxRetries = n; return nil }, nil
		},
		show: func(j *job.Job, _ *ViewContext) (any, bool) { return j.MaxRetries, true },
		Columns: []Column{{Name: "max_retries",
			value: func(j *job.Job) any { return int16(j.MaxRetries) },
			scan:  func(j *job.Job) (any, func() error) { return &j.MaxRetries, nil }}},
	},
	{
		Name:       "timeout",
		Schema:     `{"type": "string", "description": "Limit on one attempt, a Go duration from ` + "`100ms` to `1h`. Default `30s`" + `.", "example": "30s"}`,
		ViewSchema: `{"type": "string", "description": "Limit on one attempt, a Go duration.", "example": "1m30s"}`,
		Default:    `"30s"`, Example: `"45s"`, Other: `"2m"`,
		parse: func(raw json.RawMessage, _ *parser) (applier, error) {
			var s string
			if err := decodeValue("timeout", raw, &s); err != nil {
				return nil, err
			}
			d, err := time.ParseDuration(s)
			if err != nil {
				return nil, invalid("timeout", "is not a duration such as 30s or 2m")
			}
			if d < job.MinTimeout || d > job.MaxTimeout {
				return nil, invalid("timeout", "must be between %s and %s", job.MinTimeout, job.MaxTimeout)
			}
			return func(j *job.Job, _ *applyState) error { j.Timeout = d; return nil }, nil
		},
		show:    func(j *job.Job, _ *ViewContext) (any, bool) { return j.Timeout.String(), true },
		Columns: []Column{msColumn("timeout_ms", "", func(j *job.Job) *time.Duration { return &j.Timeout }, false)},
	},
	{
		Name:       "run_at",
		Schema:     `{"type": "string", "format": "date-time", "description": "One-off: the instant to run, RFC 3339 with an offset; not in the past.", "example": "2026-12-24T09:00:00+01:00"}`,
		ViewSchema: instantSchema(`A one-off job's due time; null for a recurring job.`, true),
		Example:    `"2035-03-01T09:00:00Z"`, Other: `"2035-03-02T10:30:00Z"`,
		Timing:  true,
		parse:   timingParse(func(t *timingInput, raw json.RawMessage) { t.runAt = raw }),
		show:    func(j *job.Job, _ *ViewContext) (any, bool) { return Instant(j.NominalRunAt()), true },
		Columns: []Column{timeColumn("run_at", func(j *job.Job) *time.Time { return &j.RunAt })},
	},
	{
		Name:    "delay",
		Schema:  `{"type": "string", "description": "One-off: run this long from now, a Go duration optionally preceded by whole days (` + "`0s`, `90s`, `2h30m`, `15d`, `1d12h`); at most 3660 days. `0s` runs at once. A replace of a one-off job that gives a delay keeps its due time." + `", "example": "2h30m"}`,
		Example: `"1h"`, Other: `"2h"`,
		Timing: true,
		parse:  timingParse(func(t *timingInput, raw json.RawMessage) { t.delay = raw }),
	},
	{
		Name:    "run_on",
		Schema:  `{"type": "string", "format": "date", "description": "One-off: local midnight of this date in ` + "`timezone` (required with it); not in the past." + `", "example": "2026-12-24"}`,
		Example: `"2035-03-01"`, Other: `"2035-03-02"`,
		Timing: true,
		parse:  timingParse(func(t *timingInput, raw json.RawMessage) { t.runOn = raw }),
	},
	{
		Name:       "schedule",
		Omittable:  true,
		Schema:     `{"allOf": [{"$ref": "#/components/schemas/Schedule"}], "description": "Recurring: the recurrence. A replace compares it with the job's after taking the job's start_at (and, with every, on) for those it leaves out: an unchanged schedule keeps the job's plan."}`,
		ViewSchema: `{"allOf": [{"$ref": "#/components/schemas/Schedule"}], "description": "A recurring job's normalized schedule, every default filled in; absent for a one-off job."}`,
		Example:    `{"cron": "0 9 * * 1-5", "timezone": "Europe/Berlin"}`, Other: `{"every": "day", "at": "06:30", "timezone": "UTC"}`,
		Timing: true,
		parse:  timingParse(func(t *timingInput, raw json.RawMessage) { t.schedule = raw }),
		show: func(j *job.Job, _ *ViewContext) (any, bool) {
			return json.RawMessage(j.Schedule), j.Recurring()
		},
		Columns: []Column{{Name: "schedule",
			value: func(j *job.Job) any { return nullJSON(j.Schedule) },
			scan:  func(j *job.Job) (any, func() error) { return &j.Schedule, nil }}},
	},
	{
		Name:       "timezone",
		Schema:     `{"type": "string", "description": "IANA zone the job is shown in; required with ` + "`run_on`. A recurring job's zone goes inside `schedule` instead. Default `UTC`." + `", "example": "Europe/Berlin"}`,
		ViewSchema: `{"type": "string", "description": "IANA zone the job is evaluated and shown in.", "example": "UTC"}`,
		Example:    `"Europe/Berlin"`, Other: `"America/New_York"`,
		Timing: true,
		parse:  timingParse(func(t *timingInput, raw json.RawMessage) { t.timezone = raw }),
		show: func(j *job.Job, _ *ViewContext) (any, bool) {
			if j.Timezone == "" {
				return "UTC", true
			}
			return j.Timezone, true
		},
		Columns: []Column{{Name: "timezone", Read: "coalesce(timezone, 'UTC')",
			value: func(j *job.Job) any { return nullZone(j.Timezone) },
			scan:  func(j *job.Job) (any, func() error) { return &j.Timezone, nil }}},
	},
	{
		Name:       "jitter",
		Omittable:  true,
		Schema:     `{"type": "string", "description": "Spreads jobs due at the same instant: each occurrence is due at its nominal time (run_at, or the schedule's) plus the job's offset, a stable pseudo-random duration in [0, jitter) chosen when the jitter is set and kept while it stays the same, so previews, retries and idempotency keys stay stable. Lateness is measured from the jittered time; deliveries carry it in ` + "`X-Tock-Scheduled-For` and the nominal time in `X-Tock-Nominal-Time`. A Go duration from `1ms` to `24h`; for a recurring job at most the shortest gap between its occurrences. Absent, or `\\\"\\\"`: none." + `", "example": "60s"}`,
		ViewSchema: `{"type": "string", "description": "The job's jitter (Go duration text, such as ` + "`1m0s`); absent when none." + `"}`,
		Default:    `""`, Example: `"60s"`, Other: `"5m"`,
		parse: func(raw json.RawMessage, _ *parser) (applier, error) {
			d, err := parseJitter(raw)
			if err != nil {
				return nil, err
			}
			return func(j *job.Job, a *applyState) error { return setJitter(j, d, a) }, nil
		},
		show: func(j *job.Job, _ *ViewContext) (any, bool) { return j.Jitter.String(), j.Jitter > 0 },
		Columns: []Column{
			msColumn("jitter_ms", "coalesce(jitter_ms, 0)", func(j *job.Job) *time.Duration { return &j.Jitter }, true),
			// 0 is an offset too: NULL says the job has no jitter.
			{Name: "jitter_offset_ms", Read: "coalesce(jitter_offset_ms, 0)",
				value: func(j *job.Job) any {
					if j.Jitter == 0 {
						return nil
					}
					return j.JitterOffset.Milliseconds()
				},
				scan: func(j *job.Job) (any, func() error) {
					var ms int64
					return &ms, func() error { j.JitterOffset = time.Duration(ms) * time.Millisecond; return nil }
				}},
		},
	},
	{
		Name:       "next_run_at",
		ViewSchema: instantSchema("The next occurrence; null while the job is paused, and once it will not run again.", true),
		show:       func(_ *job.Job, x *ViewContext) (any, bool) { return Instant(x.Next), true },
		unaudited:  true,
	},
	{
		Name:       "retention",
		Omittable:  true,
		Schema:     `{"type": "string", "description": "How long the job is kept, with its runs, once it has finished (completed, permanently_failed or cancelled): a delay such as ` + "`90d`, `36h` or `2h30m`, from `1s` to 3660 days. Default, or `\\\"\\\"`: the operator's `TOCK_JOB_RETENTION` (30 days)." + `", "example": "90d"}`,
		ViewSchema: `{"type": "string", "description": "The job's own retention, a Go duration; absent when it keeps the operator's default.", "example": "2160h0m0s"}`,
		Default:    `""`, Example: `"90d"`, Other: `"36h"`,
		parse: func(raw json.RawMessage, _ *parser) (applier, error) {
			d, err := optionalDelay("retention", raw, job.MinRetention, job.MaxRetention)
			if err != nil {
				return nil, err
			}
			return func(j *job.Job, _ *applyState) error { j.Retention = d; return nil }, nil
		},
		show: func(j *job.Job, _ *ViewContext) (any, bool) { return j.Retention.String(), j.Retention > 0 },
		Columns: []Column{msColumn("retention_ms", "coalesce(retention_ms, 0)",
			func(j *job.Job) *time.Duration { return &j.Retention }, true)},
	},
	{
		Name:       "history",
		Schema:     `{"type": "string", "enum": ["all", "failures"], "description": "Which runs are kept. ` + "`all` (default) keeps every run for the retention period; `failures` keeps the runs that did not complete, and only the newest 100 completed ones, so a job every second does not keep 86,400 runs a day." + `", "example": "failures"}`,
		ViewSchema: `{"type": "string", "enum": ["all", "failures"], "description": "Which runs are kept."}`,
		Default:    `"all"`, Example: `"failures"`, Other: `"all"`,
		parse: func(raw json.RawMessage, _ *parser) (applier, error) {
			var s string
			if err := decodeValue("history", raw, &s); err != nil {
				return nil, err
			}
			h, err := parseHistory(s)
			if err != nil {
				return nil, err
			}
			return func(j *job.Job, _ *applyState) error { j.History = h; return nil }, nil
		},
		show: func(j *job.Job, _ *ViewContext) (any, bool) {
			if j.History == "" {
				return job.HistoryAll, true
			}
			return j.History, true
		},
		Columns: []Column{{Name: "history", Read: "coalesce(history, 'all')",
			value: func(j *job.Job) any { return historyColumn(j.History) },
			scan:  func(j *job.Job) (any, func() error) { return &j.History, nil }}},
	},
	{
		Name:       "labels",
		Schema:     `{"type": "object", "maxProperties": 20, "additionalProperties": {"type": "string", "maxLength": 200}, "description": "The caller's own references on the job, at most 20 pairs: keys of ` + "`a-z`, `0-9`, `_`, `.` and `-` up to 63 long, values up to 200 characters, no control character (CR, LF, tab, ESC, C1) or bidirectional formatting character (U+061C, U+200E, U+200F, U+202A to U+202E, U+2066 to U+2069). Filter with `GET /api/v1/jobs?label=key=value`. `{}` removes them." + `", "example": {"customer": "1234", "plan": "pro"}}`,
		ViewSchema: `{"type": "object", "additionalProperties": {"type": "string"}, "description": "The job's labels; ` + "`{}`" + ` when none."}`,
		Default:    `{}`, Example: `{"customer": "1234", "plan": "pro"}`, Other: `{"customer": "5678"}`,
		parse: func(raw json.RawMessage, _ *parser) (applier, error) {
			var m map[string]string
			if err := decodeValue("labels", raw, &m); err != nil {
				return nil, err
			}
			labels, err := ValidLabels(m)
			if err != nil {
				return nil, err
			}
			return func(j *job.Job, _ *applyState) error { j.Labels = labels; return nil }, nil
		},
		show: func(j *job.Job, _ *ViewContext) (any, bool) {
			if j.Labels == nil {
				return map[string]string{}, true
			}
			return j.Labels, true
		},
		Columns: []Column{jsonColumn("labels", func(j *job.Job) any { return &j.Labels },
			func(j *job.Job) bool { return len(j.Labels) > 0 })},
	},
	{
		Name:       "key",
		Omittable:  true,
		Schema:     `{"type": "string", "minLength": 1, "maxLength": 200, "pattern": "^[^\\s/]+$", "description": "Your own name for the job, 1 to 200 characters without spaces, ` + "`/`, control characters or bidirectional formatting characters, unique among your jobs that can still run (scheduled or paused). `PUT /api/v1/jobs/by-key/{key}` creates or replaces the job that holds it." + `", "example": "nightly-report"}`,
		ViewSchema: `{"type": "string", "description": "The job's key, when it has one."}`,
		Example:    `"nightly-report"`,
		Fixed:      true,
		parse: func(raw json.RawMessage, _ *parser) (applier, error) {
			var k string
			if err := decodeValue("key", raw, &k); err != nil {
				return nil, err
			}
			if k == "" {
				return nil, nil // no key
			}
			if err := ValidKey(k); err != nil {
				return nil, err
			}
			return func(j *job.Job, _ *applyState) error { j.Key = k; return nil }, nil
		},
		show: func(j *job.Job, _ *ViewContext) (any, bool) { return j.Key, j.Key != "" },
		Columns: []Column{{Name: "key", Read: "coalesce(key, '')", Fixed: true,
			value: func(j *job.Job) any { return nullText(j.Key) },
			scan:  func(j *job.Job) (any, func() error) { return &j.Key, nil }}},
	},
	{
		Name:       "expires_after",
		Omittable:  true,
		Schema:     `{"type": "string", "description": "How late an attempt may start: one that cannot start within this long after its due time (a one-off job's run_at, each occurrence of a recurring job, a retry's backoff time) is recorded as an ` + "`expired` run and not run; a job whose last occurrence expired ends `expired`. A delay such as `90s`, `15m` or `2h`, from `1s` to 366 days. Absent, or `\\\"\\\"`: never expires." + `", "example": "15m"}`,
		ViewSchema: `{"type": "string", "description": "How late an attempt may start before it is recorded ` + "`expired` instead (Go duration text, such as `15m0s`); absent when it never expires." + `"}`,
		Default:    `""`, Example: `"15m"`, Other: `"2h"`,
		parse: func(raw json.RawMessage, _ *parser) (applier, error) {
			d, err := optionalDelay("expires_after", raw, job.MinExpiresAfter, job.MaxExpiresAfter)
			if err != nil {
				return nil, err
			}
			return func(j *job.Job, _ *applyState) error { j.ExpiresAfter = d; return nil }, nil
		},
		show: func(j *job.Job, _ *ViewContext) (any, bool) { return j.ExpiresAfter.String(), j.ExpiresAfter > 0 },
		Columns: []Column{msColumn("expires_after_ms", "coalesce(expires_after_ms, 0)",
			func(j *job.Job) *time.Duration { return &j.ExpiresAfter }, true)},
	},
	{
		Name:       "overlap",
		Omittable:  true,
		Schema:     `{"type": "string", "enum": ["allow", "skip", "buffer_one"], "description": "Recurring jobs only: what an occurrence does while an earlier one of the job still runs. ` + "`allow` (default) runs it anyway; `skip` records it `skipped` with error `overlap: …`; `buffer_one` waits for the running one to end (checked every 250 ms), at most one waiting: any other is skipped. Retries of a failed attempt are not held back." + `"}`,
		ViewSchema: `{"type": "string", "enum": ["allow", "skip", "buffer_one"], "description": "A recurring job's overlap policy; absent for a one-off job."}`,
		Default:    `"allow"`, Example: `"skip"`, Other: `"buffer_one"`,
		parse: func(raw json.RawMessage, _ *parser) (applier, error) {
			var s string
			if err := decodeValue("overlap", raw, &s); err != nil {
				return nil, err
			}
			var o job.Overlap
			switch v := job.Overlap(s); v {
			case job.OverlapAllow, "":
			case job.OverlapSkip, job.OverlapBufferOne:
				o = v
			default:
				return nil, invalid("overlap", "must be %q, %q or %q", job.OverlapAllow, job.OverlapSkip, job.OverlapBufferOne)
			}
			return func(j *job.Job, _ *applyState) error { j.Overlap = o; return nil }, nil
		},
		show: func(j *job.Job, _ *ViewContext) (any, bool) {
			if j.Overlap == "" {
				return job.OverlapAllow, j.Recurring()
			}
			return j.Overlap, j.Recurring()
		},
		Columns: []Column{{Name: "overlap", Read: "coalesce(overlap, '')",
			value: func(j *job.Job) any { return nullOverlap(j.Overlap) },
			scan:  func(j *job.Job) (any, func() error) { return &j.Overlap, nil }}},
	},
	notifyField,
	{
		Name:      "slo",
		Omittable: true,
		Schema: `{"type": "object", "additionalProperties": false, "properties": {` +
			`"late_after": {"type": "string", "description": "Alert when an occurrence starts later than this after it is due (behind a flow limit, a paused key, busy or stopped workers): a Go duration from ` + "`1ms` to `24h`." + `", "example": "500ms"}, ` +
			`"silent_after": {"type": "string", "description": "Recurring jobs only: alert when no occurrence has completed for this long (its target keeps failing, it was paused and forgotten): a duration such as ` + "`10m`, `36h` or `2d`, from `1s` to 366 days." + `", "example": "10m"}}, ` +
			`"description": "The job's service level. The scheduler checks it and sends the notify events ` + "`slo_breach` once when it is broken and `slo_recovered` once when it holds again (to the job's `notify` destination, when its `on` lists them, at least once); the job's `slo_status` says whether it is broken now, and `GET /api/v1/jobs?at_risk=true` lists the jobs whose SLO is. `{}` removes it." + `", "example": {"late_after": "500ms", "silent_after": "10m"}}`,
		ViewSchema: `{"type": "object", "properties": {"late_after": {"type": "string"}, "silent_after": {"type": "string"}}, "description": "The job's SLO, Go durations; absent when none."}`,
		Default:    `{}`, Example: `{"late_after": "500ms"}`, Other: `{"late_after": "2s"}`,
		parse: func(raw json.RawMessage, _ *parser) (applier, error) {
			slo, err := ParseSLO(raw)
			if err != nil {
				return nil, err
			}
			return func(j *job.Job, _ *applyState) error { j.SLO = slo; return nil }, nil
		},
		show: func(j *job.Job, _ *ViewContext) (any, bool) {
			if !j.SLO.Set() {
				return nil, false
			}
			out := map[string]string{}
			if j.SLO.LateAfter > 0 {
				out["late_after"] = j.SLO.LateAfter.String()
			}
			if j.SLO.SilentAfter > 0 {
				out["silent_after"] = j.SLO.SilentAfter.String()
			}
			return out, true
		},
		Columns: []Column{
			msColumn("slo_late_ms", "coalesce(slo_late_ms, 0)", func(j *job.Job) *time.Duration { return &j.SLO.LateAfter }, true),
			msColumn("slo_silent_ms", "coalesce(slo_silent_ms, 0)", func(j *job.Job) *time.Duration { return &j.SLO.SilentAfter }, true),
		},
	},
	{
		Name:       "slo_status",
		Omittable:  true,
		ViewSchema: `{"type": "object", "properties": {"breached": {"type": "boolean"}, "late_since": {"type": "string", "format": "date-time", "description": "When the late breach began; absent when none."}, "late_by_ms": {"type": "integer", "description": "How late the occurrence that began it started, or had waited when it was found."}, "silent_since": {"type": "string", "format": "date-time", "description": "When the silent breach began; absent when none."}}, "description": "Whether the job's SLO is broken now (the scheduler's last check); absent when the job has none."}`,
		show: func(j *job.Job, _ *ViewContext) (any, bool) {
			if j.SLOState == nil || !j.SLO.Set() {
				return nil, false
			}
			out := map[string]any{"breached": j.SLOState.Breached()}
			if !j.SLOState.LateSince.IsZero() {
				out["late_since"], out["late_by_ms"] = Instant(j.SLOState.LateSince), j.SLOState.LateBy.Milliseconds()
			}
			if !j.SLOState.SilentSince.IsZero() {
				out["silent_since"] = Instant(j.SLOState.SilentSince)
			}
			return out, true
		},
		unaudited: true,
	},
	{
		Name:       "skip_calendars",
		Omittable:  true,
		Schema:     `{"type": "array", "maxItems": 10, "items": {"type": "string", "pattern": "^[a-z0-9][a-z0-9_.-]{0,62}$"}, "description": "Recurring jobs only: names of your calendars (` + "`PUT /api/v1/calendars/{name}`" + `) whose days and ranges the job does not run on. An occurrence whose nominal time falls on one is recorded ` + "`skipped` with an `error` that starts `calendar <name>:`" + `; previews leave it out. At most 10; each must exist when the job is created or changed. ` + "`[]`" + ` removes them.", "example": ["de-holidays"]}`,
		ViewSchema: `{"type": "array", "items": {"type": "string"}, "description": "The calendars whose days the job skips; absent when none."}`,
		Default:    `[]`, Example: `["de-holidays"]`, Other: `["de-holidays", "maintenance"]`,
		parse: func(raw json.RawMessage, _ *parser) (applier, error) {
			names, err := ParseSkipCalendars(raw)
			if err != nil {
				return nil, err
			}
			return func(j *job.Job, _ *applyState) error { j.SkipCalendars = names; return nil }, nil
		},
		show: func(j *job.Job, _ *ViewContext) (any, bool) { return j.SkipCalendars, len(j.SkipCalendars) > 0 },
		Columns: []Column{{Name: "skip_calendars",
			value: func(j *job.Job) any {
				if len(j.SkipCalendars) == 0 {
					return nil
				}
				return j.SkipCalendars
			},
			scan: func(j *job.Job) (any, func() error) { return &j.SkipCalendars, nil }}},
	},
	{
		Name:       "flow",
		Omittable:  true,
		Schema:     `{"type": "object", "additionalProperties": false, "properties": {"key": {"type": "string", "minLength": 1, "maxLength": 200, "description": "Required. Your own name for the flow, such as ` + "`customer-42` or `sms-provider`: 1 to 200 characters without spaces, `/`, control characters or bidirectional formatting characters. Keys are yours alone: another user's key of the same name never limits your jobs." + `"}, "concurrency": {"type": "integer", "minimum": 1, "maximum": 100000, "description": "At most this many attempts of the key's jobs in flight at once, across every worker."}, "rate": {"type": "string", "description": "At most this many starts of the key's jobs in any window of this length: ` + "`<count>/<period>`, such as `50/1s`, `10/s` or `1000/1h` (count 1 to 10,000, period 10ms to 24h)." + `"}}, "description": "The flow key the job's occurrences go through. An occurrence over its key's limits waits, in priority and then due order, and is never dropped or failed for it; the wait is recorded as ` + "`throttled_ms` on the run, apart from its lateness. The limits belong to the key: a job that gives them sets them for every job of the key, as `PUT /api/v1/flows/{key}` does; a job that names only the key runs under the key's. `{}` removes the job from its key." + `", "example": {"key": "customer-42", "concurrency": 3, "rate": "50/1s"}}`,
		ViewSchema: `{"type": "object", "properties": {"key": {"type": "string"}, "concurrency": {"type": "integer"}, "rate": {"type": "string"}}, "description": "The job's flow key, and the limits it set for it when it gave any; absent when none."}`,
		Default:    `{}`, Example: `{"key": "customer-42", "concurrency": 3, "rate": "50/1s"}`, Other: `{"key": "sms-provider", "rate": "10/1s"}`,
		parse: func(raw json.RawMessage, _ *parser) (applier, error) {
			f, err := ParseFlow(raw)
			if err != nil {
				return nil, err
			}
			return func(j *job.Job, a *applyState) error {
				moved := j.FlowKey() != f.KeyOrNone()
				j.Flow = f
				if moved {
					return rerouted(j, a)
				}
				return nil
			}, nil
		},
		show: func(j *job.Job, _ *ViewContext) (any, bool) { return j.Flow, j.Flow != nil },
		Columns: []Column{jsonColumn("flow", func(j *job.Job) any { return &j.Flow },
			func(j *job.Job) bool { return j.Flow != nil })},
	},
	{
		Name:       "debounce",
		Omittable:  true,
		Schema:     `{"type": "object", "additionalProperties": false, "properties": {"key": {"type": "string", "minLength": 1, "maxLength": 200, "description": "Required. Your own name for what the burst is about, such as ` + "`order-7`: 1 to 200 characters without spaces, `/`, control characters or bidirectional formatting characters. Keys are yours alone." + `"}, "window": {"type": "string", "description": "Required. How long after the last create the job runs, when the create gives no timing of its own: a Go duration from 10ms to 24h, such as ` + "`3s`." + `"}}, "description": "One-off jobs only. A create whose key another one-off job of yours holds that has not started yet (scheduled or paused) creates nothing: that job takes this create's payload and its due time (now plus the window, or the create's own ` + "`run_at`, `delay` or `run_on`), keeps its id, moves to a new generation, and is answered with 200. So a burst of creates makes one delivery, carrying the last payload. Once the job has started, the next create with the key makes a new job (201). `{}` in a PATCH takes the job out of its key." + `", "example": {"key": "order-7", "window": "3s"}}`,
		ViewSchema: `{"type": "object", "properties": {"key": {"type": "string"}, "window": {"type": "string"}}, "description": "The job's debounce key and window; absent when none."}`,
		Default:    `{}`, Example: `{"key": "order-7", "window": "3s"}`, Other: `{"key": "order-8", "window": "10s"}`,
		parse: func(raw json.RawMessage, _ *parser) (applier, error) {
			d, err := ParseDebounce(raw)
			if err != nil {
				return nil, err
			}
			return func(j *job.Job, _ *applyState) error {
				j.Debounce = d
				return nil
			}, nil
		},
		show: func(j *job.Job, _ *ViewContext) (any, bool) { return j.Debounce, j.Debounce != nil },
		Columns: []Column{jsonColumn("debounce", func(j *job.Job) any { return &j.Debounce },
			func(j *job.Job) bool { return j.Debounce != nil })},
	},
	{
		Name:       "paused_reason",
		Omittable:  true,
		ViewSchema: `{"type": "string", "minLength": 1, "description": "Why tock paused the job itself (repeated permanent failures, or ` + "`owner disabled`" + `); absent otherwise."}`,
		show:       func(j *job.Job, _ *ViewContext) (any, bool) { return j.PausedReason, j.PausedReason != "" },
		Columns: []Column{{Name: "paused_reason", Read: "coalesce(paused_reason, '')",
			value: func(j *job.Job) any { return nullText(j.PausedReason) },
			scan:  func(j *job.Job) (any, func() error) { return &j.PausedReason, nil }}},
	},
	{
		Name:       "created_at",
		ViewSchema: instantSchema("When the job was created.", false),
		show:       func(j *job.Job, _ *ViewContext) (any, bool) { return Instant(j.CreatedAt), true },
		unaudited:  true,
		Columns:    []Column{instantColumn("created_at", true, func(j *job.Job) *time.Time { return &j.CreatedAt })},
	},
	{
		Name:       "updated_at",
		ViewSchema: instantSchema("When the job last changed.", false),
		show:       func(j *job.Job, _ *ViewContext) (any, bool) { return Instant(j.UpdatedAt), true },
		unaudited:  true,
		Columns:    []Column{instantColumn("updated_at", false, func(j *job.Job) *time.Time { return &j.UpdatedAt })},
	},
	{
		Name:       "owner",
		ViewSchema: `{"type": "string", "format": "uuid", "description": "The user who owns the job."}`,
		show:       func(j *job.Job, _ *ViewContext) (any, bool) { return j.Owner, true },
		unaudited:  true,
		Columns: []Column{{Name: "owner_id", Fixed: true,
			value: func(j *job.Job) any { return j.Owner },
			scan:  func(j *job.Job) (any, func() error) { return &j.Owner, nil }}},
	},
	{
		Name:       "last_run",
		ViewSchema: `{"nullable": true, "allOf": [{"$ref": "#/components/schemas/LastRun"}], "description": "The most recent attempt of any occurrence; null before the first."}`,
		show: func(j *job.Job, _ *ViewContext) (any, bool) {
			if j.LastRun == nil {
				return nil, true
			}
			return lastRunView(j.LastRun), true
		},
		unaudited: true,
	},

	// tock's own bookkeeping: columns no request sets and no view shows.
	{Name: "due_at", Internal: true, Columns: []Column{timeColumn("due_at", func(j *job.Job) *time.Time { return &j.DueAt }),
		{Name: "due_hour", value: func(j *job.Job) any { return DueHour(j.DueAt) }}}},
	{Name: "generation", Internal: true, Columns: []Column{{Name: "generation",
		value: func(j *job.Job) any { return int32(j.Generation) },
		scan:  func(j *job.Job) (any, func() error) { return &j.Generation, nil }}}},
	{Name: "occurrences", Internal: true, Columns: []Column{{Name: "occurrences",
		value: func(j *job.Job) any { return int32(j.Occurrences) },
		scan:  func(j *job.Job) (any, func() error) { return &j.Occurrences, nil }}}},
	{Name: "last_at", Internal: true, Columns: []Column{timeColumn("last_at", func(j *job.Job) *time.Time { return &j.LastAt })}},
	{Name: "per_hour", Internal: true, Columns: []Column{{Name: "per_hour", Read: "coalesce(per_hour, 0)",
		value: func(j *job.Job) any {
			if !j.Recurring() {
				return nil
			}
			return int32(j.PerHour)
		},
		scan: func(j *job.Job) (any, func() error) { return &j.PerHour, nil }}}},
	{Name: "load", Internal: true, Columns: loadColumns()},
	{Name: "trace_parent", Internal: true, Columns: []Column{{Name: "trace_parent", Fixed: true,
		value: func(j *job.Job) any { return nullText(j.TraceParent) }}}},
	{Name: "claimed_by", Internal: true, Columns: []Column{{Name: "claimed_by", Fixed: true,
		value: func(j *job.Job) any {
			if j.ClaimedBy == 0 {
				return nil
			}
			return j.ClaimedBy
		}}}},
}

// loadColumns are a recurring job's load (job.Load): the UTC hours,
// minutes and seconds it fires in, NULL for a one-off job or one whose
// load is not known yet.
func loadColumns() []Column {
	part := func(name string, get func(l *job.Load) int64, set func(l *job.Load, v int64)) Column {
		return Column{Name: name,
			value: func(j *job.Job) any {
				if j.Load == nil {
					return nil
				}
				return get(j.Load)
			},
			scan: func(j *job.Job) (any, func() error) {
				var v *int64
				return &v, func() error {
					if v != nil {
						if j.Load == nil {
							j.Load = &job.Load{}
						}
						set(j.Load, *v)
					}
					return nil
				}
			}}
	}
	return []Column{
		part("load_hours", func(l *job.Load) int64 { return int64(l.Hours) }, func(l *job.Load, v int64) { l.Hours = uint32(v) }),
		part("load_minutes", func(l *job.Load) int64 { return int64(l.Minutes) }, func(l *job.Load, v int64) { l.Minutes = uint64(v) }),
		part("load_seconds", func(l *job.Load) int64 { return int64(l.Seconds) }, func(l *job.Load, v int64) { l.Seconds = uint64(v) }),
	}
}

// lastTimingField is the last of the timing fields in Fields: once it is
// read, the timing is checked as a whole.
const lastTimingField = "timezone"

// setPriority gives j priority n. On an edit, a new priority is a new
// generation: what Redis holds for the job carries the old one.
func setPriority(j *job.Job, n int, a *applyState) error {
	if n == j.Priority {
		return nil
	}
	j.Priority = n
	return rerouted(j, a)
}

// rerouted makes an edit that changes what a job's members carry (its
// priority, its flow key) a new generation: what Redis holds for the job
// carries the old one.
func rerouted(j *job.Job, a *applyState) error {
	if a.mode == Create {
		return nil
	}
	j.Generation++
	switch {
	case j.Recurring() && !a.timingChanged && !a.jitterChanged:
		// Its loaded occurrences carry the old priority and generation:
		// plan them again from now (settleJitter does, with a new jitter).
		return rewind(j, a.now)
	case j.DueAt.IsZero() && !j.Recurring() && !a.started:
		// Its member is in Redis under the old priority: load it again.
		j.DueAt = j.RunAt
	}
	return nil
}

// optionalDelay reads a delay between lo and hi, or "" for none (zero).
func optionalDelay(field string, raw json.RawMessage, lo, hi time.Duration) (time.Duration, error) {
	var s string
	if err := decodeValue(field, raw, &s); err != nil {
		return 0, err
	}
	if s == "" {
		return 0, nil
	}
	d, err := ParseDelay(s)
	if err != nil {
		return 0, invalid(field, "is not a duration such as 90s, 15m or 2h")
	}
	if d < lo || d > hi {
		return 0, invalid(field, "must be between %s and %d days", lo, int(hi/(24*time.Hour)))
	}
	return d, nil
}

// instantSchema is the OpenAPI schema of an instant in a view.
func instantSchema(doc string, nullable bool) string {
	n := ""
	if nullable {
		n = `, "nullable": true`
	}
	return `{"type": "string", "format": "date-time", "pattern": "^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\\.[0-9]{3}Z$", "description": "` +
		doc + `", "example": "2026-12-24T08:00:00.000Z"` + n + `}`
}

// DueHour is the partition key of the jobs table for a due time: its UTC
// hour, or -1 for none.
func DueHour(t time.Time) int16 {
	if t.IsZero() {
		return -1
	}
	return int16(t.UTC().Hour())
}

// timeColumn is a nullable instant: NULL for the zero time.
func timeColumn(name string, field func(j *job.Job) *time.Time) Column {
	return Column{Name: name,
		value: func(j *job.Job) any {
			if t := *field(j); !t.IsZero() {
				return t
			}
			return nil
		},
		scan: func(j *job.Job) (any, func() error) {
			var t *time.Time
			return &t, func() error {
				if t != nil {
					*field(j) = t.UTC()
				}
				return nil
			}
		}}
}

// instantColumn is an instant that is always set.
func instantColumn(name string, fixed bool, field func(j *job.Job) *time.Time) Column {
	return Column{Name: name, Fixed: fixed,
		value: func(j *job.Job) any { return *field(j) },
		scan: func(j *job.Job) (any, func() error) {
			return field(j), func() error { *field(j) = field(j).UTC(); return nil }
		}}
}

// msColumn is a duration kept in whole milliseconds; nullable columns hold
// NULL for zero (the operator's default, or none).
func msColumn(name, read string, field func(j *job.Job) *time.Duration, nullable bool) Column {
	return Column{Name: name, Read: read,
		value: func(j *job.Job) any {
			d := *field(j)
			if !nullable {
				return int32(d / time.Millisecond)
			}
			if d <= 0 {
				return nil
			}
			return d.Milliseconds()
		},
		scan: func(j *job.Job) (any, func() error) {
			var ms int64
			return &ms, func() error { *field(j) = time.Duration(ms) * time.Millisecond; return nil }
		}}
}

// jsonColumn is a jsonb column holding a Go value, NULL when set says
// there is none.
func jsonColumn(name string, field func(j *job.Job) any, set func(j *job.Job) bool) Column {
	return Column{Name: name,
		value: func(j *job.Job) any {
			if !set(j) {
				return nil
			}
			b, _ := json.Marshal(field(j)) // maps and structs of strings always encode
			return b
		},
		scan: func(j *job.Job) (any, func() error) {
			var b []byte
			return &b, func() error {
				if len(b) == 0 {
					return nil
				}
				return json.Unmarshal(b, field(j))
			}
		}}
}

func nullText(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// nullZone is the timezone column: NULL for UTC.
func nullZone(s string) *string {
	if s == "" || s == "UTC" {
		return nil
	}
	return &s
}

func nullJSON(b []byte) []byte {
	if len(b) == 0 {
		return nil
	}
	return b
}

// nullOverlap is the overlap column: NULL for allow.
func nullOverlap(o job.Overlap) *string {
	if o == "" || o == job.OverlapAllow {
		return nil
	}
	s := string(o)
	return &s
}

// historyColumn is the history column: NULL for every run kept.
func historyColumn(h job.History) *string {
	if h == "" || h == job.HistoryAll {
		return nil
	}
	s := string(h)
	return &s
}

// Instant is an instant as views write it: RFC 3339 in UTC with
// milliseconds, tock's precision; the zero Instant is null.
type Instant time.Time

// TimeFormat is how the API writes instants.
const TimeFormat = "2006-01-02T15:04:05.000Z07:00"

// MarshalJSON writes the instant in TimeFormat, or null when it is zero.
func (t Instant) MarshalJSON() ([]byte, error) {
	u := time.Time(t)
	if u.IsZero() {
		return []byte("null"), nil
	}
	b := make([]byte, 0, len(TimeFormat)+2)
	b = append(b, '"')
	b = u.UTC().AppendFormat(b, TimeFormat)
	return append(b, '"'), nil
}

// LastRun is a job's latest attempt, as its view shows it.
type LastRun struct {
	Status       job.RunStatus `json:"status"`
	Attempt      int           `json:"attempt"`
	ScheduledFor Instant       `json:"scheduled_for"`
	StartedAt    Instant       `json:"started_at"`
	FinishedAt   Instant       `json:"finished_at"`
	Error        string        `json:"error"`
}

func lastRunView(r *job.Run) LastRun {
	return LastRun{Status: r.Status, Attempt: r.Attempt, ScheduledFor: Instant(r.ScheduledFor),
		StartedAt: Instant(r.StartedAt), FinishedAt: Instant(r.FinishedAt), Error: r.Error}
}

package tock

import (
	"encoding/json"
	"time"
)

// JobSpec is a job to create: the body of POST /api/v1/jobs and PUT
// /api/v1/jobs/by-key/{key}, and one entry of a batch. Exactly one of RunAt,
// Delay, RunOn (with Timezone) or Schedule says when it runs. Zero fields are
// left out, so the server's defaults hold.
type JobSpec struct {
	Name string `json:"name"`
	// Type is webhook, ping, slack, email, nats, amqp or sqs; JobTypes lists
	// them.
	Type string `json:"type"`
	// RunAt is a one-off job's instant, not in the past.
	RunAt *time.Time `json:"run_at,omitempty"`
	// Delay runs a one-off job this long from now: "90s", "2h30m", "15d".
	Delay string `json:"delay,omitempty"`
	// RunOn runs a one-off job at local midnight of this date ("2026-12-24")
	// in Timezone.
	RunOn    string    `json:"run_on,omitempty"`
	Timezone string    `json:"timezone,omitempty"`
	Schedule *Schedule `json:"schedule,omitempty"`
	// Payload is what the job sends: a WebhookPayload, PingPayload,
	// SlackPayload, EmailPayload, or any value that encodes to the type's
	// JSON payload.
	Payload  any `json:"payload"`
	Priority int `json:"priority,omitempty"`
	// MaxRetries is nil for the default (3); a pointer, since 0 means none.
	MaxRetries *int `json:"max_retries,omitempty"`
	// Timeout limits one attempt: a Go duration, default "30s".
	Timeout string `json:"timeout,omitempty"`
	// Retention is how long the finished job and its runs are kept ("90d").
	Retention string `json:"retention,omitempty"`
	// History is "all" (default) or "failures".
	History string            `json:"history,omitempty"`
	Labels  map[string]string `json:"labels,omitempty"`
	// Key is the caller's own unique name for the job.
	Key string `json:"key,omitempty"`
	// Owner (administrators only) creates the job for that user.
	Owner string `json:"owner,omitempty"`
	// ExpiresAfter records an attempt that cannot start this long after it
	// was due as expired instead of running it ("15m").
	ExpiresAfter string `json:"expires_after,omitempty"`
	// Overlap is a recurring job's policy for an occurrence due while an
	// earlier one runs: OverlapAllow, OverlapSkip or OverlapBufferOne.
	Overlap string  `json:"overlap,omitempty"`
	Notify  *Notify `json:"notify,omitempty"`
}

// The overlap policies of a recurring job.
const (
	OverlapAllow     = "allow"
	OverlapSkip      = "skip"
	OverlapBufferOne = "buffer_one"
)

// JobPatch is the body of PATCH /api/v1/jobs/{id}: only the fields set
// change. Labels replace the job's as a whole; an empty, non-nil map removes
// them. A Notify with no On removes the alerting.
type JobPatch struct {
	Name         *string           `json:"name,omitempty"`
	RunAt        *time.Time        `json:"run_at,omitempty"`
	Delay        *string           `json:"delay,omitempty"`
	RunOn        *string           `json:"run_on,omitempty"`
	Timezone     *string           `json:"timezone,omitempty"`
	Schedule     *Schedule         `json:"schedule,omitempty"`
	Payload      any               `json:"payload,omitempty"`
	Priority     *int              `json:"priority,omitempty"`
	MaxRetries   *int              `json:"max_retries,omitempty"`
	Timeout      *string           `json:"timeout,omitempty"`
	Retention    *string           `json:"retention,omitempty"`
	History      *string           `json:"history,omitempty"`
	Labels       map[string]string `json:"labels,omitzero"`
	ExpiresAfter *string           `json:"expires_after,omitempty"`
	Overlap      *string           `json:"overlap,omitempty"`
	Notify       *Notify           `json:"notify,omitempty"`
}

// Schedule is a recurrence: Cron, RRule or Every (with At and On), in
// Timezone. A job's view shows it normalized, every default filled in.
type Schedule struct {
	Cron  string `json:"cron,omitempty"`
	RRule string `json:"rrule,omitempty"`
	// Every is "day", "week" or "month".
	Every string `json:"every,omitempty"`
	// At is the local time of day with Every: "09:30".
	At string `json:"at,omitempty"`
	// On is a weekday name (with every week) or a day of the month, -1 for
	// the last (with every month).
	On       any        `json:"on,omitempty"`
	Timezone string     `json:"timezone,omitempty"`
	StartAt  *time.Time `json:"start_at,omitempty"`
	EndAt    *time.Time `json:"end_at,omitempty"`
	// Count is the total number of occurrences; 0 is unlimited.
	Count int `json:"count,omitempty"`
	// Misfire is run_once (default), catch_up or skip.
	Misfire    string `json:"misfire,omitempty"`
	MisfireMax int    `json:"misfire_max,omitempty"`
	DST        *DST   `json:"dst,omitempty"`
}

// DST is a schedule's daylight-saving policy.
type DST struct {
	// Gap is "shift" or "skip": what a local time that does not exist becomes.
	Gap string `json:"gap,omitempty"`
	// Overlap is "first" or "both": which of a repeated local time runs.
	Overlap string `json:"overlap,omitempty"`
}

// Notify says where alerts on a job's outcomes go: one of Webhook, Slack or
// Email, for the outcomes in On (failed, permanently_failed, recovered,
// paused).
type Notify struct {
	On      []string       `json:"on"`
	Webhook *NotifyWebhook `json:"webhook,omitempty"`
	Slack   *NotifySlack   `json:"slack,omitempty"`
	Email   *NotifyEmail   `json:"email,omitempty"`
}

// NotifyWebhook posts alerts to URL.
type NotifyWebhook struct {
	URL     string            `json:"url"`
	Headers map[string]string `json:"headers,omitempty"`
}

// NotifySlack posts alerts to a Slack incoming webhook.
type NotifySlack struct {
	WebhookURL string `json:"webhook_url"`
}

// NotifyEmail mails alerts through the worker's SMTP relay.
type NotifyEmail struct {
	To []string `json:"to"`
}

// WebhookPayload is a webhook job's payload: success is a 2xx answer, or
// ExpectStatus ("201", "200-204", "2xx").
type WebhookPayload struct {
	URL          string            `json:"url"`
	Method       string            `json:"method,omitempty"`
	Headers      map[string]string `json:"headers,omitempty"`
	Body         any               `json:"body,omitempty"`
	ExpectStatus string            `json:"expect_status,omitempty"`
	ExpectBody   string            `json:"expect_body,omitempty"`
}

// PingPayload is a ping job's payload: a GET of URL.
type PingPayload struct {
	URL          string `json:"url"`
	ExpectStatus string `json:"expect_status,omitempty"`
}

// SlackPayload is a slack job's payload: Text or Blocks posted to a Slack
// incoming webhook.
type SlackPayload struct {
	WebhookURL string `json:"webhook_url"`
	Text       string `json:"text,omitempty"`
	Blocks     []any  `json:"blocks,omitempty"`
}

// EmailPayload is an email job's payload.
type EmailPayload struct {
	To      []string `json:"to"`
	Cc      []string `json:"cc,omitempty"`
	Bcc     []string `json:"bcc,omitempty"`
	Subject string   `json:"subject"`
	Text    string   `json:"text,omitempty"`
	HTML    string   `json:"html,omitempty"`
	ReplyTo string   `json:"reply_to,omitempty"`
}

// Job is a job as the API shows it.
type Job struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	Type string `json:"type"`
	// Status is scheduled, paused, completed, permanently_failed, cancelled
	// or expired; only scheduled and paused jobs can still run.
	Status string `json:"status"`
	// Payload is the payload as given, compacted.
	Payload    json.RawMessage `json:"payload"`
	Priority   int             `json:"priority"`
	MaxRetries int             `json:"max_retries"`
	// Timeout, Retention and ExpiresAfter are Go durations ("1m30s"); the
	// last two are empty when the job has none of its own.
	Timeout      string            `json:"timeout"`
	Retention    string            `json:"retention,omitempty"`
	History      string            `json:"history"`
	Labels       map[string]string `json:"labels"`
	Key          string            `json:"key,omitempty"`
	ExpiresAfter string            `json:"expires_after,omitempty"`
	// Overlap is empty for a one-off job.
	Overlap string  `json:"overlap,omitempty"`
	Notify  *Notify `json:"notify,omitempty"`
	// RunAt is a one-off job's due time; nil for a recurring one.
	RunAt *time.Time `json:"run_at"`
	// Schedule is a recurring job's normalized schedule; nil for a one-off.
	Schedule *Schedule `json:"schedule,omitempty"`
	Timezone string    `json:"timezone"`
	// NextRunAt is nil once the job will not run again.
	NextRunAt    *time.Time `json:"next_run_at"`
	PausedReason string     `json:"paused_reason,omitempty"`
	CreatedAt    time.Time  `json:"created_at"`
	UpdatedAt    time.Time  `json:"updated_at"`
	Owner        string     `json:"owner"`
	LastRun      *LastRun   `json:"last_run"`
}

// LastRun is a job's latest attempt, shown with the job.
type LastRun struct {
	Status       string     `json:"status"`
	Attempt      int        `json:"attempt"`
	ScheduledFor time.Time  `json:"scheduled_for"`
	StartedAt    time.Time  `json:"started_at"`
	FinishedAt   *time.Time `json:"finished_at"`
	Error        string     `json:"error"`
}

// JobList is one page of jobs, newest first; NextCursor is empty on the
// last page.
type JobList struct {
	Jobs       []Job  `json:"jobs"`
	NextCursor string `json:"next_cursor"`
}

// Upcoming is one future occurrence, in the job's zone and in UTC.
type Upcoming struct {
	At  time.Time `json:"at"`
	UTC time.Time `json:"utc"`
}

// Triggered is the occurrence POST /api/v1/jobs/{id}/trigger queued.
type Triggered struct {
	JobID          string    `json:"job_id"`
	ScheduledFor   time.Time `json:"scheduled_for"`
	IdempotencyKey string    `json:"idempotency_key"`
}

// Retried is the attempt POST /api/v1/jobs/{id}/retry queued.
type Retried struct {
	JobID          string    `json:"job_id"`
	ScheduledFor   time.Time `json:"scheduled_for"`
	Attempt        int       `json:"attempt"`
	IdempotencyKey string    `json:"idempotency_key"`
}

// Aborted lists the attempts POST /api/v1/jobs/{id}/abort stopped.
type Aborted struct {
	JobID    string           `json:"job_id"`
	Attempts []AbortedAttempt `json:"attempts"`
}

// AbortedAttempt is one attempt an abort stopped.
type AbortedAttempt struct {
	ScheduledFor time.Time `json:"scheduled_for"`
	Attempt      int       `json:"attempt"`
	StartedAt    time.Time `json:"started_at"`
}

// BatchRequest is the body of POST /api/v1/jobs:batch: up to 10,000 jobs,
// created together or not at all.
type BatchRequest struct {
	Owner string    `json:"owner,omitempty"`
	Jobs  []JobSpec `json:"jobs"`
}

// BatchCreated is the answer to a batch: the new ids in the order given.
type BatchCreated struct {
	Created int      `json:"created"`
	IDs     []string `json:"ids"`
}

// The actions of POST /api/v1/jobs:bulk.
const (
	BulkPause   = "pause"
	BulkResume  = "resume"
	BulkCancel  = "cancel"
	BulkTrigger = "trigger"
	BulkRetry   = "retry"
)

// BulkRequest applies Action to the jobs named by IDs or matching Filter
// (one of them), up to 10,000; DryRun only counts them.
type BulkRequest struct {
	Action string      `json:"action"`
	IDs    []string    `json:"ids,omitempty"`
	Filter *BulkFilter `json:"filter,omitempty"`
	DryRun bool        `json:"dry_run,omitempty"`
}

// BulkFilter chooses the jobs of a bulk action, as the list's filters do.
type BulkFilter struct {
	Status string `json:"status,omitempty"`
	Type   string `json:"type,omitempty"`
	// Labels are "key=value"; a job must carry every one.
	Labels []string `json:"label,omitempty"`
	Q      string   `json:"q,omitempty"`
	Owner  string   `json:"owner,omitempty"`
}

// BulkResult says what a bulk action matched, changed and skipped.
type BulkResult struct {
	Action  string        `json:"action"`
	DryRun  bool          `json:"dry_run"`
	Matched int           `json:"matched"`
	Changed int           `json:"changed"`
	Skipped []BulkSkipped `json:"skipped"`
	IDs     []string      `json:"ids,omitempty"`
}

// BulkSkipped is a matched job the action left alone, and why.
type BulkSkipped struct {
	ID     string `json:"id"`
	Reason string `json:"reason"`
}

// The actions of a DryRun.
const (
	DryRunCreate    = "create"
	DryRunUpdate    = "update"
	DryRunUnchanged = "unchanged"
)

// DryRun is what a create, update or put would do: Action is create,
// update or unchanged; Changes the fields that would change; Job the job
// as it would be. Current, for a put whose key a finished job holds, is
// that job (a put creates a new one; Changes compares with it).
type DryRun struct {
	DryRun  bool          `json:"dry_run"`
	Action  string        `json:"action"`
	Changes []FieldChange `json:"changes"`
	Job     Job           `json:"job"`
	Current *Job          `json:"current,omitempty"`
}

// FieldChange is one field a request would change, old and new as the
// job's view shows them (a secret as its fingerprint); null for none.
type FieldChange struct {
	Field string          `json:"field"`
	Old   json.RawMessage `json:"old"`
	New   json.RawMessage `json:"new"`
}

// Package job is tock's domain model: what a job is, which states it and its runs
// move through, how one occurrence is named, and what makes a request valid. Every
// service and every other package of pkg/ speaks in these types.
package job

import (
	"encoding/json"
	"time"

	"github.com/google/uuid"
)

// Type names a job's type; package jobtype holds the types.
type Type string

// Status is a job's lifecycle state.
type Status string

// Job statuses. A one-off job ends completed or permanently_failed after its
// last attempt; cancelled is what DELETE leaves behind, so history survives.
const (
	StatusScheduled         Status = "scheduled"
	StatusPaused            Status = "paused"
	StatusCompleted         Status = "completed"
	StatusPermanentlyFailed Status = "permanently_failed"
	StatusCancelled         Status = "cancelled"
	// StatusExpired is a job whose last occurrence could not start within
	// its expires_after.
	StatusExpired Status = "expired"
)

// RunStatus is the state of one attempt of one occurrence.
type RunStatus string

// Run statuses: running while an attempt is leased to a worker; failed when an
// attempt failed and another follows; permanently_failed when it was the last.
const (
	RunRunning           RunStatus = "running"
	RunCompleted         RunStatus = "completed"
	RunFailed            RunStatus = "failed"
	RunPermanentlyFailed RunStatus = "permanently_failed"
	// RunSkipped records an occurrence its misfire policy chose not to run.
	RunSkipped RunStatus = "skipped"
	// RunAborted is an attempt stopped while it ran, by its owner or an
	// administrator; it is not retried.
	RunAborted RunStatus = "aborted"
	// RunExpired is an attempt that could not start within its job's
	// expires_after of its due time; it was not run.
	RunExpired RunStatus = "expired"
)

// Terminal reports whether no further attempt of this run will happen.
func (s RunStatus) Terminal() bool { return s != RunRunning }

// Limits and defaults of the job model.
const (
	DefaultMaxRetries = 3
	MaxRetriesLimit   = 25
	DefaultTimeout    = 30 * time.Second
	MinTimeout        = 100 * time.Millisecond
	MaxTimeout        = 1 * time.Hour
	MinPriority       = -32768
	MaxPriority       = 32767
	MaxNameLen        = 200
)

// Job is one scheduled unit of work, as stored in Postgres.
type Job struct {
	ID         uuid.UUID
	Owner      uuid.UUID
	Name       string
	Type       Type
	Status     Status
	Priority   int
	MaxRetries int
	Timeout    time.Duration
	Payload    json.RawMessage
	// RunAt is the due time of a one-off job; zero for a recurring one.
	RunAt time.Time
	// Schedule is the normalized recurrence (schedule.Spec as JSON) of a
	// recurring job; nil for a one-off job.
	Schedule json.RawMessage
	// Timezone is the IANA zone the job is shown and evaluated in.
	Timezone string
	// Generation counts schedule changes (edit, pause, resume); see Occurrence.
	Generation int
	// Occurrences counts the occurrences planned so far, for a count limit.
	Occurrences int
	// LastAt is the final occurrence of a recurrence that has ended; zero
	// while more may follow.
	LastAt time.Time
	// PerHour is how many times an hour a recurring job runs (see
	// schedule.Schedule.PerHour); 0 for a one-off job. It is still stored for
	// older releases, which read it, but no limit uses it any more: an hourly
	// average lets a burst through (see Load).
	PerHour int
	// Load is when a recurring job fires (schedule.Schedule.Load), which its
	// owner's limits on occurrences a minute and a second add up; nil for a
	// one-off job, and for a recurring one stored before loads were kept
	// until the dashboard's start-up pass fills it in (store.BackfillLoads).
	Load *Load
	// PausedReason says why tock paused the job itself (repeated permanent
	// failures); empty otherwise.
	PausedReason string
	// Retention is how long the job is kept once it has finished, with its
	// runs; zero for the operator's default (TOCK_JOB_RETENTION).
	Retention time.Duration
	// History is which runs are kept: HistoryAll, or HistoryFailures (the
	// failed ones, and only the newest KeptSuccesses completed ones).
	History History
	// Labels are the owner's own references ("customer": "1234"), at most
	// MaxLabels pairs; nil when none.
	Labels map[string]string
	// Key is the owner's own name for the job, unique among their jobs that
	// can still run (PUT /api/v1/jobs/by-key/{key}); empty when none.
	Key string
	// ExpiresAfter is how late an attempt may start: one that cannot start
	// within it after its due time is recorded RunExpired instead; zero
	// never expires.
	ExpiresAfter time.Duration
	// Overlap is what an occurrence of a recurring job does while an
	// earlier one still runs; "" is OverlapAllow.
	Overlap Overlap
	// Notify is where alerts on the job's failures go; nil sends none.
	Notify *Notify
	// Flow is the flow key the job's occurrences go through, and the limits
	// it sets for it; nil for none.
	Flow *Flow
	// Debounce is the key that folds a burst of creates of one-off jobs
	// into this one, and its window; nil for none.
	Debounce *Debounce
	// Jitter spreads jobs due at the same instant: each occurrence is due
	// JitterOffset after its nominal time, an offset in [0, Jitter) chosen
	// once for the job (NewJitterOffset) and kept while Jitter stays the
	// same, so previews, retries and idempotency keys are stable. Both are
	// zero for none. RunAt, DueAt and every occurrence's ScheduledFor are
	// the jittered times: the API shows a one-off job's nominal time
	// (NominalRunAt).
	Jitter, JitterOffset time.Duration
	// SkipCalendars names the owner's calendars (package calendar) whose
	// days and ranges a recurring job's occurrences are skipped on; nil for
	// none.
	SkipCalendars []string
	// SLO is the job's service level: when its occurrences start too late,
	// or it stays too long without completing one, the scheduler alerts;
	// zero for none.
	SLO SLO
	// Secrets are the credentials of Payload and Notify (see
	// jobtype.Spot), sealed by package secretbox as one JSON object from
	// each one's fingerprint to its value; "" when they hold none. Payload
	// and Notify hold the fingerprints in their places, so nothing that
	// shows or copies them reveals a credential; the worker puts them back
	// (jobspec.Reveal).
	Secrets string
	// SecretsUnsealed marks a job stored before secrets were sealed, whose
	// Payload and Notify may still hold them in clear: views hide them
	// anyway, and the dashboard seals them at start (store.SealJobSecrets).
	SecretsUnsealed bool
	// ClaimedBy is the process number of the dashboard that stores a
	// one-off job claimed and adds it to the due set after the commit
	// (store.Create.ClaimedBy); zero for none. It is written once.
	ClaimedBy int32
	// TraceParent is the W3C traceparent of the span that created the job,
	// which each attempt's span links to; empty when the dashboard that
	// created it had tracing off. It is written once, at creation.
	TraceParent string
	// DueAt is the next occurrence not yet handed to Redis: the loader's cursor.
	// Zero once the occurrence is in Redis (claimed) or nothing is left to run.
	DueAt     time.Time
	CreatedAt time.Time
	UpdatedAt time.Time
	// SLOState is whether the job's SLO is broken now, when the store was
	// asked for it (a view); nil otherwise.
	SLOState *SLOState
	// LastRun is the job's latest attempt, when the store was asked for it
	// (listings and single reads); nil if it never ran.
	LastRun *Run
}

// History says which of a job's runs are kept.
type History string

const (
	// HistoryAll keeps every run for the retention period.
	HistoryAll History = "all"
	// HistoryFailures keeps the runs that did not complete for the retention
	// period, and only the newest KeptSuccesses completed ones, so a job that
	// runs every second does not keep 86,400 rows a day nobody reads.
	HistoryFailures History = "failures"
	// KeptSuccesses is how many completed runs HistoryFailures keeps.
	KeptSuccesses = 100
)

// Overlap is a recurring job's overlap policy.
type Overlap string

const (
	// OverlapAllow runs every occurrence when due, whatever still runs.
	OverlapAllow Overlap = "allow"
	// OverlapSkip records an occurrence due while an earlier one of the
	// job still runs as skipped, reason overlap.
	OverlapSkip Overlap = "skip"
	// OverlapBufferOne makes such an occurrence wait until the running one
	// ends; at most one waits, and any other is skipped.
	OverlapBufferOne Overlap = "buffer_one"
)

// Expiry bounds.
const (
	MinExpiresAfter = time.Second
	MaxExpiresAfter = 366 * 24 * time.Hour
)

// MaxJitter bounds a job's jitter: a recurring job's is also at most the
// shortest gap between its occurrences.
const MaxJitter = 24 * time.Hour

// SLO is a job's service level objective: LateAfter, an occurrence
// should start at most this long after it is due; SilentAfter (recurring
// jobs), some occurrence should complete at least this often. Zero for
// none.
type SLO struct {
	LateAfter, SilentAfter time.Duration
}

// Set says the job has an SLO.
func (s SLO) Set() bool { return s.LateAfter > 0 || s.SilentAfter > 0 }

// SLOState is whether a job's SLO is broken now: LateSince and
// SilentSince are when each breach began (zero: none), LateBy the
// lateness that began the late one.
type SLOState struct {
	LateSince, SilentSince time.Time
	LateBy                 time.Duration
}

// Breached says some breach is on.
func (s SLOState) Breached() bool { return !s.LateSince.IsZero() || !s.SilentSince.IsZero() }

// SLO bounds.
const (
	MinLateAfter   = time.Millisecond
	MaxLateAfter   = 24 * time.Hour
	MinSilentAfter = time.Second
	MaxSilentAfter = 366 * 24 * time.Hour
)

// MaxKeyLen bounds a job's key, in characters.
const MaxKeyLen = 200

// Label bounds: keys are [a-z0-9_.-]{1,MaxLabelKey}.
const (
	MaxLabels     = 20
	MaxLabelKey   = 63
	MaxLabelValue = 200 // characters
)

// ValidLabelKey reports whether k may name a label.
func ValidLabelKey(k string) bool {
	if len(k) == 0 || len(k) > MaxLabelKey {
		return false
	}
	for i := range len(k) {
		c := k[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '.' || c == '-') {
			return false
		}
	}
	return true
}

// Retention bounds.
const (
	MinRetention = time.Second
	MaxRetention = 10 * 366 * 24 * time.Hour
)

// Recurring reports whether the job has a recurrence rather than one run.
func (j *Job) Recurring() bool { return len(j.Schedule) > 0 }

// Occurrence is the first attempt of j's occurrence at at, under j's
// current generation and priority, routed by its owner and target.
func (j *Job) Occurrence(at time.Time) Occurrence {
	return Occurrence{JobID: j.ID, ScheduledFor: at, Attempt: 1, Priority: j.Priority, Generation: j.Generation}.Route(j.Owner, j.Payload).Through(j.FlowKey())
}

// FlowKey is the job's flow key, "" for none.
func (j *Job) FlowKey() string { return j.Flow.KeyOrNone() }

// Run is one attempt of one occurrence of a job.
type Run struct {
	ID           uuid.UUID
	JobID        uuid.UUID
	Owner        uuid.UUID
	ScheduledFor time.Time
	Attempt      int
	Status       RunStatus
	// DueAt is when this attempt was due: ScheduledFor for the first attempt,
	// the backoff time for a retry. Lateness is measured from it.
	DueAt      time.Time
	StartedAt  time.Time
	FinishedAt time.Time
	LeaseUntil time.Time
	// Throttled is how long the attempt waited behind its flow key's
	// limits after DueAt: late by design, not counted in its lateness.
	Throttled time.Duration
	Output    string
	Error     string
}

// Lateness is how long after its due time the attempt started, less what
// it waited behind its flow key's limits.
func (r *Run) Lateness() time.Duration { return r.StartedAt.Sub(r.DueAt) - r.Throttled }

// NewID returns a time-ordered UUIDv7, so ids sort by creation and index well.
func NewID() uuid.UUID { return uuid.Must(uuid.NewV7()) }

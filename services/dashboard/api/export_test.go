package api

import (
	"encoding/json"

	"github.com/google/uuid"

	"github.com/tockhq/tock/pkg/job"
)

// This file is compiled only into the package's tests (package api_test),
// which decode the API's answers into these types. The server writes a
// job's view from jobspec.Fields; TestJobViewType holds Job to the
// OpenAPI document's Job schema, so the two cannot drift apart.

// Job is a job as the API shows it.
type Job struct {
	ID         uuid.UUID       `json:"id"`
	Name       string          `json:"name"`
	Type       job.Type        `json:"type"`
	Status     job.Status      `json:"status"`
	Payload    json.RawMessage `json:"payload"`
	Priority   int             `json:"priority"`
	MaxRetries int             `json:"max_retries"`
	// Timeout is a Go duration string such as "30s".
	Timeout string `json:"timeout"`
	// RunAt is the due time of a one-off job; null for a recurring one.
	RunAt Time `json:"run_at"`
	// Schedule is a recurring job's normalized schedule, every default filled
	// in; absent for a one-off job.
	Schedule json.RawMessage `json:"schedule,omitempty"`
	// Timezone is the IANA zone the job is evaluated and shown in.
	Timezone string `json:"timezone"`
	// NextRunAt is null once the job will not run again.
	NextRunAt Time `json:"next_run_at"`
	// Retention is how long the job is kept once finished, when it has its
	// own; absent for the operator's default (TOCK_JOB_RETENTION).
	Retention string `json:"retention,omitempty"`
	// History is which runs are kept: "all" or "failures".
	History job.History `json:"history"`
	// Labels are the owner's references on the job; {} when none.
	Labels map[string]string `json:"labels"`
	// Key is the owner's own name for the job; absent when none.
	Key string `json:"key,omitempty"`
	// ExpiresAfter is how late an attempt may start before it is recorded
	// expired instead; absent when it never expires.
	ExpiresAfter string `json:"expires_after,omitempty"`
	// Overlap is a recurring job's overlap policy; absent for a one-off job.
	Overlap job.Overlap `json:"overlap,omitempty"`
	// Notify is where alerts on the job's failures go; absent when none.
	Notify *job.Notify `json:"notify,omitempty"`
	// PausedReason says why tock paused the job itself, if it did.
	PausedReason string    `json:"paused_reason,omitempty"`
	CreatedAt    Time      `json:"created_at"`
	UpdatedAt    Time      `json:"updated_at"`
	Owner        uuid.UUID `json:"owner"`
	// LastRun is the latest attempt and its outcome; null if it never ran.
	LastRun *LastRun `json:"last_run"`
}

// LastRun is a job's latest attempt, shown with the job.
type LastRun struct {
	Status       job.RunStatus `json:"status"`
	Attempt      int           `json:"attempt"`
	ScheduledFor Time          `json:"scheduled_for"`
	StartedAt    Time          `json:"started_at"`
	FinishedAt   Time          `json:"finished_at"`
	Error        string        `json:"error"`
}

// JobList is one page of GET /api/v1/jobs.
type JobList struct {
	Jobs       []Job  `json:"jobs"`
	NextCursor string `json:"next_cursor"`
}

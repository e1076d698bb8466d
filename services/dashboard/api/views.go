package api

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"
	"go.uber.org/zap"

	"github.com/tockhq/tock/pkg/job"
	"github.com/tockhq/tock/pkg/jobspec"
	"github.com/tockhq/tock/pkg/schedule"
	"github.com/tockhq/tock/pkg/store"
	"github.com/tockhq/tock/services/dashboard/access"
)

// TimeFormat is how the API writes instants: RFC 3339 in UTC with
// milliseconds, tock's precision.
const TimeFormat = jobspec.TimeFormat

// Time is an instant on the wire, in TimeFormat; the zero Time is null.
type Time struct{ time.Time }

// MarshalJSON writes the instant in TimeFormat, or null when it is zero.
func (t Time) MarshalJSON() ([]byte, error) {
	if t.IsZero() {
		return []byte("null"), nil
	}
	return json.Marshal(t.UTC().Format(TimeFormat))
}

// UnmarshalJSON reads any RFC 3339 instant, or null as the zero Time, so
// clients written in Go can decode what the API writes.
func (t *Time) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		t.Time = time.Time{}
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("time: %w", err)
	}
	v, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return err
	}
	t.Time = v.UTC()
	return nil
}

// viewUnits and viewTime bound the work of finding one job's next run for a
// view: a listing shows up to MaxPageSize jobs, and a stored rule was checked
// when it was stored (a plain one needs a few dozen units and microseconds).
const (
	viewUnits = schedule.RequestUnits / 50
	viewTime  = 2 * time.Millisecond
)

// jobView shows j as of now, as jobspec.Fields say (jobspec.View). A paused
// job has no next run (GET /api/v1/jobs/{id}/next still previews what it
// would run once resumed). A stored schedule that no longer compiles leaves
// next_run_at null rather than failing the request: the loader ends such a
// job with a skipped run that says why.
func (s *Server) jobView(j *job.Job, now time.Time) jobspec.View {
	x := jobspec.ViewContext{Box: s.limits.Box}
	if j.Status == job.StatusPaused {
		return jobspec.NewView(j, x)
	}
	next, err := upcoming(schedule.NewBudget(context.Background(), viewUnits, viewTime), j, now, 1)
	if err != nil {
		s.log.Warn("stored_schedule_invalid", zap.Stringer("job_id", j.ID), zap.Error(err))
	}
	if len(next) > 0 {
		x.Next = next[0]
	}
	return jobspec.NewView(j, x)
}

// jobPage is one page of GET /api/v1/jobs. NextCursor is "" on the last page.
type jobPage struct {
	Jobs       []jobspec.View `json:"jobs"`
	NextCursor string         `json:"next_cursor"`
}

// Run is one attempt of one occurrence as the API shows it.
type Run struct {
	ID           uuid.UUID     `json:"id"`
	JobID        uuid.UUID     `json:"job_id"`
	ScheduledFor Time          `json:"scheduled_for"`
	Attempt      int           `json:"attempt"`
	Status       job.RunStatus `json:"status"`
	StartedAt    Time          `json:"started_at"`
	// FinishedAt is null while the attempt runs.
	FinishedAt Time   `json:"finished_at"`
	Output     string `json:"output"`
	Error      string `json:"error"`
	// LatenessMS is how long after its due time the attempt started.
	LatenessMS int64 `json:"lateness_ms"`
	// ThrottledMS is how long the attempt waited behind its flow key's
	// limits (late by design, not in LatenessMS); absent when it did not.
	ThrottledMS int64 `json:"throttled_ms,omitempty"`
	// JobName and JobType are those of the run's job, so that a list of
	// runs across jobs says what each one ran.
	JobName string   `json:"job_name"`
	JobType job.Type `json:"job_type"`
}

func runView(r *job.Run) Run {
	return Run{
		ID:           r.ID,
		JobID:        r.JobID,
		ScheduledFor: Time{r.ScheduledFor},
		Attempt:      r.Attempt,
		Status:       r.Status,
		StartedAt:    Time{r.StartedAt},
		FinishedAt:   Time{r.FinishedAt},
		Output:       r.Output,
		Error:        r.Error,
		LatenessMS:   r.Lateness().Milliseconds(),
		ThrottledMS:  r.Throttled.Milliseconds(),
	}
}

// foundRunView is a run of a search across jobs, with its job's name and type.
func foundRunView(r *store.FoundRun) Run {
	v := runView(&r.Run)
	v.JobName, v.JobType = r.JobName, r.JobType
	return v
}

// RunList is one page of GET /api/v1/jobs/{id}/runs or GET /api/v1/runs.
// NextCursor is "" on the last page; a run search's page may be short, even
// empty, and still have a next one.
type RunList struct {
	Runs       []Run  `json:"runs"`
	NextCursor string `json:"next_cursor"`
}

// RunStats is the answer of GET /api/v1/runs:stats: how many runs were
// scheduled in [Since, Until), by GroupBy, the largest MaxRunGroups groups
// first; Truncated says more groups were left out.
type RunStats struct {
	Since     Time            `json:"since"`
	Until     Time            `json:"until"`
	GroupBy   string          `json:"group_by"`
	Groups    []RunStatsGroup `json:"groups"`
	Truncated bool            `json:"truncated"`
}

// RunStatsGroup is one group of RunStats: a run status, a job type or a
// job id as Key, with the job's Name when grouped by job.
type RunStatsGroup struct {
	Key   string `json:"key"`
	Name  string `json:"name,omitempty"`
	Count int64  `json:"count"`
}

// Upcoming is one future occurrence: At in the job's time zone, UTC the same
// instant in UTC, both RFC 3339 (with milliseconds only when there are any).
type Upcoming struct {
	At  string `json:"at"`
	UTC string `json:"utc"`
}

// UpcomingList is the answer of GET /api/v1/jobs/{id}/next and of
// POST /api/v1/schedules/preview: the next occurrences, earliest first.
type UpcomingList struct {
	Next []Upcoming `json:"next"`
	// Skipped are the occurrences among them that the job's calendars
	// skip (skip_calendars), left out of Next; absent when none.
	Skipped []SkippedUpcoming `json:"skipped,omitempty"`
}

func upcomingView(times []time.Time, loc *time.Location) UpcomingList {
	out := UpcomingList{Next: make([]Upcoming, len(times))}
	for i, t := range times {
		out.Next[i] = Upcoming{At: t.In(loc).Format(time.RFC3339Nano), UTC: t.UTC().Format(time.RFC3339Nano)}
	}
	return out
}

// Triggered is the answer of POST /api/v1/jobs/{id}/trigger: the extra
// occurrence that was put in the due set, and the idempotency key its target
// receives.
type Triggered struct {
	JobID          uuid.UUID `json:"job_id"`
	ScheduledFor   Time      `json:"scheduled_for"`
	IdempotencyKey string    `json:"idempotency_key"`
}

// Limits are per-user limits as the API shows and takes them; see Quotas.
type Limits struct {
	RequestsPerMinute *int `json:"requests_per_minute,omitempty"`
	RequestBurst      *int `json:"request_burst,omitempty"`
	JobsPerMinute     *int `json:"jobs_per_minute,omitempty"`
	JobBurst          *int `json:"job_burst,omitempty"`
	MaxActiveJobs     *int `json:"max_active_jobs,omitempty"`
	// OccurrencesPerMinute caps how often the user's scheduled recurring jobs
	// fire together in their busiest minute, OccurrencesPerSecond in their
	// busiest second.
	OccurrencesPerMinute *int `json:"occurrences_per_minute,omitempty"`
	OccurrencesPerSecond *int `json:"occurrences_per_second,omitempty"`
	// MaxRunning caps the user's attempts in flight at once.
	MaxRunning *int `json:"max_running,omitempty"`
}

// EffectiveLimits are the limits that hold for a user: their own over the
// operator's. A rate of 0 is unlimited, as is a max_active_jobs of 0.
type EffectiveLimits struct {
	RequestsPerMinute int `json:"requests_per_minute"`
	RequestBurst      int `json:"request_burst"`
	JobsPerMinute     int `json:"jobs_per_minute"`
	JobBurst          int `json:"job_burst"`
	MaxActiveJobs     int `json:"max_active_jobs"`
	// OccurrencesPerMinute and OccurrencesPerSecond: 0 is unlimited.
	OccurrencesPerMinute int `json:"occurrences_per_minute"`
	OccurrencesPerSecond int `json:"occurrences_per_second"`
	// MaxRunning: 0 means the scheduler's default, derived from the
	// workers' slots (TOCK_LIMIT_MAX_RUNNING, docs/operations.md).
	MaxRunning int `json:"max_running"`
}

// User is a user as the API shows it.
type User struct {
	ID              uuid.UUID       `json:"id"`
	Name            string          `json:"name"`
	Role            string          `json:"role"`
	CreatedAt       Time            `json:"created_at"`
	DisabledAt      Time            `json:"disabled_at"`
	Limits          Limits          `json:"limits"`
	EffectiveLimits EffectiveLimits `json:"effective_limits"`
	// Scopes, in GET /api/v1/me only, are what the caller's key may do.
	Scopes []string `json:"scopes,omitempty"`
}

func (s *Server) userView(u *store.User) User {
	q := s.quotas.effective(u.Limits, u.Role == store.RoleAdmin)
	return User{
		ID:         u.ID,
		Name:       u.Name,
		Role:       u.Role,
		CreatedAt:  Time{u.CreatedAt},
		DisabledAt: Time{u.DisabledAt},
		Limits:     Limits(u.Limits),
		EffectiveLimits: EffectiveLimits{RequestsPerMinute: q.RequestsPerMinute, RequestBurst: q.RequestBurst,
			JobsPerMinute: q.JobsPerMinute, JobBurst: q.JobBurst, MaxActiveJobs: q.MaxActiveJobs,
			OccurrencesPerMinute: q.OccurrencesPerMinute, OccurrencesPerSecond: q.OccurrencesPerSecond, MaxRunning: q.MaxRunning},
	}
}

// UserList is one page of GET /api/v1/users. NextCursor is "" on the last page.
type UserList struct {
	Users      []User `json:"users"`
	NextCursor string `json:"next_cursor"`
}

// Key is an API key as the API shows it. Key, the key itself, is only in
// the answer that created it; tock cannot show it again.
type Key struct {
	ID         uuid.UUID `json:"id"`
	UserID     uuid.UUID `json:"user_id"`
	Name       string    `json:"name"`
	Prefix     string    `json:"prefix"`
	CreatedAt  Time      `json:"created_at"`
	LastUsedAt Time      `json:"last_used_at"`
	RevokedAt  Time      `json:"revoked_at"`
	// Scopes are what the key may do; all_scopes says they are everything
	// its user's role allows (no scopes were named at its creation).
	Scopes    []string `json:"scopes"`
	AllScopes bool     `json:"all_scopes"`
	ExpiresAt Time     `json:"expires_at"`
	Key       string   `json:"key,omitempty"`
}

// keyView shows a key of a user of role.
func keyView(k *store.Key, role string) Key {
	return Key{ID: k.ID, UserID: k.UserID, Name: k.Name, Prefix: k.Prefix, CreatedAt: Time{k.CreatedAt},
		LastUsedAt: Time{k.LastUsedAt}, RevokedAt: Time{k.RevokedAt}, Scopes: access.KeyScopes(k, role).Names(),
		AllScopes: k.Scopes == nil, ExpiresAt: Time{k.ExpiresAt}}
}

// KeyList is the answer of GET /api/v1/users/{id}/keys.
type KeyList struct {
	Keys []Key `json:"keys"`
}

// AuditEntry is one change recorded in the audit log.
type AuditEntry struct {
	ID         int64           `json:"id"`
	At         Time            `json:"at"`
	Actor      uuid.UUID       `json:"actor"`
	Action     string          `json:"action"`
	TargetType string          `json:"target_type"`
	TargetID   uuid.UUID       `json:"target_id"`
	Change     json.RawMessage `json:"change"`
}

// AuditList is one page of GET /api/v1/audit. NextCursor is "" on the last page.
type AuditList struct {
	Entries    []AuditEntry `json:"entries"`
	NextCursor string       `json:"next_cursor"`
}

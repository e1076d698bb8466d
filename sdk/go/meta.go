package tock

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Me returns the caller, with the limits that hold for them.
func (c *Client) Me(ctx context.Context) (*User, error) {
	var u User
	if err := c.do(ctx, call{method: http.MethodGet, path: "/api/v1/me"}, &u); err != nil {
		return nil, err
	}
	return &u, nil
}

// SigningSecret is the caller's webhook signing secret and how requests
// carry the signature.
type SigningSecret struct {
	Secret string `json:"secret"`
	Header string `json:"header"`
	Scheme string `json:"scheme"`
	// PreviousValidUntil, after a rotation, is until when deliveries are
	// signed under the previous secret too; nil when they are not.
	PreviousValidUntil *time.Time `json:"previous_valid_until"`
}

// SigningSecret returns the caller's webhook signing secret.
func (c *Client) SigningSecret(ctx context.Context) (*SigningSecret, error) {
	var s SigningSecret
	if err := c.do(ctx, call{method: http.MethodGet, path: "/api/v1/signing-secret"}, &s); err != nil {
		return nil, err
	}
	return &s, nil
}

// RotateSigningSecret replaces the caller's signing secret; the previous one
// keeps signing for grace (0: not at all; the server's default, 24h, when
// grace is negative). Retried safely: it carries an Idempotency-Key.
func (c *Client) RotateSigningSecret(ctx context.Context, grace time.Duration) (*SigningSecret, error) {
	body := map[string]string{}
	if grace >= 0 {
		body["grace"] = grace.String()
	}
	var s SigningSecret
	if err := c.do(ctx, call{method: http.MethodPost, path: "/api/v1/signing-secret:rotate", body: body, create: true}, &s); err != nil {
		return nil, err
	}
	if strings.HasPrefix(s.Secret, secretFingerprint) {
		// A retry whose first try rotated but lost its answer gets that
		// answer replayed, which never repeats the secret: read it.
		return c.SigningSecret(ctx)
	}
	return &s, nil
}

// secretFingerprint starts what stands for a secret in an answer the server
// replays under an Idempotency-Key ("secret:sha256:<32 hex digits>").
const secretFingerprint = "secret:sha256:"

// JobType is one job type with an example payload.
type JobType struct {
	Type    string          `json:"type"`
	Summary string          `json:"summary"`
	Example json.RawMessage `json:"example"`
}

// JobTypes lists the job types the server runs.
func (c *Client) JobTypes(ctx context.Context) ([]JobType, error) {
	var out struct {
		JobTypes []JobType `json:"job_types"`
	}
	if err := c.do(ctx, call{method: http.MethodGet, path: "/api/v1/job-types"}, &out); err != nil {
		return nil, err
	}
	return out.JobTypes, nil
}

// PreviewRequest is a timing, as in JobSpec (exactly one of RunAt, Delay,
// RunOn or Schedule), and how many occurrences to list (N, 1 to 100; 0 for
// the server's 10).
type PreviewRequest struct {
	RunAt    *time.Time `json:"run_at,omitempty"`
	Delay    string     `json:"delay,omitempty"`
	RunOn    string     `json:"run_on,omitempty"`
	Timezone string     `json:"timezone,omitempty"`
	Schedule *Schedule  `json:"schedule,omitempty"`
	N        int        `json:"n,omitempty"`
}

// Preview lists the next occurrences of a timing, creating nothing.
func (c *Client) Preview(ctx context.Context, req PreviewRequest) ([]Upcoming, error) {
	var out struct {
		Next []Upcoming `json:"next"`
	}
	if err := c.do(ctx, call{method: http.MethodPost, path: "/api/v1/schedules/preview", body: req, readOnly: true}, &out); err != nil {
		return nil, err
	}
	return out.Next, nil
}

// AuditEntry is one change in the audit log.
type AuditEntry struct {
	ID         int64           `json:"id"`
	At         time.Time       `json:"at"`
	Actor      string          `json:"actor"`
	Action     string          `json:"action"`
	TargetType string          `json:"target_type"`
	TargetID   string          `json:"target_id"`
	Change     json.RawMessage `json:"change"`
}

// AuditList is one page of the audit log, newest first.
type AuditList struct {
	Entries    []AuditEntry `json:"entries"`
	NextCursor string       `json:"next_cursor"`
}

// AuditFilter chooses the entries of the audit log; zero fields do not
// filter.
type AuditFilter struct {
	Actor string
	// Job keeps the changes to one job; Target those to one job, user or key.
	Job    string
	Target string
	// Action is such as job.create or user.disable.
	Action string
	Since  time.Time
	Until  time.Time
	Limit  int
	Cursor string
}

// Audit returns one page of the audit log (administrators).
func (c *Client) Audit(ctx context.Context, f AuditFilter) (*AuditList, error) {
	q := query{}
	q.str("actor", f.Actor)
	q.str("job", f.Job)
	q.str("target", f.Target)
	q.str("action", f.Action)
	q.time("since", f.Since)
	q.time("until", f.Until)
	q.int("limit", f.Limit)
	q.str("cursor", f.Cursor)
	var out AuditList
	if err := c.do(ctx, call{method: http.MethodGet, path: "/api/v1/audit", query: url.Values(q)}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// System is the system page's figures (administrators).
type System struct {
	GeneratedAt time.Time        `json:"generated_at"`
	DueNextHour []MinuteCount    `json:"due_next_hour"`
	Queue       SystemQueue      `json:"queue"`
	Runs        []MinuteRuns     `json:"runs"`
	Lateness    []MinuteLateness `json:"lateness"`
	Scheduler   SystemScheduler  `json:"scheduler"`
	Schedulers  []SchedulerInfo  `json:"schedulers"`
	Workers     []WorkerInfo     `json:"workers"`
}

// SystemQueue is the size of each stage of the Redis queue.
type SystemQueue struct {
	Due     int64 `json:"due"`
	Stream  int64 `json:"stream"`
	Pending int64 `json:"pending"`
	Held    int64 `json:"held"`
}

// SystemScheduler is the state of the loader's leadership lock.
type SystemScheduler struct {
	LoaderLockHeld  bool  `json:"loader_lock_held"`
	LoaderLockTTLMS int64 `json:"loader_lock_ttl_ms"`
}

// SchedulerInfo is one live scheduler instance.
type SchedulerInfo struct {
	Name     string    `json:"name"`
	LastSeen time.Time `json:"last_seen"`
	Leader   bool      `json:"leader"`
}

// WorkerInfo is one live worker instance.
type WorkerInfo struct {
	Name    string `json:"name"`
	Pending int64  `json:"pending"`
	IdleMS  int64  `json:"idle_ms"`
}

// MinuteCount is a count in one minute.
type MinuteCount struct {
	Minute time.Time `json:"minute"`
	Count  int64     `json:"count"`
}

// MinuteRuns counts one minute's runs by status.
type MinuteRuns struct {
	Minute time.Time        `json:"minute"`
	Counts map[string]int64 `json:"counts"`
}

// MinuteLateness is one minute's lateness percentiles.
type MinuteLateness struct {
	Minute time.Time `json:"minute"`
	P50MS  float64   `json:"p50_ms"`
	P99MS  float64   `json:"p99_ms"`
	Runs   int64     `json:"runs"`
}

// System returns the system page's figures.
func (c *Client) System(ctx context.Context) (*System, error) {
	var out System
	if err := c.do(ctx, call{method: http.MethodGet, path: "/api/v1/system"}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Readiness is GET /readyz: whether Postgres and Redis answer.
type Readiness struct {
	Status   string `json:"status"`
	Startup  string `json:"startup"`
	Postgres string `json:"postgres"`
	Redis    string `json:"redis"`
}

// Health reports whether the dashboard is alive (GET /healthz).
func (c *Client) Health(ctx context.Context) error {
	return c.do(ctx, call{method: http.MethodGet, path: "/healthz"}, nil)
}

// Ready reports whether the dashboard's Postgres and Redis answer (GET
// /readyz); a 503 is retried like any other, then returned as an *Error.
func (c *Client) Ready(ctx context.Context) (*Readiness, error) {
	var out Readiness
	if err := c.do(ctx, call{method: http.MethodGet, path: "/readyz"}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// OpenAPI returns the API's OpenAPI 3 document.
func (c *Client) OpenAPI(ctx context.Context) (json.RawMessage, error) {
	var out json.RawMessage
	if err := c.do(ctx, call{method: http.MethodGet, path: "/api/v1/openapi.json"}, &out); err != nil {
		return nil, err
	}
	return out, nil
}

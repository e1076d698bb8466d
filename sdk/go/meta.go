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
	var body signingSecretRotation
	if grace >= 0 {
		body.Grace = grace.String()
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

// JobTypes lists the job types the server runs.
func (c *Client) JobTypes(ctx context.Context) ([]JobType, error) {
	var out jobTypeList
	if err := c.do(ctx, call{method: http.MethodGet, path: "/api/v1/job-types"}, &out); err != nil {
		return nil, err
	}
	return out.JobTypes, nil
}

// Preview lists the next occurrences of a timing, creating nothing; those
// the calendars of req.SkipCalendars skip are left out (PreviewWithSkipped
// lists them too).
func (c *Client) Preview(ctx context.Context, req PreviewRequest) ([]Upcoming, error) {
	out, err := c.PreviewWithSkipped(ctx, req)
	if err != nil {
		return nil, err
	}
	return out.Next, nil
}

// PreviewWithSkipped is Preview with the occurrences before the last of
// them that the calendars of req.SkipCalendars skip, and why.
func (c *Client) PreviewWithSkipped(ctx context.Context, req PreviewRequest) (*Occurrences, error) {
	var out upcomingList
	if err := c.do(ctx, call{method: http.MethodPost, path: "/api/v1/schedules/preview", body: req, readOnly: true}, &out); err != nil {
		return nil, err
	}
	return occurrences(out), nil
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

// System returns the system page's figures.
func (c *Client) System(ctx context.Context) (*System, error) {
	var out System
	if err := c.do(ctx, call{method: http.MethodGet, path: "/api/v1/system"}, &out); err != nil {
		return nil, err
	}
	return &out, nil
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

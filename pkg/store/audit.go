package store

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/tockhq/tock/pkg/job"
)

// Actions recorded in the audit log. Clients filter on them, so they never
// change once shipped.
const (
	ActionJobCreate = "job.create"
	// ActionJobCreateBatch is one bulk create: one entry for the request,
	// targeting the batch, with the count and the ids of its jobs.
	ActionJobCreateBatch = "job.create_batch"
	ActionJobUpdate      = "job.update"
	ActionJobPause       = "job.pause"
	ActionJobResume      = "job.resume"
	ActionJobCancel      = "job.cancel"
	ActionJobTrigger     = "job.trigger"
	ActionJobRetry       = "job.retry"
	ActionJobAbort       = "job.abort"
	// ActionJobPurge removes a finished job and its runs before its
	// retention ends (DELETE ?purge=true).
	ActionJobPurge = "job.purge"
	// ActionJobBulk is one bulk action (POST /api/v1/jobs:bulk): one entry
	// for the call, targeting it under an id of its own, with the action,
	// the count and the ids of the jobs it changed.
	ActionJobBulk     = "job.bulk"
	ActionUserCreate  = "user.create"
	ActionUserUpdate  = "user.update"
	ActionUserDisable = "user.disable"
	ActionUserEnable  = "user.enable"
	ActionKeyCreate   = "key.create"
	ActionKeyRevoke   = "key.revoke"
	// ActionSigningRotate: a user's webhook signing secret was replaced,
	// the previous one kept for a grace period (never recorded by value).
	ActionSigningRotate = "user.rotate_signing_secret"
)

// Target types of audit entries.
const (
	TargetJob  = "job"
	TargetUser = "user"
	TargetKey  = "key"
	// TargetBatch is the jobs of one bulk create, under an id of its own.
	TargetBatch = "batch"
	// TargetBulk is the jobs of one bulk action, under an id of its own.
	TargetBulk = "bulk"
)

// Audit says who makes a change and what kind of change it is. The store
// methods that change something take one and write the entry in the change's
// own transaction, filling in the target and what changed; a zero Actor
// records nothing (internal callers such as tests and load generators).
type Audit struct {
	Actor  uuid.UUID
	Action string
}

// Recorded says whether a leaves an entry: it names who makes the change.
// Callers that write entries of their own (lifecycle.Jobs.Trigger) ask it
// too, so that the rule stays here.
func (a Audit) Recorded() bool { return a.Actor != uuid.Nil }

// AuditEntry is one row of the audit log. Change never holds a secret: job
// payloads are recorded as changed, never by value, and keys by prefix only.
type AuditEntry struct {
	ID         int64
	At         time.Time
	Actor      uuid.UUID
	Action     string
	TargetType string
	TargetID   uuid.UUID
	Change     json.RawMessage
}

const insertAuditSQL = `INSERT INTO audit_log (at, actor_id, action, target_type, target_id, change) VALUES ($1, $2, $3, $4, $5, $6)`

// record writes one audit entry in the transaction of the change.
func record(ctx context.Context, tx pgx.Tx, a Audit, at time.Time, targetType string, target uuid.UUID, change any) error {
	if !a.Recorded() {
		return nil
	}
	raw, err := json.Marshal(change)
	if err != nil {
		return fmt.Errorf("audit %s: %w", a.Action, err)
	}
	if _, err := tx.Exec(ctx, insertAuditSQL, at, a.Actor, a.Action, targetType, target, raw); err != nil {
		return fmt.Errorf("audit %s: %w", a.Action, translate(err))
	}
	return nil
}

// RecordAudit writes an entry for a change that has no Postgres transaction of
// its own, such as a trigger, which only puts an occurrence in Redis.
func (s *Store) RecordAudit(ctx context.Context, e AuditEntry) error {
	if _, err := s.pool.Exec(ctx, insertAuditSQL, e.At, e.Actor, e.Action, e.TargetType, e.TargetID, nullJSONObject(e.Change)); err != nil {
		return fmt.Errorf("audit %s: %w", e.Action, translate(err))
	}
	return nil
}

// RecordAuditAround writes an audit entry in a transaction around then:
// the entry commits only if then succeeds, and then runs only once the
// entry is written. Trigger uses it to put its occurrence in Redis between
// the entry's insert and its commit, so an occurrence is never queued
// without its entry being on its way, nor an entry kept for an occurrence
// that was not queued.
func (s *Store) RecordAuditAround(ctx context.Context, e AuditEntry, then func(context.Context) error) error {
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, insertAuditSQL, e.At, e.Actor, e.Action, e.TargetType, e.TargetID, nullJSONObject(e.Change)); err != nil {
			return fmt.Errorf("audit %s: %w", e.Action, translate(err))
		}
		return then(ctx)
	})
	return err
}

func nullJSONObject(b json.RawMessage) []byte {
	if len(b) == 0 {
		return []byte("{}")
	}
	return b
}

// AuditFilter narrows ListAudit. Zero fields do not filter.
type AuditFilter struct {
	Actor  uuid.UUID
	Target uuid.UUID
	Action string
	Since  time.Time // at or after
	Until  time.Time // before
	Before int64     // keyset cursor: entries older than this id
	Limit  int
}

const listAuditSQL = `SELECT id, at, actor_id, action, target_type, target_id, change FROM audit_log
WHERE ($1 = '00000000-0000-0000-0000-000000000000'::uuid OR actor_id = $1)
  AND ($2 = '00000000-0000-0000-0000-000000000000'::uuid OR target_id = $2)
  AND ($3 = '' OR action = $3)
  AND ($4::timestamptz IS NULL OR at >= $4)
  AND ($5::timestamptz IS NULL OR at < $5)
  AND ($6::bigint = 0 OR id < $6)
ORDER BY id DESC
LIMIT $7`

// ListAudit returns audit entries newest first, at most f.Limit of them.
func (s *Store) ListAudit(ctx context.Context, f AuditFilter) ([]AuditEntry, error) {
	rows, err := s.pool.Query(ctx, listAuditSQL, f.Actor, f.Target, f.Action, nullTime(f.Since), nullTime(f.Until), f.Before, f.Limit)
	if err != nil {
		return nil, fmt.Errorf("list audit: %w", translate(err))
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (AuditEntry, error) {
		var e AuditEntry
		err := r.Scan(&e.ID, &e.At, &e.Actor, &e.Action, &e.TargetType, &e.TargetID, &e.Change)
		e.At = e.At.UTC()
		return e, err
	})
	if err != nil {
		return nil, fmt.Errorf("list audit: %w", translate(err))
	}
	return out, nil
}

// jobCreated is what the audit log keeps of a new job: its shape, not its
// payload, which may hold credentials (headers, a Slack webhook URL).
func jobCreated(j *job.Job) map[string]any {
	m := map[string]any{
		"name":        j.Name,
		"type":        j.Type,
		"owner":       j.Owner,
		"priority":    j.Priority,
		"max_retries": j.MaxRetries,
		"timeout":     j.Timeout.String(),
	}
	if j.Retention > 0 {
		m["retention"] = j.Retention.String()
	}
	if j.History == job.HistoryFailures {
		m["history"] = j.History
	}
	if len(j.Labels) > 0 {
		m["labels"] = j.Labels
	}
	if j.Key != "" {
		m["key"] = j.Key
	}
	if j.ExpiresAfter > 0 {
		m["expires_after"] = j.ExpiresAfter.String()
	}
	if j.Overlap != "" {
		m["overlap"] = j.Overlap
	}
	if j.Notify != nil {
		m["notify"] = notifyShape(j.Notify)
	}
	if j.Recurring() {
		m["schedule"] = json.RawMessage(j.Schedule)
	} else {
		m["run_at"] = j.RunAt
	}
	return m
}

// jobChanged is what an edit changed, field by field as {"from", "to"}; a
// payload is recorded as changed or not, never by value.
func jobChanged(before, after *job.Job) map[string]any {
	m := map[string]any{}
	diff := func(field string, from, to any, same bool) {
		if !same {
			m[field] = map[string]any{"from": from, "to": to}
		}
	}
	diff("name", before.Name, after.Name, before.Name == after.Name)
	diff("status", before.Status, after.Status, before.Status == after.Status)
	diff("priority", before.Priority, after.Priority, before.Priority == after.Priority)
	diff("max_retries", before.MaxRetries, after.MaxRetries, before.MaxRetries == after.MaxRetries)
	diff("timeout", before.Timeout.String(), after.Timeout.String(), before.Timeout == after.Timeout)
	diff("run_at", nullTime(before.RunAt), nullTime(after.RunAt), before.RunAt.Equal(after.RunAt))
	diff("timezone", before.Timezone, after.Timezone, before.Timezone == after.Timezone)
	diff("schedule", rawOrNull(before.Schedule), rawOrNull(after.Schedule), jsonEqual(before.Schedule, after.Schedule))
	diff("retention", retentionText(before.Retention), retentionText(after.Retention), before.Retention == after.Retention)
	diff("history", before.History, after.History, before.History == after.History)
	diff("labels", before.Labels, after.Labels, maps.Equal(before.Labels, after.Labels))
	diff("expires_after", retentionText(before.ExpiresAfter), retentionText(after.ExpiresAfter), before.ExpiresAfter == after.ExpiresAfter)
	diff("overlap", before.Overlap, after.Overlap, before.Overlap == after.Overlap)
	if b, a := notifyColumn(before.Notify), notifyColumn(after.Notify); !slices.Equal(b, a) {
		m["notify"] = map[string]any{"from": notifyShape(before.Notify), "to": notifyShape(after.Notify)}
	}
	diff("paused_reason", before.PausedReason, after.PausedReason, before.PausedReason == after.PausedReason)
	if !slices.Equal(before.Payload, after.Payload) {
		m["payload"] = "changed"
	}
	return m
}

// notifyShape is what the audit log keeps of a job's alerting: the events
// and the kind of destination, never its URL, headers or addresses.
func notifyShape(n *job.Notify) any {
	if n == nil {
		return nil
	}
	dest := "email"
	switch {
	case n.Webhook != nil:
		dest = "webhook"
	case n.Slack != nil:
		dest = "slack"
	}
	return map[string]any{"on": n.On, "to": dest}
}

func jsonEqual(a, b []byte) bool {
	if len(a) == 0 || len(b) == 0 {
		return len(a) == len(b)
	}
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return slices.Equal(a, b)
	}
	ra, _ := json.Marshal(x)
	rb, _ := json.Marshal(y)
	return slices.Equal(ra, rb)
}

// rawOrNull shows stored JSON as itself, or null when there is none.
func rawOrNull(b []byte) json.RawMessage {
	if len(b) == 0 {
		return json.RawMessage("null")
	}
	return b
}

// retentionText is a retention as the audit log shows it: "default" for the
// operator's.
func retentionText(d time.Duration) string {
	if d <= 0 {
		return "default"
	}
	return d.String()
}

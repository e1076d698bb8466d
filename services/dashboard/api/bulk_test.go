package api_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/tockhq/tock/pkg/job"
	"github.com/tockhq/tock/pkg/store"
	"github.com/tockhq/tock/services/dashboard/api"
	"github.com/tockhq/tock/services/dashboard/apierr"
)

// TestBulkActions: POST /api/v1/jobs:bulk acts on the ids given or on a
// filter, only on the caller's jobs, skips with the reason what the
// single-job action refuses, counts first on a dry run, and leaves one
// audit entry per call.
func TestBulkActions(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ann := b.user(t, "ann", "user", nil)
	bob := b.user(t, "bob", "user", nil)
	var mine []uuid.UUID
	for i := range 5 {
		body := labelled("bulk", b.now.Add(time.Hour), map[string]string{"batch": "b1"})
		if i == 4 {
			body["labels"] = map[string]string{"batch": "b2"}
		}
		rec := b.as(t, ann, http.MethodPost, "/api/v1/jobs", body)
		require.Equal(t, http.StatusCreated, rec.Code, rec.Body.String())
		mine = append(mine, decode[api.Job](t, rec).ID)
	}
	theirs := decode[api.Job](t, b.as(t, bob, http.MethodPost, "/api/v1/jobs", labelled("bulk", b.now.Add(time.Hour), map[string]string{"batch": "b1"})))

	// A dry run counts and lists, and changes nothing.
	rec := b.as(t, ann, http.MethodPost, "/api/v1/jobs:bulk", map[string]any{"action": "pause", "filter": map[string]any{"label": "batch=b1"}, "dry_run": true})
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	dry := decode[api.BulkResult](t, rec)
	require.Equal(t, 4, dry.Matched)
	require.Zero(t, dry.Changed)
	require.ElementsMatch(t, mine[:4], dry.IDs)
	require.Equal(t, job.StatusScheduled, decode[api.Job](t, b.as(t, ann, http.MethodGet, "/api/v1/jobs/"+mine[0].String(), nil)).Status)

	// By filter: only ann's labelled jobs pause; bob's, with the same label, not.
	rec = b.as(t, ann, http.MethodPost, "/api/v1/jobs:bulk", map[string]any{"action": "pause", "filter": map[string]any{"label": []string{"batch=b1"}, "status": "scheduled"}})
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	res := decode[api.BulkResult](t, rec)
	require.Equal(t, 4, res.Matched)
	require.Equal(t, 4, res.Changed)
	require.Empty(t, res.Skipped)
	require.Equal(t, job.StatusScheduled, decode[api.Job](t, b.as(t, bob, http.MethodGet, "/api/v1/jobs/"+theirs.ID.String(), nil)).Status)

	// By ids: a paused job pauses no further, another owner's job is not
	// found, and the rest change.
	rec = b.as(t, ann, http.MethodPost, "/api/v1/jobs:bulk", map[string]any{"action": "pause", "ids": []string{mine[0].String(), mine[4].String(), theirs.ID.String(), mine[4].String()}})
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	res = decode[api.BulkResult](t, rec)
	require.Equal(t, 3, res.Matched, "duplicates count once")
	require.Equal(t, 1, res.Changed)
	require.Len(t, res.Skipped, 2)
	require.Equal(t, mine[0], res.Skipped[0].ID)
	require.Contains(t, res.Skipped[0].Reason, "cannot be paused")
	require.Equal(t, theirs.ID, res.Skipped[1].ID)
	require.Equal(t, "not found", res.Skipped[1].Reason)

	rec = b.as(t, ann, http.MethodPost, "/api/v1/jobs:bulk", map[string]any{"action": "resume", "filter": map[string]any{"status": "paused"}})
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	require.Equal(t, 5, decode[api.BulkResult](t, rec).Changed)
	rec = b.as(t, ann, http.MethodPost, "/api/v1/jobs:bulk", map[string]any{"action": "cancel", "filter": map[string]any{"q": "bulk", "label": "batch=b2"}})
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	require.Equal(t, 1, decode[api.BulkResult](t, rec).Changed)
	require.Equal(t, job.StatusCancelled, decode[api.Job](t, b.as(t, ann, http.MethodGet, "/api/v1/jobs/"+mine[4].String(), nil)).Status)

	// One audit entry per call, with the count and the ids.
	list := decode[api.AuditList](t, b.do(t, http.MethodGet, "/api/v1/audit?action="+store.ActionJobBulk, nil))
	var calls int
	for _, e := range list.Entries {
		if e.Actor != ann.id {
			continue
		}
		calls++
		var change struct {
			Action  string      `json:"action"`
			Changed int         `json:"changed"`
			IDs     []uuid.UUID `json:"ids"`
		}
		require.NoError(t, json.Unmarshal(e.Change, &change))
		require.Len(t, change.IDs, change.Changed)
	}
	require.Equal(t, 4, calls, "dry runs leave no entry")

	// A job cancelled already is skipped, with its status as the reason.
	again := decode[api.BulkResult](t, b.as(t, ann, http.MethodPost, "/api/v1/jobs:bulk", map[string]any{"action": "cancel", "ids": []string{mine[4].String()}}))
	require.Zero(t, again.Changed)
	require.Len(t, again.Skipped, 1)
	require.Equal(t, "job is cancelled", again.Skipped[0].Reason)

	// An administrator may name the owner; a user may not name another.
	admin := decode[api.BulkResult](t, b.do(t, http.MethodPost, "/api/v1/jobs:bulk", map[string]any{"action": "pause", "filter": map[string]any{"owner": bob.id.String(), "label": "batch=b1"}}))
	require.Equal(t, 1, admin.Changed)
	requireError(t, b.as(t, ann, http.MethodPost, "/api/v1/jobs:bulk", map[string]any{"action": "pause", "filter": map[string]any{"owner": bob.id.String()}}), http.StatusForbidden, apierr.CodeForbidden)
}

// TestBulkTriggerAudit: each job a bulk trigger runs has its job.trigger
// entry by the caller, as a single trigger has, beside the call's job.bulk
// entry; none is written in tock's name or without an action.
func TestBulkTriggerAudit(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ann := b.user(t, "ann", "user", nil)
	var ids []string
	for _, name := range []string{"one", "two"} {
		ids = append(ids, decode[api.Job](t, b.as(t, ann, http.MethodPost, "/api/v1/jobs", spec(name, b.now.Add(time.Hour)))).ID.String())
	}
	rec := b.as(t, ann, http.MethodPost, "/api/v1/jobs:bulk", map[string]any{"action": "trigger", "ids": ids})
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	require.Equal(t, 2, decode[api.BulkResult](t, rec).Changed)

	for _, id := range ids {
		list := decode[api.AuditList](t, b.do(t, http.MethodGet, "/api/v1/audit?job="+id, nil))
		var actions []string
		for _, e := range list.Entries {
			actions = append(actions, e.Action)
			require.Equal(t, ann.id, e.Actor, "%s by the caller", e.Action)
		}
		require.ElementsMatch(t, []string{store.ActionJobCreate, store.ActionJobTrigger}, actions)
	}
	var unnamed []api.AuditEntry
	for _, e := range decode[api.AuditList](t, b.do(t, http.MethodGet, "/api/v1/audit?limit=100", nil)).Entries {
		if e.Action == "" || e.Actor == uuid.Nil {
			unnamed = append(unnamed, e)
		}
	}
	require.Empty(t, unnamed)
	require.Len(t, decode[api.AuditList](t, b.do(t, http.MethodGet, "/api/v1/audit?action="+store.ActionJobBulk, nil)).Entries, 1)
}

// TestBulkBadInput: every malformed bulk request is a 400 naming its field,
// or 413 over the cap, and changes nothing.
func TestBulkBadInput(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ann := b.user(t, "ann", "user", nil)
	j := decode[api.Job](t, b.as(t, ann, http.MethodPost, "/api/v1/jobs", spec("x", b.now.Add(time.Hour))))
	for name, tc := range map[string]struct {
		body  any
		field string
	}{
		"no action":      {map[string]any{"ids": []string{j.ID.String()}}, "action"},
		"unknown action": {map[string]any{"action": "explode", "ids": []string{j.ID.String()}}, "action"},
		"neither":        {map[string]any{"action": "pause"}, "ids"},
		"both":           {map[string]any{"action": "pause", "ids": []string{j.ID.String()}, "filter": map[string]any{}}, "filter"},
		"empty ids":      {map[string]any{"action": "pause", "ids": []string{}}, "ids"},
		"bad id":         {map[string]any{"action": "pause", "ids": []string{j.ID.String(), "nope"}}, "ids[1]"},
		"bad status":     {map[string]any{"action": "pause", "filter": map[string]any{"status": "sleeping"}}, "filter.status"},
		"bad type":       {map[string]any{"action": "pause", "filter": map[string]any{"type": "telegram"}}, "filter.type"},
		"bad label":      {map[string]any{"action": "pause", "filter": map[string]any{"label": "NoEquals"}}, "filter.label"},
		"label object":   {map[string]any{"action": "pause", "filter": map[string]any{"label": map[string]any{"a": 1}}}, "filter.label"},
		"bad owner":      {map[string]any{"action": "pause", "filter": map[string]any{"owner": "me"}}, "filter.owner"},
		"unknown field":  {map[string]any{"action": "pause", "ids": []string{j.ID.String()}, "force": true}, ""},
	} {
		rec := b.as(t, ann, http.MethodPost, "/api/v1/jobs:bulk", tc.body)
		e := requireError(t, rec, http.StatusBadRequest, apierr.CodeInvalid)
		if tc.field != "" {
			require.Equal(t, tc.field, e.Field, name)
		}
	}
	ids := make([]string, api.MaxBulkJobs+1)
	for i := range ids {
		ids[i] = uuid.NewString()
	}
	e := requireError(t, b.as(t, ann, http.MethodPost, "/api/v1/jobs:bulk", map[string]any{"action": "pause", "ids": ids}), http.StatusRequestEntityTooLarge, apierr.CodeTooLarge)
	require.True(t, strings.Contains(e.Message, "10000"), e.Message)
	require.Equal(t, job.StatusScheduled, decode[api.Job](t, b.as(t, ann, http.MethodGet, "/api/v1/jobs/"+j.ID.String(), nil)).Status)
}

// TestJobCounts: GET /api/v1/jobs:counts counts the caller's jobs by
// status, every status present; an administrator may name the owner.
func TestJobCounts(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ann := b.user(t, "ann", "user", nil)
	bob := b.user(t, "bob", "user", nil)
	for range 3 {
		require.Equal(t, http.StatusCreated, b.as(t, ann, http.MethodPost, "/api/v1/jobs", spec("c", b.now.Add(time.Hour))).Code)
	}
	j := decode[api.Job](t, b.as(t, ann, http.MethodPost, "/api/v1/jobs", spec("c", b.now.Add(time.Hour))))
	require.Equal(t, http.StatusOK, b.as(t, ann, http.MethodPost, "/api/v1/jobs/"+j.ID.String()+"/pause", nil).Code)
	require.Equal(t, http.StatusCreated, b.as(t, bob, http.MethodPost, "/api/v1/jobs", spec("c", b.now.Add(time.Hour))).Code)

	got := decode[api.JobCounts](t, b.as(t, ann, http.MethodGet, "/api/v1/jobs:counts", nil))
	require.Equal(t, int64(3), got.Counts[job.StatusScheduled])
	require.Equal(t, int64(1), got.Counts[job.StatusPaused])
	require.Equal(t, int64(0), got.Counts[job.StatusExpired])
	require.Equal(t, int64(4), got.Total)
	got = decode[api.JobCounts](t, b.do(t, http.MethodGet, "/api/v1/jobs:counts?owner="+bob.id.String(), nil))
	require.Equal(t, int64(1), got.Total)
	requireError(t, b.as(t, ann, http.MethodGet, "/api/v1/jobs:counts?owner="+bob.id.String(), nil), http.StatusForbidden, apierr.CodeForbidden)
}

package api_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/tockhq/tock/pkg/job"
	"github.com/tockhq/tock/services/dashboard/api"
	"github.com/tockhq/tock/services/dashboard/apierr"
)

// deadJob creates a one-off job of p's and records its last attempt as
// permanently failed, as a worker would.
func (b *bundle) deadJob(t *testing.T, p person, name string, attempts int) api.Job {
	t.Helper()
	rec := b.as(t, p, http.MethodPost, "/api/v1/jobs", spec(name, b.now.Add(time.Hour)))
	require.Equal(t, http.StatusCreated, rec.Code, rec.Body.String())
	j := decode[api.Job](t, rec)
	b.failPermanently(t, j, attempts)
	return j
}

// deadOf lists p's dead letters with the query, following every page.
func (b *bundle) deadOf(t *testing.T, p person, query string) []api.Run {
	t.Helper()
	var out []api.Run
	cursor := ""
	for {
		q := query
		if cursor != "" {
			q += "&cursor=" + cursor
		}
		rec := b.as(t, p, http.MethodGet, "/api/v1/dead-letters?"+q, nil)
		require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
		page := decode[api.DeadLetterList](t, rec)
		out = append(out, page.DeadLetters...)
		if page.NextCursor == "" {
			return out
		}
		cursor = page.NextCursor
	}
}

func deadIDs(runs []api.Run) []uuid.UUID {
	ids := make([]uuid.UUID, len(runs))
	for i, r := range runs {
		ids[i] = r.ID
	}
	return ids
}

func TestDeadLetters(t *testing.T) {
	t.Parallel()
	b := setup(t)

	t.Run("ListsAnOwnersPermanentlyFailedOccurrencesOnly", func(t *testing.T) {
		t.Parallel()
		ann, bob := b.user(t, "dl-ann", "user", nil), b.user(t, "dl-bob", "user", nil)
		first := b.deadJob(t, ann, "dl first", 4)
		second := b.deadJob(t, ann, "dl second", 2)
		b.deadJob(t, bob, "dl bob's", 1)
		alive := decode[api.Job](t, b.as(t, ann, http.MethodPost, "/api/v1/jobs", spec("dl alive", b.now.Add(time.Hour))))

		got := b.deadOf(t, ann, "")
		require.Len(t, got, 2, "ann's two, not bob's nor a job that did not fail")
		byJob := map[uuid.UUID]api.Run{}
		for _, r := range got {
			byJob[r.JobID] = r
			require.Equal(t, job.RunPermanentlyFailed, r.Status)
			require.Equal(t, "status 500", r.Error)
			require.Equal(t, job.Type("ping"), r.JobType)
		}
		require.Equal(t, 4, byJob[first.ID].Attempt)
		require.Equal(t, "dl second", byJob[second.ID].JobName)
		require.NotContains(t, byJob, alive.ID)

		only := b.deadOf(t, ann, "job="+first.ID.String())
		require.Len(t, only, 1)
		require.Equal(t, first.ID, only[0].JobID)
		require.Len(t, b.deadOf(t, ann, "q=STATUS+500"), 2, "q matches the error, ignoring case")
		require.Empty(t, b.deadOf(t, ann, "q=timeout"))

		one := b.as(t, ann, http.MethodGet, "/api/v1/dead-letters/"+byJob[first.ID].ID.String(), nil)
		require.Equal(t, http.StatusOK, one.Code, one.Body.String())
		require.Equal(t, first.ID, decode[api.Run](t, one).JobID)
		requireError(t, b.as(t, bob, http.MethodGet, "/api/v1/dead-letters/"+byJob[first.ID].ID.String(), nil), http.StatusNotFound, apierr.CodeNotFound)
		requireError(t, b.as(t, ann, http.MethodGet, "/api/v1/dead-letters/"+uuid.NewString(), nil), http.StatusNotFound, apierr.CodeNotFound)
		requireError(t, b.as(t, ann, http.MethodGet, "/api/v1/dead-letters/nope", nil), http.StatusNotFound, apierr.CodeNotFound)
	})

	t.Run("ReplaysOneIntoItsNextAttempt", func(t *testing.T) {
		t.Parallel()
		u := b.user(t, "dl-replay", "user", nil)
		j := b.deadJob(t, u, "dl replay", 4)
		dead := b.deadOf(t, u, "")
		require.Len(t, dead, 1)

		rec := b.as(t, u, http.MethodPost, "/api/v1/dead-letters/"+dead[0].ID.String()+"/replay", nil)
		require.Equal(t, http.StatusAccepted, rec.Code, rec.Body.String())
		got := decode[api.Retried](t, rec)
		require.Equal(t, 5, got.Attempt)
		occ := job.Occurrence{JobID: j.ID, ScheduledFor: j.RunAt.Time, Attempt: 5, Priority: j.Priority, Generation: b.stored(t, j.ID).Generation}.Route(j.Owner, j.Payload)
		require.Equal(t, occ.Key(), got.IdempotencyKey, "the occurrence keeps its idempotency key")
		require.Contains(t, b.due(t), occ, "the next attempt is queued")
		require.Empty(t, b.deadOf(t, u, ""), "a replayed dead letter leaves the list")
		requireError(t, b.as(t, u, http.MethodPost, "/api/v1/dead-letters/"+dead[0].ID.String()+"/replay", nil), http.StatusNotFound, apierr.CodeNotFound)

		// Should the replay fail for good too, its attempt is the new dead letter.
		b.failPermanently(t, j, 5)
		again := b.deadOf(t, u, "")
		require.Len(t, again, 1)
		require.Equal(t, 5, again[0].Attempt)
	})

	t.Run("AJobRetryEndsItsDeadLetter", func(t *testing.T) {
		t.Parallel()
		u := b.user(t, "dl-retry", "user", nil)
		j := b.deadJob(t, u, "dl retried", 3)
		require.Equal(t, http.StatusAccepted, b.as(t, u, http.MethodPost, path(j, "/retry"), nil).Code)
		require.Empty(t, b.deadOf(t, u, ""))
	})

	t.Run("ReplaysInBulkAfterADryRun", func(t *testing.T) {
		t.Parallel()
		u := b.user(t, "dl-bulk", "user", nil)
		for i := range 11 {
			b.deadJob(t, u, "dl bulk "+strings.Repeat("x", i), 1+i%3)
		}
		before := b.deadOf(t, u, "")
		require.Len(t, before, 11)

		rec := b.as(t, u, http.MethodPost, "/api/v1/dead-letters:replay", map[string]any{"filter": map[string]any{"type": "ping"}, "dry_run": true})
		require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
		dry := decode[api.DeadLetterResult](t, rec)
		require.True(t, dry.DryRun)
		require.Equal(t, 11, dry.Matched)
		require.Zero(t, dry.Changed)
		require.ElementsMatch(t, deadIDs(before), dry.IDs)
		require.Len(t, b.deadOf(t, u, ""), 11, "a dry run changes nothing")

		rec = b.as(t, u, http.MethodPost, "/api/v1/dead-letters:replay", map[string]any{"filter": map[string]any{"type": "ping"}})
		require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
		done := decode[api.DeadLetterResult](t, rec)
		require.Equal(t, 11, done.Matched)
		require.Equal(t, 11, done.Changed, "skipped: %v", done.Skipped)
		require.Empty(t, done.Skipped)
		require.Empty(t, b.deadOf(t, u, ""))
		for _, r := range before {
			j := b.stored(t, r.JobID)
			require.Equal(t, job.StatusScheduled, j.Status, "each one-off job is scheduled again for its replay")
		}

		list := decode[api.AuditList](t, b.do(t, http.MethodGet, "/api/v1/audit?action=dead_letters", nil))
		found := false
		for _, e := range list.Entries {
			found = found || strings.Contains(string(e.Change), before[0].ID.String())
		}
		require.True(t, found, "one audit entry names the replayed dead letters")
	})

	t.Run("PurgesByIDsAndOneByOne", func(t *testing.T) {
		t.Parallel()
		u, other := b.user(t, "dl-purge", "user", nil), b.user(t, "dl-purge-other", "user", nil)
		for i := range 3 {
			b.deadJob(t, u, "dl purge "+strings.Repeat("y", i), 2)
		}
		theirs := b.deadJob(t, other, "dl theirs", 2)
		dead := b.deadOf(t, u, "")
		require.Len(t, dead, 3)
		theirDead := b.deadOf(t, other, "")
		require.Len(t, theirDead, 1)
		unknown := uuid.New()

		rec := b.as(t, u, http.MethodPost, "/api/v1/dead-letters:purge",
			map[string]any{"ids": []string{dead[0].ID.String(), dead[1].ID.String(), unknown.String(), theirDead[0].ID.String()}})
		require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
		res := decode[api.DeadLetterResult](t, rec)
		require.Equal(t, 2, res.Matched)
		require.Equal(t, 2, res.Changed)
		require.ElementsMatch(t, []api.BulkSkipped{{ID: unknown, Reason: "not found"}, {ID: theirDead[0].ID, Reason: "not found"}}, res.Skipped)
		left := b.deadOf(t, u, "")
		require.Len(t, left, 1)
		require.Equal(t, dead[2].ID, left[0].ID)
		require.Len(t, b.deadOf(t, other, ""), 1, "another owner's dead letter is untouched")

		require.Equal(t, http.StatusNoContent, b.as(t, u, http.MethodDelete, "/api/v1/dead-letters/"+left[0].ID.String(), nil).Code)
		require.Empty(t, b.deadOf(t, u, ""))
		requireError(t, b.as(t, u, http.MethodDelete, "/api/v1/dead-letters/"+left[0].ID.String(), nil), http.StatusNotFound, apierr.CodeNotFound)

		runs := decode[api.RunList](t, b.as(t, other, http.MethodGet, path(theirs, "/runs"), nil))
		require.Len(t, runs.Runs, 1, "purging leaves the job's run history alone")
	})

	t.Run("RefusesBadRequestsWithTheField", func(t *testing.T) {
		t.Parallel()
		u := b.user(t, "dl-bad", "user", nil)
		for _, c := range []struct {
			body  any
			field string
		}{
			{map[string]any{}, "ids"},
			{map[string]any{"ids": []string{}}, "ids"},
			{map[string]any{"ids": []string{"x"}}, "ids[0]"},
			{map[string]any{"ids": []string{uuid.NewString()}, "filter": map[string]any{}}, "filter"},
			{map[string]any{"filter": map[string]any{"type": "fax"}}, "filter.type"},
			{map[string]any{"filter": map[string]any{"job": "x"}}, "filter.job"},
			{map[string]any{"filter": map[string]any{"since": "yesterday"}}, "filter.since"},
			{map[string]any{"filter": map[string]any{"label": "no equals"}}, "filter.label"},
			{map[string]any{"filter": map[string]any{"owner": "x"}}, "filter.owner"},
			{map[string]any{"filter": map[string]any{"colour": "red"}}, "filter.colour"},
		} {
			d := requireError(t, b.as(t, u, http.MethodPost, "/api/v1/dead-letters:replay", c.body), http.StatusBadRequest, apierr.CodeInvalid)
			require.Equal(t, c.field, d.Field, "%v", c.body)
		}
		many := make([]string, api.MaxBulkJobs+1)
		for i := range many {
			many[i] = uuid.NewString()
		}
		requireError(t, b.as(t, u, http.MethodPost, "/api/v1/dead-letters:purge", map[string]any{"ids": many}), http.StatusRequestEntityTooLarge, apierr.CodeTooLarge)
		d := requireError(t, b.as(t, u, http.MethodGet, "/api/v1/dead-letters?status=completed", nil), http.StatusBadRequest, apierr.CodeInvalid)
		require.Equal(t, "status", d.Field)
		other := b.user(t, "dl-bad-other", "user", nil)
		requireError(t, b.as(t, u, http.MethodPost, "/api/v1/dead-letters:purge",
			map[string]any{"filter": map[string]any{"owner": other.id.String()}}), http.StatusForbidden, apierr.CodeForbidden)
	})
}

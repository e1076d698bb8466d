package api_test

import (
	"net/http"
	neturl "net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tockhq/tock/pkg/job"
	"github.com/tockhq/tock/services/dashboard/api"
	"github.com/tockhq/tock/services/dashboard/apierr"
)

// runsOf follows every page of GET /api/v1/runs?query as p (the
// administrator for nil) and returns the runs.
func (b *bundle) runsOf(t *testing.T, p *person, query string) []api.Run {
	t.Helper()
	var out []api.Run
	cursor := ""
	for {
		path := "/api/v1/runs?limit=2&" + query
		if cursor != "" {
			path += "&cursor=" + neturl.QueryEscape(cursor)
		}
		rec := b.do(t, http.MethodGet, path, nil)
		if p != nil {
			rec = b.as(t, *p, http.MethodGet, path, nil)
		}
		require.Equal(t, http.StatusOK, rec.Code, "body: %s", rec.Body.String())
		list := decode[api.RunList](t, rec)
		out = append(out, list.Runs...)
		if list.NextCursor == "" {
			return out
		}
		cursor = list.NextCursor
	}
}

// TestSearchRunsRunning: attempts running live in Redis, not in Postgres;
// GET /api/v1/runs lists them among the outcomes, status=running lists
// them alone, and each caller sees only their own.
func TestSearchRunsRunning(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ann := b.user(t, "ann", "user", nil)
	bob := b.user(t, "bob", "user", nil)
	at := b.now.Add(time.Hour)
	post := func(p person, name string, at time.Time) api.Job {
		t.Helper()
		rec := b.as(t, p, http.MethodPost, "/api/v1/jobs", spec(name, at))
		require.Equal(t, http.StatusCreated, rec.Code, "body: %s", rec.Body.String())
		return decode[api.Job](t, rec)
	}
	done := post(ann, "ann done", at)
	b.failPermanently(t, done, 1)
	busy := post(ann, "ann busy", at.Add(time.Minute))
	lease := b.running(t, b.occurrence(busy), busy.RunAt.Time, busy.RunAt.Add(time.Second))
	theirs := post(bob, "bob busy", at.Add(2*time.Minute))
	b.running(t, b.occurrence(theirs), theirs.RunAt.Time, theirs.RunAt.Time)

	got := b.runsOf(t, &ann, "status=running")
	require.Len(t, got, 1, "ann's attempt running, not bob's")
	r := got[0]
	require.Equal(t, lease.Run, r.ID, "the id its outcome's row will have")
	require.Equal(t, busy.ID, r.JobID)
	require.Equal(t, "ann busy", r.JobName)
	require.Equal(t, "ping", string(r.JobType))
	require.Equal(t, job.RunRunning, r.Status)
	require.Equal(t, 1, r.Attempt)
	require.True(t, busy.RunAt.Equal(r.ScheduledFor.Time))
	require.True(t, busy.RunAt.Add(time.Second).Equal(r.StartedAt.Time))
	require.True(t, r.FinishedAt.IsZero())
	require.EqualValues(t, 1000, r.LatenessMS)

	all := b.runsOf(t, &ann, "")
	require.Len(t, all, 2)
	require.Equal(t, busy.ID, all[0].JobID, "newest first: the attempt running, then the outcome")
	require.Equal(t, job.RunRunning, all[0].Status)
	require.Equal(t, done.ID, all[1].JobID)
	require.Equal(t, job.RunPermanentlyFailed, all[1].Status)

	require.Empty(t, b.runsOf(t, &ann, "status=running&job="+theirs.ID.String()), "another owner's job finds nothing")
	require.Empty(t, b.runsOf(t, &ann, "status=completed"))
	matched := b.runsOf(t, &ann, "q=status")
	require.Len(t, matched, 1, "an attempt running has no error text to match")
	require.Equal(t, done.ID, matched[0].JobID)
	require.Len(t, b.runsOf(t, &bob, "status=running"), 1)
	require.Len(t, b.runsOf(t, nil, "status=running"), 2, "the administrator sees everyone's")
	mine := b.runsOf(t, nil, "status=running&owner="+bob.id.String())
	require.Len(t, mine, 1)
	require.Equal(t, theirs.ID, mine[0].JobID)
}

func TestSearchRuns(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ann := b.user(t, "ann", "user", nil)
	bob := b.user(t, "bob", "user", nil)
	at := b.now.Add(time.Hour)
	mine := make([]api.Job, 3)
	for i := range mine {
		body := spec("ann "+string(rune('a'+i)), at.Add(time.Duration(i)*time.Minute))
		body["labels"] = map[string]string{"team": []string{"red", "blue", "red"}[i]}
		rec := b.as(t, ann, http.MethodPost, "/api/v1/jobs", body)
		require.Equal(t, http.StatusCreated, rec.Code, "body: %s", rec.Body.String())
		mine[i] = decode[api.Job](t, rec)
		b.failPermanently(t, mine[i], 1)
	}
	rec := b.as(t, bob, http.MethodPost, "/api/v1/jobs", spec("bob's", at))
	require.Equal(t, http.StatusCreated, rec.Code, "body: %s", rec.Body.String())
	theirs := decode[api.Job](t, rec)
	b.failPermanently(t, theirs, 1)

	t.Run("OwnRunsNewestFirst", func(t *testing.T) {
		got := b.runsOf(t, &ann, "status=permanently_failed&q=STATUS%20500")
		require.Len(t, got, 3)
		for i, r := range got {
			require.Equal(t, mine[2-i].ID, r.JobID)
			require.Equal(t, mine[2-i].Name, r.JobName)
			require.Equal(t, "ping", string(r.JobType))
			require.Equal(t, "status 500", r.Error)
		}
		require.Empty(t, b.runsOf(t, &ann, "job="+theirs.ID.String()), "another owner's job finds nothing")
		require.Len(t, b.runsOf(t, &bob, ""), 1)
	})

	t.Run("Filters", func(t *testing.T) {
		require.Len(t, b.runsOf(t, &ann, "label=team=red"), 2)
		require.Len(t, b.runsOf(t, &ann, "job="+mine[1].ID.String()), 1)
		require.Len(t, b.runsOf(t, &ann, "type=ping&since="+neturl.QueryEscape(at.Add(time.Minute).Format(time.RFC3339Nano))), 2)
		require.Len(t, b.runsOf(t, &ann, "until="+neturl.QueryEscape(at.Add(time.Minute).Format(time.RFC3339Nano))), 1)
		require.Empty(t, b.runsOf(t, &ann, "status=completed"))
		require.Empty(t, b.runsOf(t, &ann, "q=refused"))
	})

	t.Run("AdminSeesEveryoneAndNarrowsByOwner", func(t *testing.T) {
		require.Len(t, b.runsOf(t, nil, "status=permanently_failed"), 4)
		got := b.runsOf(t, nil, "owner="+bob.id.String())
		require.Len(t, got, 1)
		require.Equal(t, theirs.ID, got[0].JobID)
		requireError(t, b.as(t, ann, http.MethodGet, "/api/v1/runs?owner="+bob.id.String(), nil), http.StatusForbidden, apierr.CodeForbidden)
	})

	t.Run("RefusesBadParameters", func(t *testing.T) {
		for _, c := range []struct{ query, field string }{
			{"status=done", "status"},
			{"type=fax", "type"},
			{"job=nope", "job"},
			{"label=Bad", "label"},
			{"since=yesterday", "since"},
			{"until=2030-01-01", "until"},
			{"since=2030-01-02T00:00:00Z&until=2030-01-01T00:00:00Z", "until"},
			{"q=" + strings.Repeat("x", 201), "q"},
			{"cursor=abc", "cursor"},
			{"limit=0", "limit"},
			{"owner=me", "owner"},
		} {
			rec := b.as(t, ann, http.MethodGet, "/api/v1/runs?"+c.query, nil)
			require.Equal(t, c.field, requireError(t, rec, http.StatusBadRequest, apierr.CodeInvalid).Field, c.query)
		}
	})

	t.Run("Stats", func(t *testing.T) {
		window := "since=" + neturl.QueryEscape(b.now.Format(time.RFC3339Nano)) + "&until=" + neturl.QueryEscape(at.Add(time.Hour).Format(time.RFC3339Nano))
		stats := func(p *person, query string) api.RunStats {
			t.Helper()
			rec := b.do(t, http.MethodGet, "/api/v1/runs:stats?"+query, nil)
			if p != nil {
				rec = b.as(t, *p, http.MethodGet, "/api/v1/runs:stats?"+query, nil)
			}
			require.Equal(t, http.StatusOK, rec.Code, "body: %s", rec.Body.String())
			return decode[api.RunStats](t, rec)
		}
		got := stats(&ann, window)
		require.Equal(t, "status", got.GroupBy)
		require.Equal(t, []api.RunStatsGroup{{Key: "permanently_failed", Count: 3}}, got.Groups)
		require.False(t, got.Truncated)
		got = stats(&ann, window+"&group_by=job")
		require.Len(t, got.Groups, 3)
		require.Contains(t, got.Groups, api.RunStatsGroup{Key: mine[0].ID.String(), Name: "ann a", Count: 1})
		require.Equal(t, []api.RunStatsGroup{{Key: "ping", Count: 4}}, stats(nil, window+"&group_by=type").Groups)
		require.Equal(t, []api.RunStatsGroup{{Key: "ping", Count: 1}}, stats(nil, window+"&group_by=type&owner="+bob.id.String()).Groups)

		def := stats(&ann, "")
		require.Empty(t, def.Groups, "the last 24 hours by default")
		require.Equal(t, b.now.Add(-24*time.Hour), def.Since.Time)
		require.Equal(t, b.now, def.Until.Time)

		for _, c := range []struct{ query, field string }{
			{"group_by=owner", "group_by"},
			{"since=2030-01-01T00:00:00Z&until=2030-02-02T00:00:00Z", "since"},
			{"since=2030-01-01T00:00:00Z&until=2030-01-01T00:00:00Z", "until"},
			{"until=soon", "until"},
		} {
			rec := b.as(t, ann, http.MethodGet, "/api/v1/runs:stats?"+c.query, nil)
			require.Equal(t, c.field, requireError(t, rec, http.StatusBadRequest, apierr.CodeInvalid).Field, c.query)
		}
	})
}

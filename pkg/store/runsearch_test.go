package store_test

import (
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/tockhq/tock/pkg/job"
	"github.com/tockhq/tock/pkg/jobtype"
	"github.com/tockhq/tock/pkg/store"
)

// addRun records an attempt of j scheduled at at, as a worker leaves it.
func (b *bundle) addRun(t *testing.T, j *job.Job, at time.Time, attempt int, status job.RunStatus, errText string) {
	t.Helper()
	var finished *time.Time
	if status != job.RunRunning {
		finished = &at
	}
	_, err := b.st.Pool().Exec(b.ctx, `INSERT INTO job_runs (job_id, scheduled_for, attempt, status, id, owner_id, due_at, started_at, lease_until, finished_at, error)
VALUES ($1, $2, $3, $4, $5, $6, $2, $2, $2::timestamptz + interval '1 minute', $7, nullif($8, ''))`,
		j.ID, at, attempt, string(status), job.NewID(), j.Owner, finished, errText)
	require.NoError(t, err)
}

// search follows every page of f, a few runs at a time, and returns the
// runs in the order found, failing on a repeat.
func (b *bundle) search(t *testing.T, f store.RunSearch) []store.FoundRun {
	t.Helper()
	var out []store.FoundRun
	seen := map[string]bool{}
	f.Limit = 3
	for calls := 0; ; calls++ {
		require.Less(t, calls, 100, "the search moves on")
		got, resume, err := b.st.SearchRuns(b.ctx, f)
		require.NoError(t, err)
		for _, r := range got {
			k := r.JobID.String() + r.ScheduledFor.String() + string(rune('0'+r.Attempt))
			require.False(t, seen[k], "run %s found twice", k)
			seen[k] = true
		}
		out = append(out, got...)
		switch {
		case len(got) == f.Limit:
			last := got[len(got)-1]
			f.Before = &store.RunCursor{ScheduledFor: last.ScheduledFor, Attempt: last.Attempt, JobID: last.JobID}
		case resume != nil:
			f.Before = resume
		default:
			return out
		}
	}
}

type runKey struct {
	job     uuid.UUID
	at      time.Time
	attempt int
}

func keys(runs []store.FoundRun) []runKey {
	out := make([]runKey, len(runs))
	for i, r := range runs {
		out[i] = runKey{r.JobID, r.ScheduledFor, r.Attempt}
	}
	return out
}

func TestSearchRuns(t *testing.T) {
	t.Parallel()
	b := setup(t)
	base := b.now.Add(-time.Hour).Truncate(time.Second)
	hook := newJob(ownerA, base, func(j *job.Job) {
		j.Name, j.Type = "hook", jobtype.TypeWebhook
		j.Payload = []byte(`{"url":"https://example.com"}`)
		j.Labels = map[string]string{"customer": "1234"}
	})
	ping := newJob(ownerA, base, func(j *job.Job) { j.Name = "ping" })
	other := newJob(ownerB, base, func(j *job.Job) { j.Name = "theirs" })
	b.create(t, hook, ping, other)

	// ping and hook share occurrences: ties in time and attempt are
	// broken by job id.
	b.addRun(t, hook, base, 1, job.RunFailed, "dial tcp: connection refused")
	b.addRun(t, hook, base, 2, job.RunPermanentlyFailed, "dial tcp: Connection Refused")
	b.addRun(t, ping, base, 1, job.RunCompleted, "")
	b.addRun(t, hook, base.Add(time.Minute), 1, job.RunCompleted, "")
	b.addRun(t, ping, base.Add(time.Minute), 1, job.RunCompleted, "")
	b.addRun(t, ping, base.Add(2*time.Minute), 1, job.RunSkipped, "missed")
	b.addRun(t, ping, base.Add(3*time.Minute), 1, job.RunAborted, "aborted by its owner")
	b.addRun(t, hook, base.Add(4*time.Minute), 1, job.RunRunning, "")
	b.addRun(t, other, base, 1, job.RunPermanentlyFailed, "connection refused")
	b.addRun(t, other, base.Add(5*time.Minute), 1, job.RunRunning, "")

	// Newest first: scheduled_for, attempt, job id, all descending.
	first, second := hook, ping
	if ping.ID.String() > hook.ID.String() {
		first, second = ping, hook
	}
	all := []runKey{
		{hook.ID, base.Add(4 * time.Minute), 1},
		{ping.ID, base.Add(3 * time.Minute), 1},
		{ping.ID, base.Add(2 * time.Minute), 1},
		{first.ID, base.Add(time.Minute), 1},
		{second.ID, base.Add(time.Minute), 1},
		{hook.ID, base, 2},
		{first.ID, base, 1},
		{second.ID, base, 1},
	}

	t.Run("PagesThroughAnOwnersRunsRunningIncluded", func(t *testing.T) {
		got := b.search(t, store.RunSearch{Owner: ownerA})
		require.Equal(t, all, keys(got))
		require.Equal(t, job.RunRunning, got[0].Status)
		require.Equal(t, "hook", got[0].JobName)
		require.Equal(t, jobtype.TypeWebhook, got[0].JobType)
		for _, r := range got {
			require.Equal(t, ownerA, r.Owner, "another owner's runs never appear")
		}
	})

	t.Run("AnyOwnerSeesEveryOne", func(t *testing.T) {
		got := b.search(t, store.RunSearch{Owner: store.AnyOwner, Now: b.now})
		require.Len(t, got, len(all)+2)
		require.Equal(t, other.ID, got[0].JobID)
		got = b.search(t, store.RunSearch{Owner: store.AnyOwner, Now: b.now, Status: job.RunPermanentlyFailed})
		require.ElementsMatch(t, []uuid.UUID{hook.ID, other.ID}, []uuid.UUID{got[0].JobID, got[1].JobID})
	})

	t.Run("Filters", func(t *testing.T) {
		cases := []struct {
			name string
			f    store.RunSearch
			want []runKey
		}{
			{"Status", store.RunSearch{Status: job.RunCompleted}, []runKey{all[3], all[4], {ping.ID, base, 1}}},
			{"Running", store.RunSearch{Status: job.RunRunning}, all[:1]},
			{"Type", store.RunSearch{Type: jobtype.TypeWebhook}, []runKey{all[0], {hook.ID, base.Add(time.Minute), 1}, all[5], {hook.ID, base, 1}}},
			{"Job", store.RunSearch{JobID: ping.ID}, []runKey{all[1], all[2], {ping.ID, base.Add(time.Minute), 1}, {ping.ID, base, 1}}},
			{"JobAndStatus", store.RunSearch{JobID: ping.ID, Status: job.RunSkipped}, []runKey{all[2]}},
			{"Label", store.RunSearch{Labels: []store.Label{{Key: "customer", Value: "1234"}}, Status: job.RunCompleted}, []runKey{{hook.ID, base.Add(time.Minute), 1}}},
			{"LabelNobodyHas", store.RunSearch{Labels: []store.Label{{Key: "customer", Value: "9"}}}, nil},
			{"Window", store.RunSearch{Since: base.Add(time.Minute), Until: base.Add(3 * time.Minute)}, all[2:5]},
			{"ErrorIgnoringCase", store.RunSearch{Error: "REFUSED"}, []runKey{all[5], {hook.ID, base, 1}}},
			{"ErrorAndStatus", store.RunSearch{Error: "refused", Status: job.RunPermanentlyFailed}, all[5:6]},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				c.f.Owner = ownerA
				got := keys(b.search(t, c.f))
				if len(c.want) == 0 {
					require.Empty(t, got)
					return
				}
				require.Equal(t, c.want, got)
			})
		}
	})

	t.Run("AnotherOwnersJobFindsNothing", func(t *testing.T) {
		require.Empty(t, b.search(t, store.RunSearch{Owner: ownerA, JobID: other.ID}))
		require.Len(t, b.search(t, store.RunSearch{Owner: store.AnyOwner, JobID: other.ID}), 2)
	})

	t.Run("AnyOwnerWalksADayAtATime", func(t *testing.T) {
		old := newJob(ownerB, base, func(j *job.Job) { j.Name = "old" })
		b.create(t, old)
		b.addRun(t, old, base.Add(-47*time.Hour), 1, job.RunCompleted, "")
		got := b.search(t, store.RunSearch{Owner: store.AnyOwner, Now: b.now})
		require.Len(t, got, len(all)+3)
		require.Equal(t, old.ID, got[len(got)-1].JobID)
		got = b.search(t, store.RunSearch{Owner: store.AnyOwner, Now: b.now, Until: base.Add(-24 * time.Hour)})
		require.Len(t, got, 1)
		require.Equal(t, old.ID, got[0].JobID)
		// With a bound of one day a page, the run two days back is still found.
		got = b.search(t, store.RunSearch{Owner: store.AnyOwner, Now: b.now, Status: job.RunCompleted})
		require.Equal(t, old.ID, got[len(got)-1].JobID)
	})
}

// TestSearchRunsBoundsItsWalk: a filter that only the oldest of many runs
// passes looks at Walk runs a call; the short pages say where to resume,
// and following them finds the run.
func TestSearchRunsBoundsItsWalk(t *testing.T) {
	t.Parallel()
	b := setup(t)
	base := b.now.Add(-time.Hour).Truncate(time.Second)
	j := newJob(ownerA, base)
	b.create(t, j)
	for i := range 30 {
		msg := "HTTP 500"
		if i == 0 {
			msg = "connection refused"
		}
		b.addRun(t, j, base.Add(time.Duration(i)*time.Second), 1, job.RunPermanentlyFailed, msg)
	}
	f := store.RunSearch{Owner: ownerA, Error: "refused", Limit: 5, Walk: 10}
	var found []store.FoundRun
	calls := 0
	for {
		calls++
		got, resume, err := b.st.SearchRuns(b.ctx, f)
		require.NoError(t, err)
		found = append(found, got...)
		if resume == nil {
			break
		}
		require.Less(t, calls, 10, "the walk moves on")
		f.Before = resume
	}
	require.Len(t, found, 1)
	require.Equal(t, base, found[0].ScheduledFor)
	require.Equal(t, 3, calls, "30 runs, 10 a call")

	f.Before, f.Walk = nil, 0
	got, resume, err := b.st.SearchRuns(b.ctx, f)
	require.NoError(t, err)
	require.Len(t, got, 1)
	require.Nil(t, resume, "the default walk saw every run")
}

func TestCountRuns(t *testing.T) {
	t.Parallel()
	b := setup(t)
	base := b.now.Add(-time.Hour).Truncate(time.Second)
	hook := newJob(ownerA, base, func(j *job.Job) {
		j.Name, j.Type = "hook", jobtype.TypeWebhook
		j.Payload = []byte(`{"url":"https://example.com"}`)
	})
	ping := newJob(ownerA, base, func(j *job.Job) { j.Name = "ping" })
	other := newJob(ownerB, base)
	b.create(t, hook, ping, other)
	for i := range 3 {
		b.addRun(t, ping, base.Add(time.Duration(i)*time.Minute), 1, job.RunCompleted, "")
	}
	b.addRun(t, hook, base, 1, job.RunPermanentlyFailed, "refused")
	b.addRun(t, hook, base.Add(time.Minute), 1, job.RunRunning, "")
	b.addRun(t, ping, base.Add(-48*time.Hour+time.Minute), 1, job.RunCompleted, "") // outside the window
	b.addRun(t, other, base, 1, job.RunCompleted, "")

	since, until := base.Add(-time.Hour), b.now
	count := func(owner uuid.UUID, by store.RunGroup) []store.RunCount {
		got, err := b.st.CountRuns(b.ctx, owner, since, until, by, 10)
		require.NoError(t, err)
		return got
	}
	require.Equal(t, []store.RunCount{{Key: "completed", Count: 3}, {Key: "permanently_failed", Count: 1}, {Key: "running", Count: 1}},
		count(ownerA, store.GroupByStatus))
	require.Equal(t, []store.RunCount{{Key: "ping", Count: 3}, {Key: "webhook", Count: 2}}, count(ownerA, store.GroupByType))
	require.Equal(t, []store.RunCount{{Key: ping.ID.String(), Name: "ping", Count: 3}, {Key: hook.ID.String(), Name: "hook", Count: 2}},
		count(ownerA, store.GroupByJob))
	require.Equal(t, []store.RunCount{{Key: "completed", Count: 4}, {Key: "permanently_failed", Count: 1}, {Key: "running", Count: 1}},
		count(store.AnyOwner, store.GroupByStatus))

	got, err := b.st.CountRuns(b.ctx, ownerA, since, until, store.GroupByJob, 1)
	require.NoError(t, err)
	require.Len(t, got, 1, "the largest groups only")

	_, err = b.st.CountRuns(b.ctx, ownerA, until.Add(-32*24*time.Hour), until, store.GroupByStatus, 10)
	require.ErrorIs(t, err, job.ErrInvalid)
}

// TestFinishedRunsMatchTheSchema: the run search merges one walk per
// finished status, so it must know every status the schema has.
func TestFinishedRunsMatchTheSchema(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var enum []string
	require.NoError(t, b.st.Pool().QueryRow(b.ctx, `SELECT enum_range(NULL::run_status)::text[]`).Scan(&enum))
	want := []string{string(job.RunRunning)}
	for _, st := range store.FinishedRuns {
		want = append(want, string(st))
	}
	require.ElementsMatch(t, enum, want)
}

// TestDescribeRunning: of the attempts Redis holds running, a run search
// keeps those whose jobs it selects by owner, type and labels, with their
// jobs' names, types and owners, newest first; a job gone meanwhile drops
// its attempt.
func TestDescribeRunning(t *testing.T) {
	t.Parallel()
	b := setup(t)
	base := b.now.Add(-time.Hour).Truncate(time.Second)
	hook := newJob(ownerA, base, func(j *job.Job) {
		j.Name, j.Type = "hook", jobtype.TypeWebhook
		j.Payload = []byte(`{"url":"https://example.com"}`)
		j.Labels = map[string]string{"customer": "1234"}
	})
	ping := newJob(ownerA, base, func(j *job.Job) {
		j.Name = "ping"
		j.Labels = map[string]string{"customer": "9"}
	})
	other := newJob(ownerB, base, func(j *job.Job) {
		j.Name = "theirs"
		j.Labels = map[string]string{"customer": "1234"}
	})
	gone := newJob(ownerA, base)
	b.create(t, hook, ping, other)
	running := func(j *job.Job, at time.Time, attempt int) job.Run {
		return job.Run{ID: job.NewID(), JobID: j.ID, ScheduledFor: at, Attempt: attempt, Status: job.RunRunning,
			DueAt: at, StartedAt: b.now, LeaseUntil: b.now.Add(time.Minute)}
	}
	// As Redis lists them: in no order.
	runs := []job.Run{
		running(ping, base, 1),
		running(hook, base.Add(2*time.Minute), 1),
		running(gone, base.Add(3*time.Minute), 1),
		running(other, base.Add(time.Minute), 1),
		running(hook, base, 2),
		running(ping, base.Add(2*time.Minute), 1),
	}
	// Newest first: scheduled_for, attempt, job id, all descending.
	first, second := hook, ping
	if ping.ID.String() > hook.ID.String() {
		first, second = ping, hook
	}
	var (
		tie1    = runKey{first.ID, base.Add(2 * time.Minute), 1}
		tie2    = runKey{second.ID, base.Add(2 * time.Minute), 1}
		theirs  = runKey{other.ID, base.Add(time.Minute), 1}
		retry   = runKey{hook.ID, base, 2}
		oldest  = runKey{ping.ID, base, 1}
		hookNew = runKey{hook.ID, base.Add(2 * time.Minute), 1}
	)
	customer := func(v string) []store.Label { return []store.Label{{Key: "customer", Value: v}} }

	for _, c := range []struct {
		name string
		f    store.RunSearch
		want []runKey
	}{
		{"AnOwnersOwn", store.RunSearch{Owner: ownerA}, []runKey{tie1, tie2, retry, oldest}},
		{"AnyOwnerSeesEveryOne", store.RunSearch{Owner: store.AnyOwner}, []runKey{tie1, tie2, theirs, retry, oldest}},
		{"AnotherOwner", store.RunSearch{Owner: ownerB}, []runKey{theirs}},
		{"Type", store.RunSearch{Owner: ownerA, Type: jobtype.TypeWebhook}, []runKey{hookNew, retry}},
		{"Label", store.RunSearch{Owner: ownerA, Labels: customer("1234")}, []runKey{hookNew, retry}},
		{"LabelAcrossOwners", store.RunSearch{Owner: store.AnyOwner, Labels: customer("1234")}, []runKey{hookNew, theirs, retry}},
		{"LabelNobodyHas", store.RunSearch{Owner: store.AnyOwner, Labels: customer("7")}, nil},
		{"TypeAndLabel", store.RunSearch{Owner: ownerA, Type: jobtype.TypePing, Labels: customer("1234")}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := b.st.DescribeRunning(b.ctx, runs, c.f)
			require.NoError(t, err)
			if len(c.want) == 0 {
				require.Empty(t, got)
				return
			}
			require.Equal(t, c.want, keys(got))
		})
	}

	t.Run("NamesEachRunsJob", func(t *testing.T) {
		got, err := b.st.DescribeRunning(b.ctx, runs, store.RunSearch{Owner: store.AnyOwner})
		require.NoError(t, err)
		jobs := map[uuid.UUID]*job.Job{hook.ID: hook, ping.ID: ping, other.ID: other}
		for _, r := range got {
			j := jobs[r.JobID]
			require.Equal(t, j.Name, r.JobName)
			require.Equal(t, j.Type, r.JobType)
			require.Equal(t, j.Owner, r.Owner, "its owner is its job's")
			require.Equal(t, job.RunRunning, r.Status)
			require.True(t, r.StartedAt.Equal(b.now), "the run is as Redis gave it")
		}
		i := slices.IndexFunc(runs, func(r job.Run) bool { return r.JobID == other.ID })
		require.Equal(t, runs[i].ID, got[2].ID)
	})

	t.Run("NothingIsANoOp", func(t *testing.T) {
		got, err := b.st.DescribeRunning(b.ctx, nil, store.RunSearch{Owner: ownerA})
		require.NoError(t, err)
		require.Empty(t, got)
	})
}

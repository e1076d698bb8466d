package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/tockhq/tock/pkg/job"
	"github.com/tockhq/tock/pkg/store"
	"github.com/tockhq/tock/pkg/testenv"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var (
	ownerA = uuid.MustParse("0190aaaa-0000-7000-8000-00000000000a")
	ownerB = uuid.MustParse("0190bbbb-0000-7000-8000-00000000000b")
	// created is the creation time of every test job.
	created = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
)

// bundle is what a store test works with: its own migrated schema, and a clock
// near the real one, so job_runs rows land in the day partitions testenv made.
type bundle struct {
	ctx context.Context
	st  *store.Store
	now time.Time
}

func setup(t *testing.T) *bundle {
	t.Helper()
	return &bundle{ctx: t.Context(), st: testenv.Store(t), now: time.Now().UTC().Truncate(time.Millisecond)}
}

// newJob returns a scheduled one-off ping job of owner due at runAt, named
// after its due time and created at the tests' fixed instant.
func newJob(owner uuid.UUID, runAt time.Time, mods ...func(*job.Job)) *job.Job {
	j := testenv.Job(owner, runAt, func(j *job.Job) {
		j.Name = "ping " + j.RunAt.Format(time.RFC3339Nano)
		j.CreatedAt, j.UpdatedAt = created, created
	})
	for _, mod := range mods {
		mod(j)
	}
	return j
}

func (b *bundle) create(t *testing.T, jobs ...*job.Job) {
	t.Helper()
	require.NoError(t, b.st.CreateJobs(b.ctx, jobs, store.Create{}))
}

// claim runs ClaimDue and returns what it handed to enqueue.
func (b *bundle) claim(t *testing.T, since, until time.Time, limit int) []job.Occurrence {
	t.Helper()
	var got []job.Occurrence
	n, err := claimDue(b.st, b.ctx, since, until, limit, b.now, func(_ context.Context, occs []job.Occurrence, _ int64) error {
		got = append(got, occs...)
		return nil
	})
	require.NoError(t, err)
	require.Equal(t, len(got), n)
	return got
}

// outcome is the Result a worker records when attempt o ends with status:
// due at its occurrence, started at b.now and finished a second later, of
// the owner o routes it to (or, for an occurrence not routed, its job's).
func (b *bundle) outcome(t *testing.T, o job.Occurrence, status job.RunStatus) store.Result {
	t.Helper()
	owner := o.Owner
	if owner == uuid.Nil {
		owner = b.job(t, o.JobID).Owner
	}
	return store.Result{Occurrence: o, Owner: owner, Status: status, DueAt: o.ScheduledFor, StartedAt: b.now,
		FinishedAt: b.now.Add(time.Second)}
}

// finish records results in one batch at b.now, as a worker's completer
// does: an attempt's one write.
func (b *bundle) finish(t *testing.T, results ...store.Result) {
	t.Helper()
	require.NoError(t, b.st.FinishRuns(b.ctx, results, b.now))
}

// placement says where a job row lives: its partition and due_hour.
func (b *bundle) placement(t *testing.T, id uuid.UUID) (string, int) {
	t.Helper()
	var part string
	var hour int16
	require.NoError(t, b.st.Pool().QueryRow(b.ctx, `SELECT tableoid::regclass::text, due_hour FROM jobs WHERE id = $1`, id).Scan(&part, &hour))
	return part, int(hour)
}

func (b *bundle) job(t *testing.T, id uuid.UUID) *job.Job {
	t.Helper()
	j, err := b.st.GetJob(b.ctx, store.AnyOwner, id)
	require.NoError(t, err)
	return j
}

func (b *bundle) run(t *testing.T, o job.Occurrence) job.Run {
	t.Helper()
	runs, err := b.st.ListRuns(b.ctx, store.RunFilter{JobID: o.JobID, Limit: 100})
	require.NoError(t, err)
	for _, r := range runs {
		if r.ScheduledFor.Equal(o.ScheduledFor) && r.Attempt == o.Attempt {
			return r
		}
	}
	t.Fatalf("no run of %s attempt %d", o.Key(), o.Attempt)
	return job.Run{}
}

func ids(occs []job.Occurrence) []uuid.UUID {
	out := make([]uuid.UUID, len(occs))
	for i, o := range occs {
		out[i] = o.JobID
	}
	return out
}

// firstAttempt is the occurrence a claim of j hands to Redis.
func firstAttempt(j *job.Job) job.Occurrence {
	return job.Occurrence{JobID: j.ID, ScheduledFor: j.RunAt, Attempt: 1, Priority: j.Priority}.Route(j.Owner, j.Payload)
}

// claimDue runs one loader claim with the default misfire threshold and
// returns how many jobs it claimed.
func claimDue(st *store.Store, ctx context.Context, since, until time.Time, limit int, now time.Time,
	enqueue func(context.Context, []job.Occurrence, int64) error) (int, error) {
	c, err := st.ClaimDue(ctx, store.Window{Since: since, Until: until, Limit: limit, Now: now,
		MisfireThreshold: time.Minute}, enqueue)
	return c.Jobs, err
}

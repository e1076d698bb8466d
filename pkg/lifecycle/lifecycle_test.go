package lifecycle_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"go.uber.org/zap/zaptest"

	"github.com/tockhq/tock/pkg/job"
	"github.com/tockhq/tock/pkg/lifecycle"
	"github.com/tockhq/tock/pkg/queue"
	"github.com/tockhq/tock/pkg/schedule"
	"github.com/tockhq/tock/pkg/store"
	"github.com/tockhq/tock/pkg/testenv"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var owner = uuid.MustParse("0190aaaa-0000-7000-8000-00000000000a")

// bundle is a test's own schema and key prefix, and Jobs over them.
type bundle struct {
	st   *store.Store
	rdb  redis.UniversalClient
	ring *queue.Queue
	jobs *lifecycle.Jobs
	now  time.Time
}

func setup(t *testing.T, rdb redis.UniversalClient, prefix string) *bundle {
	t.Helper()
	b := &bundle{st: testenv.Store(t), rdb: rdb, ring: queue.New(rdb, prefix, 1), now: time.Now().UTC().Truncate(time.Millisecond)}
	b.jobs = lifecycle.New(b.st, b.ring, 10*time.Minute, time.Minute, zaptest.NewLogger(t))
	return b
}

func live(t *testing.T) *bundle {
	rdb, prefix := testenv.Redis(t)
	return setup(t, rdb, prefix)
}

// queued reports whether occ waits to run: in the due set (or held, or
// leased), or published to the stream already, as an occurrence due within
// the publish lead is at once (queue.Queue.EnqueueSoon).
func (b *bundle) queued(t *testing.T, occ job.Occurrence) bool {
	t.Helper()
	if b.inDueSet(t, occ) {
		return true
	}
	entries, err := b.rdb.XRange(t.Context(), b.ring.Of(occ.JobID).Keys().Ready(), "-", "+").Result()
	require.NoError(t, err)
	for _, e := range entries {
		if e.Values["m"] == occ.Member() {
			return true
		}
	}
	return false
}

// inDueSet reports whether occ's member is in the due set.
func (b *bundle) inDueSet(t *testing.T, occ job.Occurrence) bool {
	t.Helper()
	in, err := b.ring.Scheduled(t.Context(), []job.Occurrence{occ})
	require.NoError(t, err)
	return in[0]
}

func TestCreate(t *testing.T) {
	t.Parallel()

	t.Run("DueSoonIsInTheDueSetBeforeReturning", func(t *testing.T) {
		t.Parallel()
		b := live(t)
		soon := testenv.Job(owner, b.now.Add(3*time.Second))
		later := testenv.Job(owner, b.now.Add(time.Hour))
		require.NoError(t, b.jobs.Create(t.Context(), []*job.Job{soon, later}, b.now, store.Create{}))
		require.True(t, b.inDueSet(t, soon.Occurrence(soon.RunAt)))
		require.False(t, b.inDueSet(t, later.Occurrence(later.RunAt)), "beyond the horizon: the loader's")
		got, err := b.st.GetJob(t.Context(), owner, soon.ID)
		require.NoError(t, err)
		require.True(t, got.DueAt.IsZero(), "stored claimed")
	})

	t.Run("RedisDownAfterTheCommitHandsTheClaimBack", func(t *testing.T) {
		t.Parallel()
		dead := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1, DialTimeout: time.Second})
		t.Cleanup(func() { _ = dead.Close() })
		b := setup(t, dead, "unused")
		j := testenv.Job(owner, b.now.Add(3*time.Second))
		require.NoError(t, b.jobs.Create(t.Context(), []*job.Job{j}, b.now, store.Create{}), "the job is committed: not the caller's error")
		got, err := b.st.GetJob(t.Context(), owner, j.ID)
		require.NoError(t, err)
		require.Equal(t, job.StatusScheduled, got.Status)
		require.Equal(t, j.RunAt, got.DueAt, "the claim went back to the loader")
	})
}

func TestEditAndCancel(t *testing.T) {
	t.Parallel()

	t.Run("MovingAOneOffMovesItsMember", func(t *testing.T) {
		t.Parallel()
		b := live(t)
		j := testenv.Job(owner, b.now.Add(5*time.Second))
		require.NoError(t, b.jobs.Create(t.Context(), []*job.Job{j}, b.now, store.Create{}))
		old := j.Occurrence(j.RunAt)
		moved := b.now.Add(7 * time.Second)
		after, err := b.jobs.Edit(t.Context(), owner, j.ID, b.now, func(j *job.Job, _ bool) error {
			j.RunAt, j.DueAt = moved, moved
			j.Generation++
			return nil
		}, store.Update{})
		require.NoError(t, err)
		require.False(t, b.inDueSet(t, old), "the old generation's member is gone")
		require.True(t, b.inDueSet(t, after.Occurrence(moved)))
	})

	t.Run("CancelTakesTheMemberOut", func(t *testing.T) {
		t.Parallel()
		b := live(t)
		j := testenv.Job(owner, b.now.Add(5*time.Second))
		require.NoError(t, b.jobs.Create(t.Context(), []*job.Job{j}, b.now, store.Create{}))
		occ := j.Occurrence(j.RunAt)
		require.True(t, b.inDueSet(t, occ))
		require.NoError(t, b.jobs.Cancel(t.Context(), owner, j.ID, b.now, store.Audit{}))
		require.False(t, b.inDueSet(t, occ))
		got, err := b.st.GetJob(t.Context(), owner, j.ID)
		require.NoError(t, err)
		require.Equal(t, job.StatusCancelled, got.Status)
	})

	// A recurring job's occurrences loaded under the old generation leave
	// the due set when it is paused or cancelled: the System page's due
	// count is live work, not hundreds of entries the workers would drop.
	t.Run("PauseAndCancelTakeARecurringJobsLoadedOccurrencesOut", func(t *testing.T) {
		t.Parallel()
		b := live(t)
		due := func() int64 {
			n, err := b.rdb.ZCard(t.Context(), b.ring.Of(uuid.Nil).Keys().Due()).Result()
			require.NoError(t, err)
			return n
		}
		start := b.now.Add(2 * time.Second).Truncate(time.Second)
		every := func(j *job.Job) {
			sched, err := schedule.Spec{Cron: "* * * * * *", StartAt: &start}.Compile(start)
			require.NoError(t, err)
			raw, err := json.Marshal(sched.Spec())
			require.NoError(t, err)
			first, ok := sched.First()
			require.True(t, ok)
			j.Schedule, j.RunAt, j.DueAt = raw, time.Time{}, first
		}
		for _, stop := range []string{"pause", "cancel"} {
			j := testenv.Job(owner, time.Time{}, every)
			require.NoError(t, b.jobs.Create(t.Context(), []*job.Job{j}, b.now, store.Create{}))
			require.GreaterOrEqual(t, due(), int64(590), "the loader planned its next 10 minutes")
			switch stop {
			case "pause":
				_, err := b.jobs.Edit(t.Context(), owner, j.ID, b.now, func(j *job.Job, _ bool) error {
					j.Status = job.StatusPaused
					j.Generation++
					return nil
				}, store.Update{})
				require.NoError(t, err)
			case "cancel":
				require.NoError(t, b.jobs.Cancel(t.Context(), owner, j.ID, b.now, store.Audit{}))
			}
			require.Zero(t, due(), "after %s, nothing of the job is due", stop)
		}
	})

	t.Run("AnotherOwnersJobIsNotFound", func(t *testing.T) {
		t.Parallel()
		b := live(t)
		j := testenv.Job(owner, b.now.Add(time.Hour))
		require.NoError(t, b.jobs.Create(t.Context(), []*job.Job{j}, b.now, store.Create{}))
		other := uuid.MustParse("0190bbbb-0000-7000-8000-00000000000b")
		require.ErrorIs(t, b.jobs.Cancel(t.Context(), other, j.ID, b.now, store.Audit{}), job.ErrNotFound)
		_, err := b.jobs.Trigger(t.Context(), other, j.ID, b.now, store.Audit{})
		require.ErrorIs(t, err, job.ErrNotFound)
	})
}

func TestTrigger(t *testing.T) {
	t.Parallel()
	b := live(t)
	j := testenv.Job(owner, b.now.Add(time.Hour))
	require.NoError(t, b.jobs.Create(t.Context(), []*job.Job{j}, b.now, store.Create{}))
	occ, err := b.jobs.Trigger(t.Context(), owner, j.ID, b.now, store.Audit{Actor: owner, Action: store.ActionJobTrigger})
	require.NoError(t, err)
	require.Equal(t, b.now, occ.ScheduledFor)
	require.True(t, b.queued(t, occ), "queued to run now")
	entries, err := b.st.ListAudit(t.Context(), store.AuditFilter{Target: j.ID, Limit: 10})
	require.NoError(t, err)
	require.Len(t, entries, 1)
	require.Equal(t, owner, entries[0].Actor)
	require.Equal(t, store.ActionJobTrigger, entries[0].Action)
	require.Contains(t, string(entries[0].Change), occ.Key())

	// An audit that names nobody records nothing, as the store's methods do.
	later := b.now.Add(time.Second)
	occ, err = b.jobs.Trigger(t.Context(), owner, j.ID, later, store.Audit{})
	require.NoError(t, err)
	require.True(t, b.inDueSet(t, occ), "the occurrence is queued all the same")
	entries, err = b.st.ListAudit(t.Context(), store.AuditFilter{Target: j.ID, Limit: 10})
	require.NoError(t, err)
	require.Len(t, entries, 1, "no entry with an empty action and no actor")

	require.NoError(t, b.jobs.Cancel(t.Context(), owner, j.ID, b.now, store.Audit{}))
	_, err = b.jobs.Trigger(t.Context(), owner, j.ID, b.now, store.Audit{})
	require.ErrorIs(t, err, job.ErrConflict)
}

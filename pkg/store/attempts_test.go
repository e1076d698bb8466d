package store_test

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tockhq/tock/pkg/job"
	"github.com/tockhq/tock/pkg/jobspec"
	"github.com/tockhq/tock/pkg/jobtype"
	"github.com/tockhq/tock/pkg/secretbox"
	"github.com/tockhq/tock/pkg/store"
	"github.com/tockhq/tock/pkg/testenv"
)

// fetch runs Fetch for occs at b.now.
func (b *bundle) fetch(t *testing.T, occs ...job.Occurrence) []store.Fetched {
	t.Helper()
	got, err := b.st.Fetch(b.ctx, occs, b.now)
	require.NoError(t, err)
	require.Len(t, got, len(occs), "one answer per occurrence")
	return got
}

func TestFetch(t *testing.T) {
	t.Parallel()

	t.Run("AnswersEachOccurrenceInOrder", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		hook := newJob(ownerA, b.now, func(j *job.Job) {
			j.Name, j.Type, j.Timeout, j.MaxRetries, j.Priority = "hook", jobtype.TypeWebhook, 2*time.Second, 7, 11
			j.Payload = json.RawMessage(`{"url":"https://example.com","method":"PUT"}`)
		})
		start := b.now.Add(-time.Hour).Truncate(time.Minute)
		every := newJob(ownerB, start, recurring(t, start), func(j *job.Job) {
			j.Name, j.Overlap, j.History, j.ExpiresAfter = "every minute", job.OverlapBufferOne, job.HistoryFailures, 30*time.Second
		})
		occs := b.claimed(t, hook)
		b.create(t, every)
		gone := job.Occurrence{JobID: job.NewID(), ScheduledFor: b.now, Attempt: 1}
		tick := job.Occurrence{JobID: every.ID, ScheduledFor: start.Add(time.Minute), Attempt: 1}
		asked := []job.Occurrence{tick, gone, occs[0], occs[0].Next()}

		got := b.fetch(t, asked...)
		for i, f := range got {
			require.Equal(t, asked[i], f.Occurrence, "answer %d is for occurrence %d", i, i)
			require.Empty(t, f.Outcome, "no attempt has an outcome")
			require.True(t, f.LeaseUntil.IsZero())
		}
		require.Nil(t, got[1].Job, "a job that is gone has none")

		h := got[2].Job
		require.NotNil(t, h)
		require.Equal(t, job.StatusScheduled, h.Status)
		require.Equal(t, hook.Generation, h.Generation)
		require.Equal(t, ownerA, h.Owner)
		require.Equal(t, jobtype.TypeWebhook, h.Type)
		require.Equal(t, "hook", h.Name)
		require.JSONEq(t, string(hook.Payload), string(h.Payload))
		require.Equal(t, 2*time.Second, h.Timeout)
		require.Equal(t, 7, h.MaxRetries)
		require.Nil(t, h.Schedule, "a one-off job has no schedule")
		require.Empty(t, h.Overlap)
		require.Equal(t, job.HistoryAll, h.History)
		require.Zero(t, h.ExpiresAfter)
		require.NoError(t, h.SecretsErr)
		require.Equal(t, h, got[3].Job, "its retry reads the same job")

		e := got[0].Job
		require.NotNil(t, e)
		require.Equal(t, ownerB, e.Owner)
		require.Equal(t, "every minute", e.Name)
		require.JSONEq(t, string(every.Schedule), string(e.Schedule))
		require.Equal(t, job.OverlapBufferOne, e.Overlap)
		require.Equal(t, job.HistoryFailures, e.History)
		require.Equal(t, 30*time.Second, e.ExpiresAfter)
		require.True(t, e.LastAt.IsZero(), "the recurrence has not ended")
	})

	t.Run("SeesTheJobAsItIsNow", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		j := newJob(ownerA, b.now)
		occs := b.claimed(t, j)
		_, _, err := b.st.UpdateJob(b.ctx, ownerA, j.ID, b.now, jobspec.Pause, store.Update{})
		require.NoError(t, err)

		got := b.fetch(t, occs...)[0].Job
		require.Equal(t, job.StatusPaused, got.Status)
		require.Greater(t, got.Generation, occs[0].Generation, "the worker finds its entry stale")
	})

	t.Run("ReportsAnAttemptsOutcome", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		j := newJob(ownerA, b.now)
		occs := b.claimed(t, j)
		b.finish(t, b.outcome(t, occs[0], job.RunFailed))

		got := b.fetch(t, occs[0], occs[0].Next())
		require.Equal(t, job.RunFailed, got[0].Outcome, "a redelivery of a finished attempt is known as such")
		require.Empty(t, got[1].Outcome, "its retry has none yet")
		require.Equal(t, job.StatusScheduled, got[1].Job.Status)
	})

	t.Run("ReportsALegacyRunningRowAndItsLease", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		j := newJob(ownerA, b.now)
		occs := b.claimed(t, j)
		// A release that recorded starts left the attempt running.
		b.addRun(t, j, j.RunAt, 1, job.RunRunning, "")

		got := b.fetch(t, occs...)[0]
		require.Equal(t, job.RunRunning, got.Outcome)
		require.Equal(t, j.RunAt.Add(time.Minute), got.LeaseUntil)
		require.NotNil(t, got.Job)
	})

	t.Run("NothingIsANoOp", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		got, err := b.st.Fetch(b.ctx, nil, b.now)
		require.NoError(t, err)
		require.Empty(t, got)
		got, err = b.st.FetchCommitted(b.ctx, nil, b.now)
		require.NoError(t, err)
		require.Empty(t, got)
	})
}

// TestFetchRevealsSecrets: the attempt gets its job's credentials back in
// place of their fingerprints, and its owner's signing secrets opened (the
// previous one while its grace lasts); a store without the operator key
// says it cannot, and hands out no credential.
func TestFetchRevealsSecrets(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	box, err := secretbox.New(bytes.Repeat([]byte{4}, 32))
	require.NoError(t, err)
	st := testenv.Store(t, store.Secrets(box))
	now := time.Now().UTC().Truncate(time.Millisecond)
	u, err := st.CreateUser(ctx, &store.User{ID: job.NewID(), Name: "ann", Role: store.RoleUser, CreatedAt: now}, store.Audit{})
	require.NoError(t, err)
	j := testenv.Job(u.ID, now, func(j *job.Job) {
		j.Type = jobtype.TypeWebhook
		j.Payload = json.RawMessage(`{"url":"https://example.com/hook","headers":{"Authorization":"Bearer s3cret","Accept":"text/plain"}}`)
	})
	require.NoError(t, jobspec.SealLegacy(box, j))
	require.NotContains(t, string(j.Payload), "s3cret")
	require.NoError(t, st.CreateJobs(ctx, []*job.Job{j}, store.Create{}))
	old, err := st.SigningSecrets(ctx, u.ID, now)
	require.NoError(t, err)
	rotated, err := st.RotateSigningSecret(ctx, u.ID, now, time.Hour, store.Audit{})
	require.NoError(t, err)
	occ := firstAttempt(j)

	got, err := st.Fetch(ctx, []job.Occurrence{occ}, now)
	require.NoError(t, err)
	aj := got[0].Job
	require.NoError(t, aj.SecretsErr)
	require.NoError(t, aj.SigningErr)
	require.Contains(t, string(aj.Payload), `"Bearer s3cret"`)
	require.Contains(t, string(aj.Payload), "text/plain")
	require.Equal(t, rotated.Current, aj.SigningSecret)
	require.Equal(t, old.Current, aj.PreviousSigningSecret, "the previous secret still signs during its grace")

	got, err = st.Fetch(ctx, []job.Occurrence{occ}, now.Add(2*time.Hour))
	require.NoError(t, err)
	require.Empty(t, got[0].Job.PreviousSigningSecret, "nor after it")

	keyless, err := store.Open(ctx, testenv.URLOf(t, st), 2)
	require.NoError(t, err)
	t.Cleanup(keyless.Close)
	got, err = keyless.Fetch(ctx, []job.Occurrence{occ}, now)
	require.NoError(t, err)
	aj = got[0].Job
	require.ErrorIs(t, aj.SecretsErr, secretbox.ErrNoKey)
	require.ErrorIs(t, aj.SigningErr, secretbox.ErrNoKey)
	require.NotContains(t, aj.SecretsErr.Error(), "s3cret")
	require.NotContains(t, string(aj.Payload), "s3cret")
	require.Empty(t, aj.SigningSecret)
}

// TestFetchCommittedWaitsForARetryInFlight: a retry puts its attempt in
// Redis before its transaction commits, so a fast worker can read it while
// Postgres still holds the job permanently_failed. Fetch then sees the job
// ended; FetchCommitted waits for the commit and sees it scheduled, so the
// attempt runs instead of being dropped.
func TestFetchCommittedWaitsForARetryInFlight(t *testing.T) {
	t.Parallel()
	b := setup(t)
	j := newJob(ownerA, b.now)
	occs := b.claimed(t, j)
	b.finish(t, b.outcome(t, occs[0], job.RunPermanentlyFailed))
	require.Equal(t, job.StatusPermanentlyFailed, b.job(t, j.ID).Status)

	type result struct {
		fetched []store.Fetched
		err     error
	}
	done := make(chan result, 1)
	var during []store.Fetched
	retried, err := b.st.RetryOccurrence(b.ctx, ownerA, j.ID, time.Time{}, b.now, store.Audit{},
		func(ctx context.Context, occ job.Occurrence) error {
			// The worker, handed the attempt the moment it is in Redis.
			var err error
			if during, err = b.st.Fetch(ctx, []job.Occurrence{occ}, b.now); err != nil {
				return err
			}
			go func() {
				f, err := b.st.FetchCommitted(b.ctx, []job.Occurrence{occ}, b.now)
				done <- result{f, err}
			}()
			testenv.WaitUntil(t, 10*time.Second, func() bool { return b.waitingOnJobs(t) },
				"FetchCommitted never waited for the retry's transaction")
			select {
			case r := <-done:
				t.Errorf("FetchCommitted returned before the retry committed: %+v", r)
				done <- r
			default:
			}
			return nil
		})
	require.NoError(t, err)
	require.Equal(t, 2, retried.Attempt)

	require.Len(t, during, 1)
	require.Equal(t, job.StatusPermanentlyFailed, during[0].Job.Status, "Fetch reads what is committed, at once")
	r := <-done
	require.NoError(t, r.err)
	require.Len(t, r.fetched, 1)
	require.Equal(t, retried, r.fetched[0].Occurrence)
	require.Equal(t, job.StatusScheduled, r.fetched[0].Job.Status, "the retried attempt runs once the retry has committed")
	require.Empty(t, r.fetched[0].Outcome)
}

// waitingOnJobs reports whether a session that holds a lock on this test's
// jobs table waits for another lock: a FetchCommitted blocked on a writer.
// The table's oid is this schema's own, so other tests' sessions do not
// count.
func (b *bundle) waitingOnJobs(t *testing.T) bool {
	t.Helper()
	var waiting bool
	require.NoError(t, b.st.Pool().QueryRow(b.ctx, `SELECT EXISTS (
    SELECT 1 FROM pg_locks w
    WHERE NOT w.granted
      AND w.pid IN (SELECT pid FROM pg_locks WHERE relation = 'jobs'::regclass AND mode = 'RowShareLock' AND granted))`).Scan(&waiting))
	return waiting
}

package store_test

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/tockhq/tock/pkg/job"
	"github.com/tockhq/tock/pkg/store"
)

func utc(hour, minute int) time.Time { return time.Date(2030, 1, 15, hour, minute, 0, 0, time.UTC) }

func allHours() []int16 {
	hours := make([]int16, 24)
	for h := range hours {
		hours[h] = int16(h)
	}
	return hours
}

func TestWindowHours(t *testing.T) {
	t.Parallel()

	for _, tt := range []struct {
		name         string
		since, until time.Time
		want         []int16
	}{
		{"InsideOneHour", utc(14, 1), utc(14, 9), []int16{14}},
		{"AcrossAnHour", utc(13, 55), utc(14, 5), []int16{13, 14}},
		{"EndsOnTheHour", utc(13, 50), utc(14, 0), []int16{13}},
		{"StartsOnTheHour", utc(14, 0), utc(14, 10), []int16{14}},
		{"AcrossMidnight", utc(23, 55), utc(24, 5), []int16{23, 0}},
		{"NonUTCInput", utc(13, 55).In(time.FixedZone("X", 5*3600+1800)), utc(14, 5).In(time.FixedZone("Y", -7*3600)), []int16{13, 14}},
		{"TwentyTwoHours", utc(2, 30), utc(24, 30), []int16{2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 0}},
		{"TwentyThreeHours", utc(2, 30), utc(25, 30), allHours()},
		{"Unbounded", time.Time{}, utc(14, 5), allHours()},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.want, store.WindowHours(tt.since, tt.until))
		})
	}
}

func TestClaimDue(t *testing.T) {
	t.Parallel()

	t.Run("ClaimsOnlyTheWindow", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		since, until := utc(13, 55), utc(14, 5)
		atSince := newJob(ownerA, since, func(j *job.Job) { j.Priority = 9 })
		inside := newJob(ownerB, utc(14, 1), func(j *job.Job) { j.Priority = -3 })
		lastMs := newJob(ownerA, until.Add(-time.Millisecond))
		outside := []*job.Job{
			newJob(ownerA, since.Add(-time.Millisecond)),
			newJob(ownerA, until),
			newJob(ownerA, utc(14, 1).Add(24*time.Hour)), // same hour partition, next day
			newJob(ownerA, utc(13, 58).Add(-24*time.Hour)),
			newJob(ownerA, utc(3, 0)),
			newJob(ownerA, utc(14, 2), func(j *job.Job) { j.Status = job.StatusPaused }),
		}
		b.create(t, append([]*job.Job{atSince, inside, lastMs}, outside...)...)

		got := b.claim(t, since, until, 100)
		require.ElementsMatch(t, []job.Occurrence{firstAttempt(atSince), firstAttempt(inside), firstAttempt(lastMs)}, got,
			"attempt 1 at run_at, with the job's priority")
		for _, o := range got {
			require.Equal(t, time.UTC, o.ScheduledFor.Location())
			part, hour := b.placement(t, o.JobID)
			require.Equal(t, "jobs_idle", part)
			require.Equal(t, -1, hour)
			j := b.job(t, o.JobID)
			require.True(t, j.DueAt.IsZero(), "claimed: nothing left to load")
			require.Equal(t, job.StatusScheduled, j.Status)
			require.True(t, j.UpdatedAt.Equal(b.now))
		}
		for _, j := range outside {
			require.Equal(t, j.DueAt, b.job(t, j.ID).DueAt, "job due %s is not claimed", j.DueAt)
		}

		require.Empty(t, b.claim(t, since, until, 100), "a second claim finds nothing")
	})

	t.Run("TakesEarliestUpToLimit", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		var jobs []*job.Job
		for i := range 10 {
			// Created latest first, spread over both hour partitions of the window.
			jobs = append(jobs, newJob(ownerA, utc(13, 55).Add(time.Duration(9-i)*time.Minute)))
		}
		b.create(t, jobs...)

		wantOrder := slices.Clone(jobs)
		slices.SortFunc(wantOrder, func(a, c *job.Job) int { return a.DueAt.Compare(c.DueAt) })
		var claimed []uuid.UUID
		for _, limit := range []int{3, 3, 3, 3} {
			got := b.claim(t, utc(13, 55), utc(14, 5), limit)
			require.LessOrEqual(t, len(got), limit)
			claimed = append(claimed, ids(sortByDue(got))...)
		}
		var want []uuid.UUID
		for _, j := range wantOrder {
			want = append(want, j.ID)
		}
		require.Equal(t, want, claimed, "each round takes the earliest due jobs left")
	})

	t.Run("UnboundedSinceClaimsOverdueJobs", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		old, recent, future := newJob(ownerA, time.Date(2020, 3, 1, 5, 0, 0, 0, time.UTC)), newJob(ownerA, utc(14, 0)), newJob(ownerA, utc(16, 0))
		b.create(t, old, recent, future)
		got := b.claim(t, time.Time{}, utc(14, 5), 100)
		require.ElementsMatch(t, []uuid.UUID{old.ID, recent.ID}, ids(got))
	})

	t.Run("FailedEnqueueClaimsNothing", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		j := newJob(ownerA, utc(14, 0))
		b.create(t, j)
		boom := errors.New("redis down")
		var offered []job.Occurrence
		n, err := claimDue(b.st, b.ctx, utc(13, 55), utc(14, 5), 10, b.now, func(_ context.Context, occs []job.Occurrence, _ int64) error {
			offered = occs
			return boom
		})
		require.ErrorIs(t, err, boom)
		require.Zero(t, n)
		require.Len(t, offered, 1)

		part, _ := b.placement(t, j.ID)
		require.Equal(t, "jobs_h14", part, "the claim rolled back")
		require.Equal(t, j.DueAt, b.job(t, j.ID).DueAt)
		require.Equal(t, []job.Occurrence{firstAttempt(j)}, b.claim(t, utc(13, 55), utc(14, 5), 10), "the next round claims it")
	})

	t.Run("NothingDueSkipsEnqueue", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		n, err := claimDue(b.st, b.ctx, utc(13, 55), utc(14, 5), 10, b.now, func(context.Context, []job.Occurrence, int64) error {
			t.Error("enqueue called with nothing to enqueue")
			return nil
		})
		require.NoError(t, err)
		require.Zero(t, n)
	})

	t.Run("ConcurrentClaimsNeverOverlap", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		const total = 1000
		jobs := make([]*job.Job, total)
		for i := range jobs {
			jobs[i] = newJob(ownerA, utc(13, 55).Add(time.Duration(i)*500*time.Millisecond))
		}
		b.create(t, jobs...)

		var (
			wg    sync.WaitGroup
			start = make(chan struct{})
			got   [2][]uuid.UUID
			errs  [2]error
		)
		for w := range got {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				for {
					var batch []job.Occurrence
					n, err := claimDue(b.st, b.ctx, utc(13, 55), utc(14, 5), 37, b.now, func(_ context.Context, occs []job.Occurrence, _ int64) error {
						batch = occs
						return nil
					})
					if err != nil {
						errs[w] = err
						return
					}
					if n == 0 {
						return
					}
					got[w] = append(got[w], ids(batch)...)
				}
			}()
		}
		close(start)
		wg.Wait()
		require.NoError(t, errors.Join(errs[:]...))

		require.Equal(t, total, len(got[0])+len(got[1]), "claimed %d and %d", len(got[0]), len(got[1]))
		all := slices.Concat(got[0], got[1])
		slices.SortFunc(all, func(a, c uuid.UUID) int { return strings.Compare(a.String(), c.String()) })
		require.Len(t, slices.Compact(all), total, "no job claimed twice")
		require.Empty(t, b.claim(t, utc(13, 55), utc(14, 5), total))
	})

	t.Run("PrunesToWindowPartitions", func(t *testing.T) {
		t.Parallel()
		for _, tt := range []struct {
			name         string
			since, until time.Time
			want         []string
		}{
			{"AcrossAnHour", utc(13, 55), utc(14, 5), []string{"jobs_h13", "jobs_h14"}},
			{"AcrossMidnight", utc(23, 55), utc(24, 5), []string{"jobs_h00", "jobs_h23"}},
			{"UnboundedSince", time.Time{}, utc(14, 5), hourPartitions(store.WindowHours(time.Time{}, utc(14, 5)))},
		} {
			t.Run(tt.name, func(t *testing.T) {
				t.Parallel()
				b := setup(t)
				var jobs []*job.Job
				for _, h := range []int{0, 3, 12, 13, 14, 15, 23} {
					jobs = append(jobs, newJob(ownerA, utc(h, 58)), newJob(ownerA, utc(h, 2)))
				}
				idle := newJob(ownerA, utc(14, 0), func(j *job.Job) { j.DueAt = time.Time{} })
				b.create(t, append(jobs, idle)...)
				_, err := b.st.Pool().Exec(b.ctx, `ANALYZE jobs`)
				require.NoError(t, err)

				plan := explainClaim(t, b, tt.since, tt.until)
				t.Logf("EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) of the claim for [%s, %s):\n%s",
					tt.since.Format(time.RFC3339), tt.until.Format(time.RFC3339), plan)

				require.Equal(t, tt.want, partitionsIn(plan), "the plan touches only the window's hour partitions")
				require.NotContains(t, plan, "jobs_idle", "claimed jobs are never scanned")
			})
		}
	})
}

// explainClaim runs EXPLAIN ANALYZE of the loader's exact claim query, with the
// arguments ClaimDue passes, in a transaction it rolls back.
func explainClaim(t *testing.T, b *bundle, since, until time.Time) string {
	t.Helper()
	lower := since
	if lower.IsZero() {
		lower = time.Unix(0, 0)
	}
	var lines []string
	err := pgx.BeginFunc(b.ctx, b.st.Pool(), func(tx pgx.Tx) error {
		rows, err := tx.Query(b.ctx, "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) "+store.ClaimDueSQL,
			store.WindowHours(since, until), lower, until, 1000)
		if err != nil {
			return err
		}
		lines, err = pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return err
		}
		return errRollback
	})
	require.ErrorIs(t, err, errRollback)
	return strings.Join(lines, "\n")
}

var errRollback = errors.New("roll back")

var partitionRE = regexp.MustCompile(`jobs_h\d\d`)

// partitionsIn lists the hour partitions a plan mentions (by name or through
// one of their indexes), sorted, once each.
func partitionsIn(plan string) []string {
	found := partitionRE.FindAllString(plan, -1)
	slices.Sort(found)
	return slices.Compact(found)
}

func hourPartitions(hours []int16) []string {
	out := make([]string, len(hours))
	for i, h := range hours {
		out[i] = fmt.Sprintf("jobs_h%02d", h)
	}
	slices.Sort(out)
	return out
}

func sortByDue(occs []job.Occurrence) []job.Occurrence {
	out := slices.Clone(occs)
	slices.SortFunc(out, func(a, c job.Occurrence) int { return a.ScheduledFor.Compare(c.ScheduledFor) })
	return out
}

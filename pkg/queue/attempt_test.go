package queue_test

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/tockhq/tock/pkg/job"
	"github.com/tockhq/tock/pkg/queue"
)

// leaseFor is how long the cases' leases last; waitKept how long a
// buffer_one occurrence keeps its waiting place.
const (
	leaseFor = time.Minute
	waitKept = 30 * time.Second
)

// What PTTL reports for a key that does not expire, and for a key that is
// not there (a hash whose last field went).
const (
	noTTL = time.Duration(-1)
	noKey = time.Duration(-2)
)

// allowed is the overlap a start passes for a job without a policy, and for
// a retry.
const allowed job.Overlap = ""

// leaseKit is what an attempt case works with: a queue on one backend.
type leaseKit struct {
	ctx context.Context
	rdb redis.UniversalClient
	r   *queue.Queue
}

// onBothLeases runs an attempt case on a queue of n shards, on miniredis
// and on the real Redis server.
func onBothLeases(t *testing.T, shards int, fn func(t *testing.T, k *leaseKit)) {
	t.Helper()
	onBothRedisQueue(t, shards, func(t *testing.T, r *queue.Queue, rdb redis.UniversalClient) {
		fn(t, &leaseKit{ctx: t.Context(), rdb: rdb, r: r})
	})
}

// series returns the first attempts of n occurrences of one fresh job, a
// minute apart from base, in order.
func series(n int) []job.Occurrence {
	first := occ(base, 0)
	out := make([]job.Occurrence, n)
	for i := range out {
		out[i] = first
		out[i].ScheduledFor = first.ScheduledFor.Add(time.Duration(i) * time.Minute)
	}
	return out
}

// startOf asks for o to be leased to worker from at, for leaseFor, under
// its job's overlap policy p.
func startOf(o job.Occurrence, p job.Overlap, worker string, at time.Time) queue.Start {
	return queue.Start{Overlap: p, Generation: o.Generation, Lease: queue.Lease{
		Occurrence: o, Worker: worker, Run: job.NewID(), StartedAt: at, Until: at.Add(leaseFor),
		DueAt: o.ScheduledFor, Entry: ms(o.ScheduledFor) + "-0", Member: o.Member(),
	}}
}

// start leases starts, all of one shard, at now, and returns the answers.
func (k *leaseKit) start(t *testing.T, now time.Time, starts ...queue.Start) []int {
	t.Helper()
	got, err := k.r.Of(starts[0].Lease.Occurrence.JobID).Start(k.ctx, starts, now, waitKept)
	require.NoError(t, err)
	require.Len(t, got, len(starts), "one answer per attempt")
	return got
}

// start1 leases one attempt at now and returns its answer.
func (k *leaseKit) start1(t *testing.T, now time.Time, s queue.Start) int {
	t.Helper()
	return k.start(t, now, s)[0]
}

// settle settles ended and dropped attempts at now, each in its job's
// shard, in one call.
func (k *leaseKit) settle(t *testing.T, now time.Time, ended, dropped []job.Occurrence) {
	t.Helper()
	done := map[int]queue.Settlement{}
	for _, o := range ended {
		i := k.r.Of(o.JobID).Keys().Shard
		s := done[i]
		s.Now, s.Ended = now, append(s.Ended, o)
		done[i] = s
	}
	for _, o := range dropped {
		i := k.r.Of(o.JobID).Keys().Shard
		s := done[i]
		s.Now, s.Dropped = now, append(s.Dropped, o)
		done[i] = s
	}
	require.NoError(t, k.r.Settle(k.ctx, done))
}

// end settles occs as ended (their outcome recorded) at now.
func (k *leaseKit) end(t *testing.T, now time.Time, occs ...job.Occurrence) {
	t.Helper()
	k.settle(t, now, occs, nil)
}

// drop settles occs as dropped (acknowledged unrun) at now.
func (k *leaseKit) drop(t *testing.T, now time.Time, occs ...job.Occurrence) {
	t.Helper()
	k.settle(t, now, nil, occs)
}

// runField is an attempt's field in its job's run hash, and leaseMember its
// member in its shard's leases set, as attempt.go documents them.
func runField(o job.Occurrence) string { return ms(o.ScheduledFor) + ":" + strconv.Itoa(o.Attempt) }

func leaseMember(o job.Occurrence) string { return o.JobID.String() + ":" + runField(o) }

// leaseMembers names leases by their members in the leases sets, in order.
func leaseMembers(ls []queue.Lease) []string {
	out := make([]string, len(ls))
	for i, l := range ls {
		out[i] = leaseMember(l.Occurrence)
	}
	return out
}

// byOccurrence orders leases by scheduled time, then attempt.
func byOccurrence(ls []queue.Lease) []queue.Lease {
	slices.SortFunc(ls, func(a, b queue.Lease) int {
		return cmp.Or(a.Occurrence.ScheduledFor.Compare(b.Occurrence.ScheduledFor), cmp.Compare(a.Occurrence.Attempt, b.Occurrence.Attempt))
	})
	return ls
}

// running returns the leases of job id, by occurrence.
func (k *leaseKit) running(t *testing.T, id uuid.UUID) []queue.Lease {
	t.Helper()
	ls, err := k.r.Running(k.ctx, id)
	require.NoError(t, err)
	return byOccurrence(ls)
}

// leaseScore returns o's score in its shard's leases set, as a time, and
// whether it is there.
func (k *leaseKit) leaseScore(t *testing.T, o job.Occurrence) (time.Time, bool) {
	t.Helper()
	s, err := k.rdb.ZScore(k.ctx, k.r.Of(o.JobID).Keys().Leases(), leaseMember(o)).Result()
	if errors.Is(err, redis.Nil) {
		return time.Time{}, false
	}
	require.NoError(t, err)
	return time.UnixMilli(int64(s)).UTC(), true
}

// runValue returns field of job id's run hash, and whether it is there.
func (k *leaseKit) runValue(t *testing.T, id uuid.UUID, field string) (string, bool) {
	t.Helper()
	v, err := k.rdb.HGet(k.ctx, k.r.Of(id).Keys().Run(id), field).Result()
	if errors.Is(err, redis.Nil) {
		return "", false
	}
	require.NoError(t, err)
	return v, true
}

// runTTL returns the time to live of job id's run hash (or noTTL, noKey).
func (k *leaseKit) runTTL(t *testing.T, id uuid.UUID) time.Duration {
	t.Helper()
	d, err := k.rdb.PTTL(k.ctx, k.r.Of(id).Keys().Run(id)).Result()
	require.NoError(t, err)
	return d
}

// requireExpiring asserts that job id's run hash, which holds something
// other than leases, expires within FenceTTL.
func (k *leaseKit) requireExpiring(t *testing.T, id uuid.UUID) {
	t.Helper()
	d := k.runTTL(t, id)
	require.Positive(t, d, "the run hash expires")
	require.LessOrEqual(t, d, queue.FenceTTL)
}

// ms is t in unix milliseconds, as the run hash writes times.
func ms(t time.Time) string { return strconv.FormatInt(t.UnixMilli(), 10) }

func TestAttemptKeys(t *testing.T) {
	t.Parallel()
	// miniredis cannot report CROSSSLOT: the run hashes and the leases set
	// that one script touches must share the shard's hash tag.
	id := job.NewID()
	for _, shard := range []int{0, 5} {
		k := queue.Keys{Prefix: "tock", Shard: shard}
		require.Equal(t, "s"+strconv.Itoa(shard), hashTag(t, k.Run(id)))
		require.Equal(t, "s"+strconv.Itoa(shard), hashTag(t, k.Leases()))
	}
	r := queue.New(nil, "tock", 4)
	for range 20 {
		id := job.NewID()
		k := r.Of(id).Keys()
		require.Equal(t, queue.Slot(k.Due()), queue.Slot(k.Run(id)), "a job's run hash lives in its shard")
		require.Equal(t, queue.Slot(k.Due()), queue.Slot(k.Leases()))
	}
	require.NotEqual(t, queue.Keys{Prefix: "tock"}.Run(id), queue.Keys{Prefix: "tock"}.Run(job.NewID()), "one run hash per job")
}

func TestStart(t *testing.T) {
	t.Parallel()

	t.Run("LeasesAFreshAttempt", func(t *testing.T) {
		t.Parallel()
		onBothLeases(t, 1, func(t *testing.T, k *leaseKit) {
			o := routed(ownerA, "0badc0de", base.Add(-time.Second))
			o.Priority, o.Generation = 7, 4
			s := startOf(o, allowed, "worker-1", base)
			s.Lease.DueAt = base.Add(-500 * time.Millisecond)

			require.Equal(t, []int{queue.StartRun}, k.start(t, base, s))
			require.Equal(t, []queue.Lease{s.Lease}, k.running(t, o.JobID), "every field reads back")
			until, ok := k.leaseScore(t, o)
			require.True(t, ok, "in the leases set")
			require.Equal(t, s.Lease.Until, until, "scored by the end of its lease")
			require.Equal(t, noTTL, k.runTTL(t, o.JobID), "a run hash with a lease does not expire")

			v, ok := k.runValue(t, o.JobID, runField(o))
			require.True(t, ok)
			require.Equal(t, strings.Join([]string{"v1", "worker-1", s.Lease.Run.String(), ms(base), ms(base.Add(leaseFor)),
				ms(s.Lease.DueAt), s.Lease.Entry, o.Member()}, "|"), v, "the documented encoding")
		})
	})

	t.Run("HoldsALiveLeaseAgainstAnotherWorker", func(t *testing.T) {
		t.Parallel()
		onBothLeases(t, 1, func(t *testing.T, k *leaseKit) {
			o := occ(base, 0)
			first := startOf(o, allowed, "w1", base)
			require.Equal(t, queue.StartRun, k.start1(t, base, first))
			require.Equal(t, queue.StartHeld, k.start1(t, base.Add(time.Second), startOf(o, allowed, "w2", base.Add(time.Second))))
			require.Equal(t, queue.StartHeld, k.start1(t, base, startOf(o, allowed, "w1", base)), "the same worker too")
			require.Equal(t, []queue.Lease{first.Lease}, k.running(t, o.JobID), "the first lease stays")
			until, _ := k.leaseScore(t, o)
			require.Equal(t, first.Lease.Until, until)
		})
	})

	t.Run("TakesOverALeaseThatRanOut", func(t *testing.T) {
		t.Parallel()
		for _, c := range []struct {
			name  string
			after time.Duration // since the first lease began
			want  int
		}{
			{"JustBeforeItsEnd", leaseFor - time.Millisecond, queue.StartHeld},
			{"AtItsEnd", leaseFor, queue.StartRun},
			{"LongAfter", time.Hour, queue.StartRun},
		} {
			t.Run(c.name, func(t *testing.T) {
				t.Parallel()
				onBothLeases(t, 1, func(t *testing.T, k *leaseKit) {
					o := occ(base, 0)
					first := startOf(o, allowed, "w1", base)
					require.Equal(t, queue.StartRun, k.start1(t, base, first))
					at := base.Add(c.after)
					second := startOf(o, allowed, "w2", at)
					require.Equal(t, c.want, k.start1(t, at, second))

					want := first.Lease
					if c.want == queue.StartRun {
						want = second.Lease
					}
					require.Equal(t, []queue.Lease{want}, k.running(t, o.JobID))
					until, ok := k.leaseScore(t, o)
					require.True(t, ok)
					require.Equal(t, want.Until, until, "scored by the lease that holds")
					n, err := k.rdb.ZCard(k.ctx, k.r.Home().Keys().Leases()).Result()
					require.NoError(t, err)
					require.EqualValues(t, 1, n, "one member per attempt")
				})
			})
		}
	})

	t.Run("LeasesABatchOfJobsInOneCall", func(t *testing.T) {
		t.Parallel()
		onBothLeases(t, 1, func(t *testing.T, k *leaseKit) {
			fresh, held, fenced, other := occ(base, 0), occ(base, 0), occ(base, 0), occ(base, 3)
			kept := startOf(held, allowed, "w0", base)
			require.Equal(t, queue.StartRun, k.start1(t, base, kept))
			_, err := k.r.Fence(k.ctx, fenced.JobID, fenced.Generation+1, base)
			require.NoError(t, err)

			at := base.Add(time.Second)
			batch := []queue.Start{startOf(fresh, allowed, "w1", at), startOf(held, allowed, "w1", at),
				startOf(fenced, allowed, "w1", at), startOf(other, allowed, "w1", at)}
			require.Equal(t, []int{queue.StartRun, queue.StartHeld, queue.StartFenced, queue.StartRun}, k.start(t, at, batch...),
				"answers in the order asked")

			got, err := k.r.RunningOf(k.ctx, []uuid.UUID{fresh.JobID, held.JobID, fenced.JobID, other.JobID})
			require.NoError(t, err)
			require.Equal(t, map[uuid.UUID][]queue.Lease{
				fresh.JobID: {batch[0].Lease}, held.JobID: {kept.Lease}, other.JobID: {batch[3].Lease},
			}, got)
			_, ok := k.leaseScore(t, fenced)
			require.False(t, ok, "a fenced attempt is not leased")
		})
	})

	t.Run("NothingToStart", func(t *testing.T) {
		t.Parallel()
		onBothLeases(t, 1, func(t *testing.T, k *leaseKit) {
			got, err := k.r.Home().Start(k.ctx, nil, base, waitKept)
			require.NoError(t, err)
			require.Empty(t, got)
		})
	})
}

func TestFence(t *testing.T) {
	t.Parallel()

	t.Run("StopsEntriesOfOlderGenerations", func(t *testing.T) {
		t.Parallel()
		for _, c := range []struct {
			gen  int
			want int
		}{
			{2, queue.StartFenced},
			{3, queue.StartRun},
			{4, queue.StartRun},
		} {
			t.Run("Generation"+strconv.Itoa(c.gen), func(t *testing.T) {
				t.Parallel()
				onBothLeases(t, 1, func(t *testing.T, k *leaseKit) {
					o := occ(base, 0)
					o.Generation = c.gen
					ls, err := k.r.Fence(k.ctx, o.JobID, 3, base)
					require.NoError(t, err)
					require.Empty(t, ls, "nothing runs yet")
					require.Equal(t, c.want, k.start1(t, base.Add(time.Second), startOf(o, allowed, "w1", base.Add(time.Second))))
					_, leased := k.leaseScore(t, o)
					require.Equal(t, c.want == queue.StartRun, leased)
					require.Equal(t, c.want == queue.StartRun, len(k.running(t, o.JobID)) == 1)
				})
			})
		}
	})

	t.Run("ReturnsTheLeasesPresent", func(t *testing.T) {
		t.Parallel()
		onBothLeases(t, 1, func(t *testing.T, k *leaseKit) {
			occs := series(3)
			a, b := startOf(occs[0], allowed, "w1", base), startOf(occs[1], allowed, "w2", base.Add(leaseFor))
			require.Equal(t, queue.StartRun, k.start1(t, base, a))
			require.Equal(t, queue.StartRun, k.start1(t, base.Add(leaseFor), b))

			// a's lease ran out, but its attempt may have reached its target.
			ls, err := k.r.Fence(k.ctx, occs[0].JobID, 1, base.Add(leaseFor+time.Second))
			require.NoError(t, err)
			require.Equal(t, []queue.Lease{a.Lease, b.Lease}, byOccurrence(ls))
			require.Equal(t, noTTL, k.runTTL(t, occs[0].JobID), "a run hash with leases does not expire")
		})
	})

	t.Run("NeverLowersAHigherGeneration", func(t *testing.T) {
		t.Parallel()
		onBothLeases(t, 1, func(t *testing.T, k *leaseKit) {
			occs := series(3)
			id := occs[0].JobID
			_, err := k.r.Fence(k.ctx, id, 5, base)
			require.NoError(t, err)
			_, err = k.r.Fence(k.ctx, id, 3, base.Add(time.Second))
			require.NoError(t, err)
			v, _ := k.runValue(t, id, "fence")
			require.Equal(t, "5|"+ms(base.Add(queue.FenceTTL)), v, "the higher fence and its time hold")
			occs[0].Generation = 4
			require.Equal(t, queue.StartFenced, k.start1(t, base.Add(2*time.Second), startOf(occs[0], allowed, "w1", base)))

			// Once it expired, a lower one takes its place.
			later := base.Add(queue.FenceTTL)
			_, err = k.r.Fence(k.ctx, id, 3, later)
			require.NoError(t, err)
			v, _ = k.runValue(t, id, "fence")
			require.Equal(t, "3|"+ms(later.Add(queue.FenceTTL)), v)
			occs[1].Generation, occs[2].Generation = 2, 4
			require.Equal(t, []int{queue.StartFenced, queue.StartRun},
				k.start(t, later, startOf(occs[1], allowed, "w1", later), startOf(occs[2], allowed, "w1", later)))
		})
	})

	t.Run("UnfenceLiftsOnlyItsOwnGeneration", func(t *testing.T) {
		t.Parallel()
		onBothLeases(t, 1, func(t *testing.T, k *leaseKit) {
			o := occ(base, 0)
			o.Generation = 2
			_, err := k.r.Fence(k.ctx, o.JobID, 3, base)
			require.NoError(t, err)
			require.NoError(t, k.r.Unfence(k.ctx, o.JobID, 2))
			require.NoError(t, k.r.Unfence(k.ctx, o.JobID, 4))
			require.Equal(t, queue.StartFenced, k.start1(t, base, startOf(o, allowed, "w1", base)), "another change's unfence leaves it")
			require.NoError(t, k.r.Unfence(k.ctx, o.JobID, 3))
			_, ok := k.runValue(t, o.JobID, "fence")
			require.False(t, ok, "lifted")
			require.Equal(t, queue.StartRun, k.start1(t, base, startOf(o, allowed, "w1", base)))
			require.NoError(t, k.r.Unfence(k.ctx, job.NewID(), 1), "a job never fenced")
		})
	})

	t.Run("ExpiresAfterFenceTTL", func(t *testing.T) {
		t.Parallel()
		for _, c := range []struct {
			name  string
			after time.Duration
			want  int
		}{
			{"JustBefore", queue.FenceTTL - time.Millisecond, queue.StartFenced},
			{"AtItsEnd", queue.FenceTTL, queue.StartRun},
			{"LongAfter", 24 * time.Hour, queue.StartRun},
		} {
			t.Run(c.name, func(t *testing.T) {
				t.Parallel()
				onBothLeases(t, 1, func(t *testing.T, k *leaseKit) {
					o := occ(base, 0)
					_, err := k.r.Fence(k.ctx, o.JobID, o.Generation+1, base)
					require.NoError(t, err)
					at := base.Add(c.after)
					require.Equal(t, c.want, k.start1(t, at, startOf(o, allowed, "w1", at)))
				})
			})
		}
	})

	t.Run("ExpiresTheRunHashOfAJobWithNothingRunning", func(t *testing.T) {
		t.Parallel()
		onBothLeases(t, 1, func(t *testing.T, k *leaseKit) {
			o := occ(base, 0)
			_, err := k.r.Fence(k.ctx, o.JobID, 0, base)
			require.NoError(t, err)
			k.requireExpiring(t, o.JobID)
			require.Equal(t, queue.StartRun, k.start1(t, base, startOf(o, allowed, "w1", base)))
			require.Equal(t, noTTL, k.runTTL(t, o.JobID), "a lease keeps the run hash")
			_, err = k.r.Fence(k.ctx, o.JobID, 1, base)
			require.NoError(t, err)
			require.Equal(t, noTTL, k.runTTL(t, o.JobID), "so does a fence over a lease")
		})
	})
}

func TestOverlapSkip(t *testing.T) {
	t.Parallel()

	t.Run("SkipsOccurrencesWhileAnEarlierOneHoldsTheJob", func(t *testing.T) {
		t.Parallel()
		onBothLeases(t, 1, func(t *testing.T, k *leaseKit) {
			occs := series(4)
			a, b, c, d := occs[0], occs[1], occs[2], occs[3]
			id := a.JobID
			require.Equal(t, queue.StartRun, k.start1(t, base, startOf(a, job.OverlapSkip, "w1", base)))
			v, _ := k.runValue(t, id, "hold")
			require.Equal(t, ms(a.ScheduledFor)+"|"+ms(base.Add(leaseFor)), v, "a holds the job until its lease ends")

			at := base.Add(time.Second)
			sb := startOf(b, job.OverlapSkip, "w2", at)
			require.Equal(t, queue.StartSkip, k.start1(t, at, sb))
			got := k.running(t, id)
			require.Len(t, got, 2)
			require.Equal(t, sb.Lease, got[1], "a skipped attempt is leased, to be recorded")
			_, ok := k.leaseScore(t, b)
			require.True(t, ok)

			k.end(t, base.Add(2*time.Second), b) // recorded skipped
			require.Equal(t, queue.StartSkip, k.start1(t, base.Add(3*time.Second), startOf(c, job.OverlapSkip, "w2", base.Add(3*time.Second))),
				"b's end leaves a's hold")

			k.end(t, base.Add(4*time.Second), a)
			_, ok = k.runValue(t, id, "hold")
			require.False(t, ok, "a's end lets go of the job")
			at = base.Add(5 * time.Second)
			require.Equal(t, queue.StartRun, k.start1(t, at, startOf(d, job.OverlapSkip, "w2", at)))
			v, _ = k.runValue(t, id, "hold")
			require.Equal(t, ms(d.ScheduledFor)+"|"+ms(at.Add(leaseFor)), v)
		})
	})

	t.Run("AHoldEndsWithItsLease", func(t *testing.T) {
		t.Parallel()
		onBothLeases(t, 1, func(t *testing.T, k *leaseKit) {
			occs := series(3)
			require.Equal(t, queue.StartRun, k.start1(t, base, startOf(occs[0], job.OverlapSkip, "w1", base)))
			before := base.Add(leaseFor - time.Millisecond)
			require.Equal(t, queue.StartSkip, k.start1(t, before, startOf(occs[1], job.OverlapSkip, "w2", before)))
			after := base.Add(leaseFor)
			require.Equal(t, queue.StartRun, k.start1(t, after, startOf(occs[2], job.OverlapSkip, "w2", after)),
				"the worker of a died: its hold ran out with its lease")
		})
	})

	t.Run("NeverHoldsBackARetry", func(t *testing.T) {
		t.Parallel()
		onBothLeases(t, 1, func(t *testing.T, k *leaseKit) {
			occs := series(2)
			a, b := occs[0], occs[1]
			require.Equal(t, queue.StartRun, k.start1(t, base, startOf(a, job.OverlapSkip, "w1", base)))
			at := base.Add(time.Second)
			require.Equal(t, queue.StartRun, k.start1(t, at, startOf(b.Next(), allowed, "w2", at)), "a retry of another occurrence")

			k.end(t, at, a) // failed; its retry is due
			require.Equal(t, queue.StartRun, k.start1(t, at, startOf(b, job.OverlapSkip, "w2", at)))
			require.Equal(t, queue.StartRun, k.start1(t, at, startOf(a.Next(), allowed, "w1", at)), "a's retry, while b holds the job")
			v, _ := k.runValue(t, a.JobID, "hold")
			require.Equal(t, ms(b.ScheduledFor)+"|"+ms(at.Add(leaseFor)), v, "a retry takes no hold")
		})
	})

	t.Run("NeverHoldsBackAJobWithoutPolicy", func(t *testing.T) {
		t.Parallel()
		onBothLeases(t, 1, func(t *testing.T, k *leaseKit) {
			occs := series(3)
			starts := []queue.Start{startOf(occs[0], allowed, "w1", base), startOf(occs[1], allowed, "w1", base)}
			require.Equal(t, []int{queue.StartRun, queue.StartRun}, k.start(t, base, starts...))
			require.Equal(t, queue.StartRun, k.start1(t, base, startOf(occs[2], allowed, "w2", base)))
			require.Len(t, k.running(t, occs[0].JobID), 3, "all three run at once")
			_, ok := k.runValue(t, occs[0].JobID, "hold")
			require.False(t, ok)
		})
	})
}

func TestOverlapBufferOne(t *testing.T) {
	t.Parallel()

	t.Run("OneOccurrenceWaitsForTheJob", func(t *testing.T) {
		t.Parallel()
		onBothLeases(t, 1, func(t *testing.T, k *leaseKit) {
			occs := series(5)
			a, b, c, d, e := occs[0], occs[1], occs[2], occs[3], occs[4]
			id := a.JobID
			at := func(s int) time.Time { return base.Add(time.Duration(s) * time.Second) }
			try := func(o job.Occurrence, s int) int {
				return k.start1(t, at(s), startOf(o, job.OverlapBufferOne, "w1", at(s)))
			}
			require.Equal(t, queue.StartRun, try(a, 0))

			require.Equal(t, queue.StartWait, try(b, 1))
			_, ok := k.leaseScore(t, b)
			require.False(t, ok, "a waiting occurrence is not leased")
			require.Len(t, k.running(t, id), 1)
			v, _ := k.runValue(t, id, "wait")
			require.Equal(t, ms(b.ScheduledFor)+"|"+ms(at(1).Add(waitKept)), v)

			require.Equal(t, queue.StartWait, try(b, 2), "it keeps its place")
			v, _ = k.runValue(t, id, "wait")
			require.Equal(t, ms(b.ScheduledFor)+"|"+ms(at(2).Add(waitKept)), v, "for waitKept more")

			require.Equal(t, queue.StartSkip, try(c, 3), "at most one waits")
			_, ok = k.leaseScore(t, c)
			require.True(t, ok, "leased, to be recorded skipped")

			k.end(t, at(4), c, a)
			k.requireExpiring(t, id) // holding b's place only
			require.Equal(t, queue.StartSkip, try(d, 5), "the job is free, but b waits before d")
			require.Equal(t, queue.StartRun, try(b, 6))
			_, ok = k.runValue(t, id, "wait")
			require.False(t, ok, "b left its place")
			require.Equal(t, queue.StartWait, try(e, 7), "the place is free again")
		})
	})

	t.Run("AnEarlierOccurrenceTakesTheWaitingPlace", func(t *testing.T) {
		t.Parallel()
		onBothLeases(t, 1, func(t *testing.T, k *leaseKit) {
			occs := series(3)
			a, b, c := occs[0], occs[1], occs[2]
			require.Equal(t, queue.StartRun, k.start1(t, base, startOf(a, job.OverlapBufferOne, "w1", base)))
			require.Equal(t, queue.StartWait, k.start1(t, base, startOf(c, job.OverlapBufferOne, "w1", base)))
			require.Equal(t, queue.StartWait, k.start1(t, base, startOf(b, job.OverlapBufferOne, "w1", base)))
			require.Equal(t, queue.StartSkip, k.start1(t, base, startOf(c, job.OverlapBufferOne, "w1", base)))
		})
	})

	t.Run("AWaitingPlaceIsLostAfterWaitKept", func(t *testing.T) {
		t.Parallel()
		onBothLeases(t, 1, func(t *testing.T, k *leaseKit) {
			occs := series(4)
			a, b, c, d := occs[0], occs[1], occs[2], occs[3]
			try := func(o job.Occurrence, at time.Time) int {
				return k.start1(t, at, startOf(o, job.OverlapBufferOne, "w1", at))
			}
			require.Equal(t, queue.StartRun, try(a, base))
			require.Equal(t, queue.StartWait, try(b, base))
			k.end(t, base.Add(time.Second), a)
			require.Equal(t, queue.StartSkip, try(c, base.Add(waitKept-time.Millisecond)), "b's place is kept")
			require.Equal(t, queue.StartRun, try(d, base.Add(waitKept)), "b did not come back in time")
		})
	})

	// An edit, a pause or a resume moves the job to a new generation: the
	// occurrence that waits belongs to the old one and will never start, so
	// the change's fence frees its place (as updateJobSQL did in Postgres).
	t.Run("AChangeOfGenerationFreesTheWaitingPlace", func(t *testing.T) {
		t.Parallel()
		for _, c := range []struct {
			name  string
			ended bool // whether a has ended when c comes
			want  int
		}{
			{"WhileTheJobIsHeld", false, queue.StartWait},
			{"OnceTheJobIsFree", true, queue.StartRun},
		} {
			t.Run(c.name, func(t *testing.T) {
				t.Parallel()
				onBothLeases(t, 1, func(t *testing.T, k *leaseKit) {
					occs := series(3)
					a, b, next := occs[0], occs[1], occs[2]
					next.Generation = 1
					require.Equal(t, queue.StartRun, k.start1(t, base, startOf(a, job.OverlapBufferOne, "w1", base)))
					require.Equal(t, queue.StartWait, k.start1(t, base, startOf(b, job.OverlapBufferOne, "w1", base)))
					_, err := k.r.Fence(k.ctx, a.JobID, 1, base.Add(time.Second))
					require.NoError(t, err)
					if c.ended {
						k.end(t, base.Add(time.Second), a)
					}
					at := base.Add(2 * time.Second)
					require.Equal(t, c.want, k.start1(t, at, startOf(next, job.OverlapBufferOne, "w1", at)),
						"b, of the old generation, holds no place")
				})
			})
		}
	})

	t.Run("AWaitingPlaceLostWhileTheJobIsHeldGoesToTheNext", func(t *testing.T) {
		t.Parallel()
		onBothLeases(t, 1, func(t *testing.T, k *leaseKit) {
			occs := series(3)
			a, b, c := occs[0], occs[1], occs[2]
			require.Equal(t, queue.StartRun, k.start1(t, base, startOf(a, job.OverlapBufferOne, "w1", base)))
			require.Equal(t, queue.StartWait, k.start1(t, base, startOf(b, job.OverlapBufferOne, "w1", base)))
			at := base.Add(waitKept)
			require.Equal(t, queue.StartWait, k.start1(t, at, startOf(c, job.OverlapBufferOne, "w1", at)))
			v, _ := k.runValue(t, a.JobID, "wait")
			require.Equal(t, ms(c.ScheduledFor)+"|"+ms(at.Add(waitKept)), v)
		})
	})
}

func TestSettleLeases(t *testing.T) {
	t.Parallel()

	t.Run("EndedEndsTheLeaseWhoeverHoldsIt", func(t *testing.T) {
		t.Parallel()
		onBothLeases(t, 1, func(t *testing.T, k *leaseKit) {
			o := occ(base, 0)
			require.Equal(t, queue.StartRun, k.start1(t, base, startOf(o, job.OverlapSkip, "w1", base)))
			taken := base.Add(leaseFor)
			require.Equal(t, queue.StartRun, k.start1(t, taken, startOf(o, job.OverlapSkip, "w2", taken)), "w1 died; w2 took over")
			v, _ := k.runValue(t, o.JobID, "hold")
			require.Equal(t, ms(o.ScheduledFor)+"|"+ms(taken.Add(leaseFor)), v, "the hold goes on with the new lease")

			ended := taken.Add(time.Second)
			k.end(t, ended, o) // w1's outcome, recorded
			require.Empty(t, k.running(t, o.JobID))
			_, ok := k.leaseScore(t, o)
			require.False(t, ok, "out of the leases set")
			_, ok = k.runValue(t, o.JobID, "hold")
			require.False(t, ok, "the hold is let go")
			v, ok = k.runValue(t, o.JobID, queue.LeaseField(o))
			require.True(t, ok)
			require.Equal(t, "done|"+ms(ended.Add(queue.DoneKept)), v, "the attempt is marked done")
			require.Positive(t, k.runTTL(t, o.JobID), "the run hash expires")
		})
	})

	t.Run("AFinishedAttemptDoesNotStartAgainWithinDoneKept", func(t *testing.T) {
		t.Parallel()
		onBothLeases(t, 1, func(t *testing.T, k *leaseKit) {
			o := occ(base, 0)
			require.Equal(t, queue.StartRun, k.start1(t, base, startOf(o, allowed, "w1", base)))
			ended := base.Add(time.Second)
			k.end(t, ended, o)
			// Another worker read Postgres before the outcome was recorded.
			require.Equal(t, queue.StartDone, k.start1(t, ended, startOf(o, allowed, "w2", ended)))
			late := ended.Add(queue.DoneKept - time.Millisecond)
			require.Equal(t, queue.StartDone, k.start1(t, late, startOf(o, allowed, "w2", late)))
			require.Empty(t, k.running(t, o.JobID), "not leased")
			in, err := k.r.Scheduled(k.ctx, []job.Occurrence{o})
			require.NoError(t, err)
			require.False(t, in[0], "a finished attempt is not scheduled")
			after := ended.Add(queue.DoneKept)
			require.Equal(t, queue.StartRun, k.start1(t, after, startOf(o, allowed, "w2", after)), "the mark is gone after DoneKept")
		})
	})

	t.Run("OldDoneMarksGoWithTheNextEnd", func(t *testing.T) {
		t.Parallel()
		onBothLeases(t, 1, func(t *testing.T, k *leaseKit) {
			occs := series(2)
			a, b := occs[0], occs[1]
			require.Equal(t, queue.StartRun, k.start1(t, base, startOf(a, allowed, "w1", base)))
			require.Equal(t, queue.StartRun, k.start1(t, base, startOf(b, allowed, "w1", base)))
			k.end(t, base, a)
			later := base.Add(queue.DoneKept)
			k.end(t, later, b)
			_, ok := k.runValue(t, a.JobID, queue.LeaseField(a))
			require.False(t, ok, "a's mark ran out and was removed")
			_, ok = k.runValue(t, b.JobID, queue.LeaseField(b))
			require.True(t, ok)
		})
	})

	t.Run("DroppedEndsOnlyALeaseThatRanOut", func(t *testing.T) {
		t.Parallel()
		for _, c := range []struct {
			name string
			at   time.Duration // since the lease began
			ends bool
		}{
			{"Live", leaseFor - time.Millisecond, false},
			{"AtItsEnd", leaseFor, true},
			{"LongAfter", time.Hour, true},
		} {
			t.Run(c.name, func(t *testing.T) {
				t.Parallel()
				onBothLeases(t, 1, func(t *testing.T, k *leaseKit) {
					occs := series(2)
					a := occs[0]
					sa := startOf(a, job.OverlapSkip, "w1", base)
					require.Equal(t, queue.StartRun, k.start1(t, base, sa))
					now := base.Add(c.at)
					k.drop(t, now, a)

					_, leased := k.leaseScore(t, a)
					_, held := k.runValue(t, a.JobID, "hold")
					if c.ends {
						require.Empty(t, k.running(t, a.JobID))
						require.False(t, leased)
						require.False(t, held)
						require.Equal(t, noKey, k.runTTL(t, a.JobID), "nothing is left of the run hash")
						return
					}
					require.Equal(t, []queue.Lease{sa.Lease}, k.running(t, a.JobID), "a live lease is its worker's to end")
					require.True(t, leased)
					require.True(t, held)
					require.Equal(t, noTTL, k.runTTL(t, a.JobID))
					require.Equal(t, queue.StartSkip, k.start1(t, now, startOf(occs[1], job.OverlapSkip, "w2", now)))
				})
			})
		}
	})

	t.Run("DroppedWithoutALease", func(t *testing.T) {
		t.Parallel()
		onBothLeases(t, 1, func(t *testing.T, k *leaseKit) {
			occs := series(2)
			a, b := occs[0], occs[1]
			require.Equal(t, queue.StartRun, k.start1(t, base, startOf(a, job.OverlapSkip, "w1", base)))
			require.NoError(t, k.rdb.ZAdd(k.ctx, k.r.Home().Keys().Leases(), redis.Z{Score: float64(base.UnixMilli()), Member: leaseMember(b)}).Err())
			k.drop(t, base, b, occ(base, 0))
			_, ok := k.leaseScore(t, b)
			require.False(t, ok, "its stray member goes")
			require.Len(t, k.running(t, a.JobID), 1, "another occurrence's lease stays")
			_, ok = k.runValue(t, a.JobID, "hold")
			require.True(t, ok, "and so does its hold")
		})
	})

	t.Run("TheRunHashExpiresOnceNoLeaseIsLeft", func(t *testing.T) {
		t.Parallel()
		onBothLeases(t, 1, func(t *testing.T, k *leaseKit) {
			occs := series(3)
			a, b, c := occs[0], occs[1], occs[2]
			id := a.JobID
			require.Equal(t, []int{queue.StartRun, queue.StartRun},
				k.start(t, base, startOf(a, allowed, "w1", base), startOf(b, allowed, "w1", base)))
			_, err := k.r.Fence(k.ctx, id, 0, base) // what outlives the leases
			require.NoError(t, err)
			require.Equal(t, noTTL, k.runTTL(t, id))
			k.end(t, base, a)
			require.Equal(t, noTTL, k.runTTL(t, id), "b still runs")
			k.end(t, base, b)
			k.requireExpiring(t, id)
			require.Equal(t, queue.StartRun, k.start1(t, base, startOf(c, allowed, "w1", base)))
			require.Equal(t, noTTL, k.runTTL(t, id), "a new lease keeps it again")
		})
	})

	t.Run("AcksAndDeletesItsEntriesAndSchedulesRetries", func(t *testing.T) {
		t.Parallel()
		onBothLeases(t, 1, func(t *testing.T, k *leaseKit) {
			q := k.r.Home()
			done, failed := occ(base, 0), occ(base, 0)
			require.NoError(t, k.r.Enqueue(k.ctx, []queue.Entry{entry(done), entry(failed)}))
			require.NoError(t, k.r.EnsureGroup(k.ctx))
			_, err := q.Publish(k.ctx, 10, base, queue.Caps{})
			require.NoError(t, err)
			msgs, err := q.Read(k.ctx, "w1", 10, noBlock)
			require.NoError(t, err)
			require.Len(t, msgs, 2)
			starts := make([]queue.Start, len(msgs))
			for i, m := range msgs {
				starts[i] = startOf(m.Occurrence, allowed, "w1", base)
				starts[i].Lease.Entry = m.ID
			}
			require.Equal(t, []int{queue.StartRun, queue.StartRun}, k.start(t, base, starts...))

			retry := queue.Entry{Occurrence: failed.Next(), DueAt: base.Add(time.Minute)}
			require.NoError(t, k.r.Settle(k.ctx, map[int]queue.Settlement{0: {
				IDs: []string{msgs[0].ID, msgs[1].ID}, Retries: []queue.Entry{retry}, Ended: []job.Occurrence{done, failed}, Now: base,
			}}))
			st, err := k.r.Stats(k.ctx)
			require.NoError(t, err)
			require.Equal(t, queue.Stats{Due: 1}, st, "both entries acknowledged and deleted; the retry due")
			in, err := k.r.Scheduled(k.ctx, []job.Occurrence{done, failed, retry.Occurrence})
			require.NoError(t, err)
			require.Equal(t, []bool{false, false, true}, in)
			n, err := k.rdb.ZCard(k.ctx, q.Keys().Leases()).Result()
			require.NoError(t, err)
			require.Zero(t, n)
		})
	})
}

func TestScheduledCountsLeases(t *testing.T) {
	t.Parallel()
	onBothLeases(t, 1, func(t *testing.T, k *leaseKit) {
		occs := series(3)
		a, b, c := occs[0], occs[1], occs[2]
		require.Equal(t, queue.StartRun, k.start1(t, base, startOf(a, job.OverlapBufferOne, "w1", base)))
		require.Equal(t, queue.StartWait, k.start1(t, base, startOf(b, job.OverlapBufferOne, "w1", base)))
		in, err := k.r.Scheduled(k.ctx, []job.Occurrence{a, b, c, a.Next()})
		require.NoError(t, err)
		require.Equal(t, []bool{true, false, false, false}, in, "leased, in neither the due set nor a held set")
		k.end(t, base, a)
		in, err = k.r.Scheduled(k.ctx, []job.Occurrence{a})
		require.NoError(t, err)
		require.Equal(t, []bool{false}, in, "once ended")
	})
}

func TestLeased(t *testing.T) {
	t.Parallel()

	t.Run("ListsByEndOfLeaseWithinTheBoundAndLimit", func(t *testing.T) {
		t.Parallel()
		onBothLeases(t, 1, func(t *testing.T, k *leaseKit) {
			// Five attempts whose leases end a minute apart, started out of order.
			byEnd := make([]queue.Lease, 5)
			for _, i := range []int{3, 1, 4, 0, 2} {
				at := base.Add(time.Duration(i) * time.Minute)
				s := startOf(occ(base, 0), allowed, "w1", at)
				require.Equal(t, queue.StartRun, k.start1(t, at, s))
				byEnd[i] = s.Lease
			}
			end := func(i int) time.Time { return byEnd[i].Until }
			for _, c := range []struct {
				name  string
				until time.Time
				limit int
				want  []queue.Lease
			}{
				{"All", time.Time{}, 10, byEnd},
				{"TheFirstByLimit", time.Time{}, 2, byEnd[:2]},
				{"EndingBeforeTheBound", end(2), 10, byEnd[:2]},
				{"JustAfterTheBound", end(2).Add(time.Millisecond), 10, byEnd[:3]},
				{"BoundAndLimit", end(4), 3, byEnd[:3]},
				{"NoneBeforeTheFirst", end(0), 10, nil},
			} {
				got, err := k.r.Leased(k.ctx, c.until, c.limit)
				require.NoError(t, err, c.name)
				require.Equal(t, c.want, got, c.name)
			}
		})
	})

	t.Run("ExpiredRemovesMembersWithoutALease", func(t *testing.T) {
		t.Parallel()
		onBothLeases(t, 1, func(t *testing.T, k *leaseKit) {
			keys := k.r.Home().Keys()
			s := startOf(occ(base, 0), allowed, "w1", base)
			require.Equal(t, queue.StartRun, k.start1(t, base, s))
			gone, garbled := occ(base, 0), occ(base, 0)
			require.NoError(t, k.rdb.HSet(k.ctx, keys.Run(garbled.JobID), runField(garbled), "v9|unknown").Err())
			orphans := []string{leaseMember(gone), leaseMember(garbled), "not-a-job:1:1"}
			for _, m := range orphans {
				require.NoError(t, k.rdb.ZAdd(k.ctx, keys.Leases(), redis.Z{Score: float64(base.UnixMilli()), Member: m}).Err())
			}

			got, err := k.r.Leased(k.ctx, time.Time{}, 10)
			require.NoError(t, err)
			require.Equal(t, []queue.Lease{s.Lease}, got, "only what a run hash holds")
			n, err := k.rdb.ZCard(k.ctx, keys.Leases()).Result()
			require.NoError(t, err)
			require.EqualValues(t, 4, n, "listing removes nothing")

			got, err = k.r.Expired(k.ctx, base.Add(time.Hour), 10)
			require.NoError(t, err)
			require.Equal(t, []queue.Lease{s.Lease}, got)
			left, err := k.rdb.ZRange(k.ctx, keys.Leases(), 0, -1).Result()
			require.NoError(t, err)
			require.Equal(t, []string{leaseMember(s.Lease.Occurrence)}, left, "the orphans are gone; the lease expired stays for its reclaim")

			got, err = k.r.Expired(k.ctx, base.Add(time.Hour), 10)
			require.NoError(t, err)
			require.Equal(t, []queue.Lease{s.Lease}, got, "again, with no orphan left")
		})
	})

	t.Run("RunningOfReadsManyJobsInOneCall", func(t *testing.T) {
		t.Parallel()
		onBothLeases(t, 1, func(t *testing.T, k *leaseKit) {
			two, one, none := series(2), occ(base, 0), occ(base, 0)
			starts := []queue.Start{startOf(two[0], allowed, "w1", base), startOf(two[1], allowed, "w2", base), startOf(one, allowed, "w1", base)}
			require.Equal(t, []int{queue.StartRun, queue.StartRun, queue.StartRun}, k.start(t, base, starts...))
			_, err := k.r.Fence(k.ctx, none.JobID, 1, base) // a run hash without a lease
			require.NoError(t, err)

			got, err := k.r.RunningOf(k.ctx, []uuid.UUID{two[0].JobID, one.JobID, none.JobID, job.NewID()})
			require.NoError(t, err)
			require.Len(t, got, 2, "only jobs with attempts running")
			require.Equal(t, []queue.Lease{starts[0].Lease, starts[1].Lease}, byOccurrence(got[two[0].JobID]))
			require.Equal(t, []queue.Lease{starts[2].Lease}, got[one.JobID])

			got, err = k.r.RunningOf(k.ctx, nil)
			require.NoError(t, err)
			require.Empty(t, got)
		})
	})
}

func TestLeasesAcrossShards(t *testing.T) {
	t.Parallel()

	t.Run("StartsFencesAndSettlesInEachJobsShard", func(t *testing.T) {
		t.Parallel()
		onBothLeases(t, 4, func(t *testing.T, k *leaseKit) {
			byShard := map[int][]queue.Start{}
			var ids []uuid.UUID
			for range 16 {
				o := occ(base, 0)
				ids = append(ids, o.JobID)
				i := k.r.Of(o.JobID).Keys().Shard
				byShard[i] = append(byShard[i], startOf(o, job.OverlapSkip, "w1", base))
			}
			require.Greater(t, len(byShard), 1, "16 jobs spread over the shards")
			var all []job.Occurrence
			for i, starts := range byShard {
				got, err := k.r.Shard(i).Start(k.ctx, starts, base, waitKept)
				require.NoError(t, err)
				require.Equal(t, slices.Repeat([]int{queue.StartRun}, len(starts)), got)
				for _, s := range starts {
					o := s.Lease.Occurrence
					all = append(all, o)
					require.Equal(t, []queue.Lease{s.Lease}, k.running(t, o.JobID))
					for j, q := range k.r.Shards() {
						_, err := k.rdb.ZScore(k.ctx, q.Keys().Leases(), leaseMember(o)).Result()
						require.Equal(t, i == j, err == nil, "leased in its own shard only")
					}
				}
			}
			running, err := k.r.RunningOf(k.ctx, ids)
			require.NoError(t, err)
			require.Len(t, running, 16)
			leased, err := k.r.Leased(k.ctx, time.Time{}, 100)
			require.NoError(t, err)
			require.Len(t, leased, 16, "every shard listed")
			in, err := k.r.Scheduled(k.ctx, all)
			require.NoError(t, err)
			require.Equal(t, slices.Repeat([]bool{true}, 16), in, "leased in their own shards")

			last := k.r.Shard(3).Keys().Leases()
			orphan := leaseMember(occ(base, 0))
			require.NoError(t, k.rdb.ZAdd(k.ctx, last, redis.Z{Score: float64(base.UnixMilli()), Member: orphan}).Err())
			expired, err := k.r.Expired(k.ctx, time.Time{}, 100)
			require.NoError(t, err)
			require.Len(t, expired, 16)
			require.ErrorIs(t, k.rdb.ZScore(k.ctx, last, orphan).Err(), redis.Nil, "an orphan of any shard goes")

			fenced := all[0]
			ls, err := k.r.Fence(k.ctx, fenced.JobID, fenced.Generation+1, base)
			require.NoError(t, err)
			require.Len(t, ls, 1)
			require.NoError(t, k.rdb.HGet(k.ctx, k.r.Of(fenced.JobID).Keys().Run(fenced.JobID), "fence").Err(), "in its shard's run hash")

			k.end(t, base, all...)
			running, err = k.r.RunningOf(k.ctx, ids)
			require.NoError(t, err)
			require.Empty(t, running)
			in, err = k.r.Scheduled(k.ctx, all)
			require.NoError(t, err)
			require.Equal(t, make([]bool, 16), in)
			for _, q := range k.r.Shards() {
				n, err := k.rdb.ZCard(k.ctx, q.Keys().Leases()).Result()
				require.NoError(t, err)
				require.Zero(t, n, "shard %d", q.Keys().Shard)
			}
		})
	})

	t.Run("LeasedListsTheFirstToEndOfAllShards", func(t *testing.T) {
		t.Parallel()
		onBothLeases(t, 4, func(t *testing.T, k *leaseKit) {
			var byEnd []queue.Lease
			for i := range 12 {
				at := base.Add(time.Duration(i) * time.Second)
				s := startOf(occ(base, 0), allowed, "w1", at)
				require.Equal(t, queue.StartRun, k.start1(t, at, s))
				byEnd = append(byEnd, s.Lease)
			}
			got, err := k.r.Leased(k.ctx, time.Time{}, 100)
			require.NoError(t, err)
			require.Equal(t, leaseMembers(byEnd), leaseMembers(got), "ordered by the end of their leases")
			got, err = k.r.Leased(k.ctx, time.Time{}, 3)
			require.NoError(t, err)
			require.Equal(t, leaseMembers(byEnd[:3]), leaseMembers(got), "the limit counts over all shards")
			got, err = k.r.Expired(k.ctx, byEnd[5].Until, 3)
			require.NoError(t, err)
			require.Equal(t, leaseMembers(byEnd[:3]), leaseMembers(got), "and so do Expired's")
		})
	})
}

package queue_test

import (
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/tockhq/tock/pkg/job"
	"github.com/tockhq/tock/pkg/queue"
)

var (
	ownerA = uuid.MustParse("01900000-0000-7000-8000-00000000000a")
	ownerB = uuid.MustParse("01900000-0000-7000-8000-00000000000b")
)

// routed is a first attempt of a fresh job of owner calling target, due at at.
func routed(owner uuid.UUID, target string, at time.Time) job.Occurrence {
	o := occ(at, 0)
	o.Owner, o.Target = owner, target
	return o
}

// routedRun is n of owner's occurrences routed to target, due one
// millisecond apart from ago before base on.
func routedRun(owner uuid.UUID, target string, n int, ago time.Duration) []job.Occurrence {
	occs := make([]job.Occurrence, n)
	for i := range occs {
		occs[i] = routed(owner, target, base.Add(-ago+time.Duration(i)*time.Millisecond))
	}
	return occs
}

// ownersOf lists the owners of the stream's entries, in stream order.
func (b *bundle) ownersOf(t *testing.T) []uuid.UUID {
	t.Helper()
	var out []uuid.UUID
	for _, o := range b.streamOccurrences(t) {
		out = append(out, o.Owner)
	}
	return out
}

func (b *bundle) inflight(t *testing.T, lane string) int {
	t.Helper()
	n, err := b.rdb.HGet(b.ctx, b.keys.Inflight(), lane).Int()
	if err != nil {
		return 0
	}
	return n
}

func count(owners []uuid.UUID, owner uuid.UUID) int {
	n := 0
	for _, o := range owners {
		if o == owner {
			n++
		}
	}
	return n
}

func TestFairDispatch(t *testing.T) {
	t.Parallel()
	laneA, laneB := queue.OwnerLane(job.OwnerKey(ownerA)), queue.OwnerLane(job.OwnerKey(ownerB))

	t.Run("HoldsAnOwnerAtItsCapAndPublishesOthersAtOnce", func(t *testing.T) {
		t.Parallel()
		onBothRedis(t, func(t *testing.T, b *bundle) {
			occs := routedRun(ownerA, "0000000a", 5, 10*time.Millisecond)
			occs = append(occs, routed(ownerB, "0000000b", base))
			b.enqueue(t, occs...)
			p, err := b.q.Publish(b.ctx, 100, base, queue.Caps{Owner: 2, Host: 100})
			require.NoError(t, err)
			require.Equal(t, 6, p.Moved)
			require.Equal(t, 3, p.Sent)
			require.Equal(t, 3, p.Held)
			owners := b.ownersOf(t)
			require.Equal(t, 2, count(owners, ownerA), "A at its cap")
			require.Equal(t, 1, count(owners, ownerB), "B goes straight through")
			require.Equal(t, 2, b.inflight(t, laneA))
			held, err := b.rdb.ZRange(b.ctx, b.keys.Held(laneA), 0, -1).Result()
			require.NoError(t, err)
			require.Equal(t, memberOf(occs[2:5]...), held, "the newest three are held, oldest first")
			st, err := b.q.Stats(b.ctx)
			require.NoError(t, err)
			require.Equal(t, int64(3), st.Held)
		})
	})

	t.Run("ABackfillsOccurrencesTakeTheirOwnersLanes", func(t *testing.T) {
		t.Parallel()
		onBothRedis(t, func(t *testing.T, b *bundle) {
			// A backfill's members carry a ninth part: they are held at
			// their owner's cap like any other, with or without a flow key.
			occs := routedRun(ownerA, "0000000a", 4, 10*time.Millisecond)
			for i := range occs {
				occs[i].Backfill = uuid.MustParse("01900000-0000-7000-8000-0000000000bf")
			}
			occs[0] = occs[0].Through("k")
			b.setFlow(t, queue.FlowLimits{Lane: occs[0].Flow, Concurrency: 1})
			b.enqueue(t, append(occs, routed(ownerB, "0000000b", base))...)
			p, err := b.q.Publish(b.ctx, 100, base, queue.Caps{Owner: 2, Host: 100})
			require.NoError(t, err)
			require.Equal(t, 3, p.Sent)
			require.Equal(t, 2, p.Held)
			require.Equal(t, 2, b.inflight(t, laneA))
			var backfilled int
			for _, o := range b.streamOccurrences(t) {
				if o.Backfill != uuid.Nil {
					backfilled++
				}
			}
			require.Equal(t, 2, backfilled, "A's first two, their backfill kept")
			require.Equal(t, queue.FlowState{InFlight: 1}, b.flowState(t, occs[0].Flow), "the flow lane read from a backfill's member")
		})
	})

	t.Run("MarksTheEntriesThatTakeALanesLastPlace", func(t *testing.T) {
		t.Parallel()
		onBothRedis(t, func(t *testing.T, b *bundle) {
			require.NoError(t, b.q.EnsureGroup(b.ctx))
			// Owners may have 2 in flight, hosts 3. A's second takes A's
			// last place, B's one the last place of the host it shares with
			// A; C has room to spare. Only an entry whose end someone may
			// wait for is marked for an early release.
			ownerC := uuid.MustParse("01900000-0000-7000-8000-00000000000c")
			occs := routedRun(ownerA, "0000000a", 3, 10*time.Millisecond)
			shared := routed(ownerB, "0000000a", base)
			spare := routed(ownerC, "0000000c", base)
			b.enqueue(t, append(occs, shared, spare)...)
			_, err := b.q.Publish(b.ctx, 100, base, queue.Caps{Owner: 2, Host: 3})
			require.NoError(t, err)
			msgs, err := b.q.Read(b.ctx, "w1", 10, noBlock)
			require.NoError(t, err)
			capped, ids := map[uuid.UUID]bool{}, map[uuid.UUID]string{}
			for _, m := range msgs {
				capped[m.Occurrence.JobID], ids[m.Occurrence.JobID] = m.Capped, m.ID
			}
			require.Equal(t, map[uuid.UUID]bool{occs[0].JobID: false, occs[1].JobID: true,
				shared.JobID: true, spare.JobID: false}, capped)

			// Settled, A's place goes to A's held one, which takes it last.
			require.NoError(t, b.q.Settle(b.ctx, []string{ids[occs[1].JobID]}, nil))
			next, err := b.q.Read(b.ctx, "w1", 10, noBlock)
			require.NoError(t, err)
			require.Len(t, next, 1)
			require.Equal(t, occs[2].JobID, next[0].Occurrence.JobID)
			require.True(t, next[0].Capped)
		})
	})

	t.Run("UnderABacklogTheHigherPriorityComesOutFirst", func(t *testing.T) {
		t.Parallel()
		onBothRedis(t, func(t *testing.T, b *bundle) {
			require.NoError(t, b.q.EnsureGroup(b.ctx))
			// A's cap is 2: two run, the others wait. Ones of higher
			// priority due later come out first (MaxPriority ranks as
			// 1023, still above 10), MinPriority last though due first.
			occs := routedRun(ownerA, "0000000a", 5, 100*time.Millisecond)
			high := routed(ownerA, "0000000a", base.Add(-20*time.Millisecond))
			high.Priority = 10
			highest := routed(ownerA, "0000000a", base.Add(-10*time.Millisecond))
			highest.Priority = job.MaxPriority
			low := routed(ownerA, "0000000a", base.Add(-200*time.Millisecond))
			low.Priority = job.MinPriority
			b.enqueue(t, occs...)
			p, err := b.q.Publish(b.ctx, 100, base.Add(-30*time.Millisecond), queue.Caps{Owner: 2, Host: 100})
			require.NoError(t, err)
			require.Equal(t, 2, p.Sent)
			b.enqueue(t, high, highest, low)
			_, err = b.q.Publish(b.ctx, 100, base, queue.Caps{Owner: 2, Host: 100})
			require.NoError(t, err)
			held, err := b.rdb.ZRange(b.ctx, b.keys.Held(laneA), 0, -1).Result()
			require.NoError(t, err)
			require.Equal(t, memberOf(highest, high, occs[2], occs[3], occs[4], low), held)

			// Each settle frees one place, which the best held member takes.
			var got []job.Occurrence
			for range 8 {
				msgs, err := b.q.Read(b.ctx, "w1", 10, noBlock)
				require.NoError(t, err)
				for _, m := range msgs {
					got = append(got, m.Occurrence)
					require.Equal(t, m.Occurrence.ScheduledFor, m.DueAt, "the due time comes back out of the held score")
					require.NoError(t, b.q.Settle(b.ctx, []string{m.ID}, nil))
				}
			}
			want := []job.Occurrence{occs[0], occs[1], highest, high, occs[2], occs[3], occs[4], low}
			require.Equal(t, memberOf(want...), memberOf(got...))
		})
	})

	t.Run("ABatchOfReleasesHandsEachPlaceToTheNextHeldInOrder", func(t *testing.T) {
		t.Parallel()
		onBothServers(t, func(t *testing.T, rdb redis.UniversalClient, prefix string) {
			ring := queue.New(rdb, prefix, 1)
			q := ring.Home()
			require.NoError(t, ring.EnsureGroup(t.Context()))
			// A's cap is 4 and 40 are due: 4 run, 36 wait, among them two
			// of higher priority due last. Every round the workers release
			// what they read in one call (a burst's batch), and the held
			// set is read a few members at a time, not once per place.
			occs := routedRun(ownerA, "0000000a", 40, 100*time.Millisecond)
			occs[38].Priority, occs[39].Priority = 5, 7
			enqueueAll(t, ring, occs)
			p, err := q.Publish(t.Context(), 100, base, queue.Caps{Owner: 4, Host: 100})
			require.NoError(t, err)
			require.Equal(t, 4, p.Sent)
			require.Equal(t, 36, p.Held)
			var got []job.Occurrence
			for round := 0; len(got) < 40; round++ {
				require.Less(t, round, 20, "every held member comes out")
				msgs, err := q.Read(t.Context(), "w1", 100, noBlock)
				require.NoError(t, err)
				require.LessOrEqual(t, len(msgs), 4, "never past the cap")
				ids := make([]string, len(msgs))
				for i, m := range msgs {
					got = append(got, m.Occurrence)
					require.Equal(t, m.Occurrence.ScheduledFor, m.DueAt)
					ids[i] = m.ID
				}
				require.NoError(t, ring.Release(t.Context(), map[int][]string{0: ids}))
				require.NoError(t, ring.Settle(t.Context(), map[int]queue.Settlement{0: {IDs: ids}}))
			}
			want := append(append([]job.Occurrence{}, occs[:4]...), occs[39], occs[38])
			want = append(want, occs[4:38]...)
			require.Equal(t, memberOf(want...), memberOf(got...), "the best held first: priority, then due")
			lanes, err := rdb.SMembers(t.Context(), q.Keys().HeldLanes()).Result()
			require.NoError(t, err)
			require.Empty(t, lanes, "the lane left the held lanes set as its held set emptied")
			left, err := rdb.HLen(t.Context(), q.Keys().Inflight()).Result()
			require.NoError(t, err)
			require.Zero(t, left, "every place given back once")
		})
	})

	t.Run("AHostLaneStaysInDueOrder", func(t *testing.T) {
		t.Parallel()
		onBothRedis(t, func(t *testing.T, b *bundle) {
			require.NoError(t, b.q.EnsureGroup(b.ctx))
			// Host cap 1: A's job runs, B's and then A's of priority 10
			// wait for the host, which both owners share: B's was due first.
			first := routed(ownerA, "shared", base.Add(-30*time.Millisecond))
			bJob := routed(ownerB, "shared", base.Add(-20*time.Millisecond))
			high := routed(ownerA, "shared", base.Add(-10*time.Millisecond))
			high.Priority = 10
			b.enqueue(t, first, bJob, high)
			p, err := b.q.Publish(b.ctx, 100, base, queue.Caps{Owner: 100, Host: 1})
			require.NoError(t, err)
			require.Equal(t, 1, p.Sent)
			held, err := b.rdb.ZRange(b.ctx, b.keys.Held(queue.TargetLane("shared")), 0, -1).Result()
			require.NoError(t, err)
			require.Equal(t, memberOf(bJob, high), held, "one owner's priority never passes another's job")
		})
	})

	t.Run("TheRecountAdoptsAnOlderReleasesHeldSets", func(t *testing.T) {
		t.Parallel()
		onBothServers(t, func(t *testing.T, rdb redis.UniversalClient, prefix string) {
			ring := queue.New(rdb, prefix, 1)
			q, keys := ring.Home(), ring.Home().Keys()
			ctx := t.Context()
			require.NoError(t, ring.EnsureGroup(ctx))
			occs := routedRun(ownerA, "0000000a", 3, 10*time.Millisecond)
			enqueueAll(t, ring, occs[:1])
			_, err := q.Publish(ctx, 100, base, queue.Caps{Owner: 1, Host: 100})
			require.NoError(t, err)
			// An older release held two, scored by due time alone.
			for _, o := range occs[1:] {
				require.NoError(t, rdb.ZAdd(ctx, keys.LegacyHeldPrefix()+laneA, redis.Z{Score: float64(o.ScheduledFor.UnixMilli()), Member: o.Member()}).Err())
			}
			require.NoError(t, rdb.SAdd(ctx, keys.HeldLanes(), laneA).Err())
			require.NoError(t, ring.Recount(ctx))
			n, err := rdb.Exists(ctx, keys.LegacyHeldPrefix()+laneA).Result()
			require.NoError(t, err)
			require.Zero(t, n, "the old set is emptied")
			held, err := rdb.ZRange(ctx, keys.Held(laneA), 0, -1).Result()
			require.NoError(t, err)
			require.Equal(t, memberOf(occs[1:]...), held, "and held in this release's")
			msgs, err := q.Read(ctx, "w1", 10, noBlock)
			require.NoError(t, err)
			require.Len(t, msgs, 1)
			require.NoError(t, q.Settle(ctx, []string{msgs[0].ID}, nil))
			next, err := q.Read(ctx, "w1", 10, noBlock)
			require.NoError(t, err)
			require.Len(t, next, 1)
			require.Equal(t, occs[1], next[0].Occurrence)
			require.Equal(t, occs[1].ScheduledFor, next[0].DueAt, "its due time intact")
		})
	})

	t.Run("AnOwnerAloneBorrowsIdleSlots", func(t *testing.T) {
		t.Parallel()
		onBothRedis(t, func(t *testing.T, b *bundle) {
			require.NoError(t, b.q.EnsureGroup(b.ctx))
			occs := routedRun(ownerA, "0000000a", 8, 10*time.Millisecond)
			b.enqueue(t, occs...)
			// Cap 2, but nobody else waits: A may use slots up to the
			// borrow limit of 5 routed entries in flight.
			p, err := b.q.Publish(b.ctx, 100, base, queue.Caps{Owner: 2, Host: 100, Borrow: 5})
			require.NoError(t, err)
			require.Equal(t, 5, p.Sent)
			require.Equal(t, 3, p.Held)
			require.Equal(t, 5, b.inflight(t, laneA))
			require.Equal(t, 5, b.inflight(t, "*"))
			held, err := b.rdb.ZRange(b.ctx, b.keys.Held(laneA), 0, -1).Result()
			require.NoError(t, err)
			require.Equal(t, memberOf(occs[5:]...), held, "the newest wait, oldest first")

			// One ends: the oldest held one takes its place, past the cap.
			msgs, err := b.q.Read(b.ctx, "w1", 10, noBlock)
			require.NoError(t, err)
			require.Len(t, msgs, 5)
			require.NoError(t, b.q.Settle(b.ctx, []string{msgs[0].ID}, nil))
			next, err := b.q.Read(b.ctx, "w1", 10, noBlock)
			require.NoError(t, err)
			require.Len(t, next, 1)
			require.Equal(t, occs[5], next[0].Occurrence)
			require.Equal(t, 5, b.inflight(t, "*"))
		})
	})

	t.Run("TheLastSlotsStayForNewcomers", func(t *testing.T) {
		t.Parallel()
		onBothRedis(t, func(t *testing.T, b *bundle) {
			require.NoError(t, b.q.EnsureGroup(b.ctx))
			occs := routedRun(ownerA, "0000000a", 6, 10*time.Millisecond)
			b.enqueue(t, occs...)
			// Six slots, a cap of 2, a borrow limit of 4: A alone has 4.
			p, err := b.q.Publish(b.ctx, 100, base, queue.Caps{Owner: 2, Host: 100, Borrow: 4})
			require.NoError(t, err)
			require.Equal(t, 4, p.Sent)
			require.Equal(t, 2, p.Held)
			// B comes due: under its own cap, it goes through at once.
			b.enqueue(t, routed(ownerB, "0000000b", base), routed(ownerB, "0000000b", base), routed(ownerB, "0000000b", base))
			p, err = b.q.Publish(b.ctx, 100, base, queue.Caps{})
			require.NoError(t, err)
			require.Equal(t, 2, p.Sent, "B's cap's worth")
			require.Equal(t, 1, p.Held, "B borrows nothing past the limit either")
			require.Equal(t, 4, b.inflight(t, laneA))
			require.Equal(t, 2, b.inflight(t, laneB))
		})
	})

	t.Run("BorrowedEntriesDoNotQueueAheadOfOthers", func(t *testing.T) {
		t.Parallel()
		onBothRedis(t, func(t *testing.T, b *bundle) {
			require.NoError(t, b.q.EnsureGroup(b.ctx))
			occs := routedRun(ownerA, "", 300, 300*time.Millisecond)
			b.enqueue(t, occs...)
			// The workers read nothing: A borrows only while fewer than a
			// read's worth of entries wait unread in the stream.
			p, err := b.q.Publish(b.ctx, 1000, base, queue.Caps{Owner: 1, Host: 1000, Borrow: 1000})
			require.NoError(t, err)
			require.Equal(t, 256, p.Sent)
			require.Equal(t, 44, p.Held)
			// The workers take 100: as many more come out at the next
			// publish, oldest first.
			msgs, err := b.q.Read(b.ctx, "w1", 100, noBlock)
			require.NoError(t, err)
			require.Len(t, msgs, 100)
			p, err = b.q.Publish(b.ctx, 1000, base, queue.Caps{})
			require.NoError(t, err)
			require.Equal(t, 44, p.Sent, "the held ones, while under a read's worth unread")
			require.Equal(t, 300, b.inflight(t, "*"))
			b.enqueue(t, routed(ownerB, "", base))
			p, err = b.q.Publish(b.ctx, 1000, base, queue.Caps{})
			require.NoError(t, err)
			require.Equal(t, 1, p.Sent, "B is under its cap, whatever A borrowed")
		})
	})

	t.Run("ABurstUnderItsCapDoesNotQueueAheadOfANewcomer", func(t *testing.T) {
		t.Parallel()
		onBothRedis(t, func(t *testing.T, b *bundle) {
			require.NoError(t, b.q.EnsureGroup(b.ctx))
			occs := routedRun(ownerA, "", 1000, 1000*time.Millisecond)
			b.enqueue(t, occs...)
			// A's cap is far away, but once a read's worth of A waits unread,
			// the rest of A waits in its held set, not in the stream.
			p, err := b.q.Publish(b.ctx, 1000, base, queue.Caps{Owner: 5000, Host: 5000})
			require.NoError(t, err)
			require.Equal(t, 256, p.Sent)
			require.Equal(t, 744, p.Held)
			// The workers take 100 of A's; 156 still wait unread.
			msgs, err := b.q.Read(b.ctx, "w1", 100, noBlock)
			require.NoError(t, err)
			require.Len(t, msgs, 100)
			// B comes: A's unread entries go back to A's held set, and B's
			// two are next in the stream. What the workers have read stays.
			b.enqueue(t, routed(ownerB, "", base), routed(ownerB, "", base))
			_, err = b.q.Publish(b.ctx, 1000, base, queue.Caps{})
			require.NoError(t, err)
			require.Equal(t, 2, b.inflight(t, "o:"+job.OwnerKey(ownerB)), "B goes to the stream at once")
			require.Equal(t, 100, b.inflight(t, laneA), "A's read entries keep their places")
			msgs, err = b.q.Read(b.ctx, "w1", 256, noBlock)
			require.NoError(t, err)
			require.Len(t, msgs, 2)
			require.Equal(t, ownerB, msgs[0].Occurrence.Owner)
			require.Equal(t, ownerB, msgs[1].Occurrence.Owner)
			// A refills the stream behind B, from its oldest held member on:
			// the 101st it published first.
			p, err = b.q.Publish(b.ctx, 1000, base, queue.Caps{})
			require.NoError(t, err)
			require.Equal(t, 256, p.Sent, "A again up to a read's worth unread")
			msgs, err = b.q.Read(b.ctx, "w1", 1, noBlock)
			require.NoError(t, err)
			require.Len(t, msgs, 1)
			require.Equal(t, ownerA, msgs[0].Occurrence.Owner)
			require.Equal(t, base.Add(-900*time.Millisecond).UnixMilli(), msgs[0].DueAt.UnixMilli())
			var ids []string
			all, err := b.rdb.XRange(b.ctx, b.keys.Ready(), "-", "+").Result()
			require.NoError(t, err)
			for _, e := range all {
				ids = append(ids, e.ID)
			}
			require.Len(t, ids, 100+2+256, "A's read 100, B's 2 and A's 256 in the stream, no copy")
		})
	})

	t.Run("ABacklogInTheDueSetDoesNotDelayWhatHasJustComeDue", func(t *testing.T) {
		t.Parallel()
		onBothRedis(t, func(t *testing.T, b *bundle) {
			require.NoError(t, b.q.EnsureGroup(b.ctx))
			// A's burst came due 2 s ago and is still being sorted out of
			// the due set, 100 members a call; B's two came due since.
			var occs []job.Occurrence
			for range 1000 {
				occs = append(occs, routed(ownerA, "", base.Add(-2*time.Second)))
			}
			b1, b2 := routed(ownerB, "", base.Add(-300*time.Millisecond)), routed(ownerB, "", base)
			b.enqueue(t, append(occs, b2, b1)...)
			p, err := b.q.Publish(b.ctx, 100, base, queue.Caps{Owner: 5000, Host: 5000})
			require.NoError(t, err)
			require.Equal(t, 100, p.Moved, "a call takes no more than its limit")
			require.Equal(t, 2, b.inflight(t, "o:"+job.OwnerKey(ownerB)), "B's are published in the first call")
			got := b.streamOccurrences(t)
			require.Len(t, got, 100)
			require.Equal(t, []job.Occurrence{b1, b2}, got[:2], "oldest of the fresh first, ahead of the backlog")
			require.Len(t, b.dueMembers(t), 1000-98, "the backlog goes on from its head")
		})
	})

	t.Run("WithoutABacklogMembersGoInDueOrder", func(t *testing.T) {
		t.Parallel()
		onBothRedis(t, func(t *testing.T, b *bundle) {
			require.NoError(t, b.q.EnsureGroup(b.ctx))
			var occs []job.Occurrence
			for i := range 100 {
				occs = append(occs, routed(ownerA, "", base.Add(-time.Duration(50-i/2)*time.Millisecond)))
			}
			late := routed(ownerB, "", base)
			b.enqueue(t, append(occs, late)...)
			_, err := b.q.Publish(b.ctx, 100, base, queue.Caps{Owner: 5000, Host: 5000})
			require.NoError(t, err)
			got := b.streamOccurrences(t)
			require.Len(t, got, 100)
			require.NotContains(t, got, late, "due last, and no backlog: it waits for the next call")
		})
	})

	t.Run("TheUnreadLimitIsWhatTheSchedulerRecords", func(t *testing.T) {
		t.Parallel()
		onBothRedis(t, func(t *testing.T, b *bundle) {
			require.NoError(t, b.q.EnsureGroup(b.ctx))
			occs := routedRun(ownerA, "", 1000, 1000*time.Millisecond)
			b.enqueue(t, occs...)
			// Three workers: a read of each may wait unread.
			p, err := b.q.Publish(b.ctx, 1000, base, queue.Caps{Owner: 5000, Host: 5000, Unread: 3 * queue.ReadSize})
			require.NoError(t, err)
			require.Equal(t, 3*queue.ReadSize, p.Sent)
		})
	})

	t.Run("LendingOffHoldsEveryLaneToItsCap", func(t *testing.T) {
		t.Parallel()
		onBothRedis(t, func(t *testing.T, b *bundle) {
			require.NoError(t, b.q.EnsureGroup(b.ctx))
			b.enqueue(t, routed(ownerA, "", base.Add(-2*time.Millisecond)), routed(ownerA, "", base.Add(-time.Millisecond)))
			_, err := b.q.Publish(b.ctx, 100, base, queue.Caps{Owner: 1, Host: 100, Borrow: 100})
			require.NoError(t, err)
			require.Equal(t, 2, b.inflight(t, laneA), "lent")
			b.enqueue(t, routed(ownerA, "", base))
			p, err := b.q.Publish(b.ctx, 100, base, queue.Caps{Borrow: -1})
			require.NoError(t, err)
			require.Zero(t, p.Sent)
			require.Equal(t, 1, p.Held)
		})
	})

	t.Run("SettlingReleasesTheOldestHeld", func(t *testing.T) {
		t.Parallel()
		onBothRedis(t, func(t *testing.T, b *bundle) {
			require.NoError(t, b.q.EnsureGroup(b.ctx))
			occs := []job.Occurrence{
				routed(ownerA, "", base.Add(-3*time.Millisecond)),
				routed(ownerA, "", base.Add(-2*time.Millisecond)),
				routed(ownerA, "", base.Add(-1*time.Millisecond)),
			}
			b.enqueue(t, occs...)
			_, err := b.q.Publish(b.ctx, 100, base, queue.Caps{Owner: 1, Host: 100})
			require.NoError(t, err)
			msgs, err := b.q.Read(b.ctx, "w1", 10, noBlock)
			require.NoError(t, err)
			require.Len(t, msgs, 1)
			require.Equal(t, occs[0], msgs[0].Occurrence)

			// A retry of the settled attempt goes to the due set; the held
			// next one takes the freed place at once, without a publish.
			retry := queue.Entry{Occurrence: msgs[0].Occurrence.Next(), DueAt: base.Add(time.Hour)}
			require.NoError(t, b.q.Settle(b.ctx, []string{msgs[0].ID}, []queue.Entry{retry}))
			msgs, err = b.q.Read(b.ctx, "w1", 10, noBlock)
			require.NoError(t, err)
			require.Len(t, msgs, 1)
			require.Equal(t, occs[1], msgs[0].Occurrence)
			require.Equal(t, 1, b.inflight(t, laneA))
			require.Contains(t, b.dueMembers(t), retry.Occurrence.Member())

			require.NoError(t, b.q.Settle(b.ctx, []string{msgs[0].ID}, nil))
			require.NoError(t, b.q.Settle(b.ctx, nil, nil))
			msgs, err = b.q.Read(b.ctx, "w1", 10, noBlock)
			require.NoError(t, err)
			require.Len(t, msgs, 1)
			require.Equal(t, occs[2], msgs[0].Occurrence)
			require.NoError(t, b.q.Settle(b.ctx, []string{msgs[0].ID}, nil))
			require.Zero(t, b.inflight(t, laneA), "nothing left in flight")
			lanes, err := b.rdb.SMembers(b.ctx, b.keys.HeldLanes()).Result()
			require.NoError(t, err)
			require.Empty(t, lanes, "no lane is left with held members")
		})
	})

	t.Run("HoldsAHostAtItsCapWhateverTheOwner", func(t *testing.T) {
		t.Parallel()
		onBothRedis(t, func(t *testing.T, b *bundle) {
			dead := "0000dead"
			b.enqueue(t, routed(ownerA, dead, base), routed(ownerB, dead, base), routed(ownerB, dead, base),
				routed(ownerB, "00000f1e", base))
			p, err := b.q.Publish(b.ctx, 100, base, queue.Caps{Owner: 10, Host: 2})
			require.NoError(t, err)
			require.Equal(t, 3, p.Sent)
			require.Equal(t, 1, p.Held)
			require.Equal(t, 2, b.inflight(t, queue.TargetLane(dead)))
			n, err := b.rdb.ZCard(b.ctx, b.keys.Held(queue.TargetLane(dead))).Result()
			require.NoError(t, err)
			require.Equal(t, int64(1), n, "the third call to the dead host waits for one to end")
		})
	})

	t.Run("AnOwnersOwnCapOverridesTheDefault", func(t *testing.T) {
		t.Parallel()
		onBothServers(t, func(t *testing.T, rdb redis.UniversalClient, prefix string) {
			ring := queue.New(rdb, prefix, 1)
			require.NoError(t, ring.SetOwnerCaps(t.Context(), map[uuid.UUID]int{ownerB: 4}))
			var occs []job.Occurrence
			for range 5 {
				occs = append(occs, routed(ownerA, "", base), routed(ownerB, "", base))
			}
			enqueueAll(t, ring, occs)
			p, err := ring.Home().Publish(t.Context(), 100, base, queue.Caps{Owner: 1, Host: 100})
			require.NoError(t, err)
			require.Equal(t, 5, p.Sent, "A: the default 1; B: its own 4")
			inFlight, held, err := ring.InFlight(t.Context(), ownerB)
			require.NoError(t, err)
			require.Equal(t, int64(4), inFlight)
			require.Equal(t, int64(1), held)

			// Forgetting B's cap puts B back on the default (nothing is taken
			// back from the stream; B's held one waits longer).
			require.NoError(t, ring.SetOwnerCaps(t.Context(), nil))
			caps, err := rdb.HGetAll(t.Context(), ring.Home().Keys().Caps()).Result()
			require.NoError(t, err)
			require.Equal(t, map[string]string{"*o": "1", "*h": "100"}, caps)
		})
	})

	t.Run("RaisingACapReleasesHeldMembersAtTheNextPublish", func(t *testing.T) {
		t.Parallel()
		onBothRedis(t, func(t *testing.T, b *bundle) {
			b.enqueue(t, routed(ownerA, "", base), routed(ownerA, "", base), routed(ownerA, "", base))
			_, err := b.q.Publish(b.ctx, 100, base, queue.Caps{Owner: 1, Host: 100})
			require.NoError(t, err)
			p, err := b.q.Publish(b.ctx, 100, base, queue.Caps{Owner: 3, Host: 100})
			require.NoError(t, err)
			require.Zero(t, p.Moved, "nothing left due")
			require.Equal(t, 2, p.Sent, "the held ones")
			require.Equal(t, 3, b.inflight(t, laneA))
		})
	})

	t.Run("RemoveAndScheduledSeeHeldMembers", func(t *testing.T) {
		t.Parallel()
		onBothServers(t, func(t *testing.T, rdb redis.UniversalClient, prefix string) {
			ring := queue.New(rdb, prefix, 1)
			first, second := routed(ownerA, "0000000a", base), routed(ownerA, "0000000a", base)
			enqueueAll(t, ring, []job.Occurrence{first, second})
			_, err := ring.Home().Publish(t.Context(), 100, base, queue.Caps{Owner: 1, Host: 100})
			require.NoError(t, err)
			in, err := ring.Scheduled(t.Context(), []job.Occurrence{first, second})
			require.NoError(t, err)
			require.Equal(t, 1, count2(in), "one in the stream, one held")
			require.NoError(t, ring.Remove(t.Context(), []job.Occurrence{first, second}))
			in, err = ring.Scheduled(t.Context(), []job.Occurrence{first, second})
			require.NoError(t, err)
			require.Equal(t, []bool{false, false}, in)
			st, err := ring.Stats(t.Context())
			require.NoError(t, err)
			require.Zero(t, st.Held)
		})
	})

	t.Run("SettingAsideGivesThePlaceBack", func(t *testing.T) {
		t.Parallel()
		onBothRedis(t, func(t *testing.T, b *bundle) {
			b.enqueue(t, routed(ownerA, "", base))
			msgs := b.publishAndRead(t, "w1", 1)
			require.Equal(t, 1, b.inflight(t, laneA))
			require.NoError(t, b.q.SetAside(b.ctx, msgs))
			require.Zero(t, b.inflight(t, laneA))
		})
	})

	t.Run("RecountRepairsDriftedCounts", func(t *testing.T) {
		t.Parallel()
		onBothServers(t, func(t *testing.T, rdb redis.UniversalClient, prefix string) {
			ring := queue.New(rdb, prefix, 1)
			keys := ring.Home().Keys()
			enqueueAll(t, ring, []job.Occurrence{routed(ownerA, "", base), routed(ownerA, "", base), routed(ownerB, "", base)})
			_, err := ring.Home().Publish(t.Context(), 100, base, queue.Caps{Owner: 1, Host: 100})
			require.NoError(t, err)
			// Drift: A's entry vanished without its count going down, and B
			// counts one too many.
			xs, err := rdb.XRange(t.Context(), keys.Ready(), "-", "+").Result()
			require.NoError(t, err)
			for _, x := range xs {
				if o, _ := job.ParseMember(x.Values["m"].(string)); o.Owner == ownerA {
					require.NoError(t, rdb.XDel(t.Context(), keys.Ready(), x.ID).Err())
				}
			}
			require.NoError(t, rdb.HIncrBy(t.Context(), keys.Inflight(), laneB, 1).Err())
			require.NoError(t, ring.Recount(t.Context()))
			got, err := rdb.HGetAll(t.Context(), keys.Inflight()).Result()
			require.NoError(t, err)
			require.Equal(t, map[string]string{laneA: "1", laneB: "1", "*": "2"}, got, "A's held one took the place")
		})
	})

	t.Run("UnroutedMembersAreNeverHeld", func(t *testing.T) {
		t.Parallel()
		onBothRedis(t, func(t *testing.T, b *bundle) {
			b.enqueue(t, occ(base, 0), occ(base, 0), occ(base, 0))
			p, err := b.q.Publish(b.ctx, 100, base, queue.Caps{Owner: 1, Host: 1})
			require.NoError(t, err)
			require.Equal(t, 3, p.Sent)
			n, err := b.rdb.HLen(b.ctx, b.keys.Inflight()).Result()
			require.NoError(t, err)
			require.Zero(t, n)
		})
	})

	t.Run("ReleasingAtTheEndOfAnAttemptFreesItsPlaceBeforeTheSettle", func(t *testing.T) {
		t.Parallel()
		onBothServers(t, func(t *testing.T, rdb redis.UniversalClient, prefix string) {
			ring := queue.New(rdb, prefix, 1)
			q := ring.Home()
			require.NoError(t, q.EnsureGroup(t.Context()))
			first, second := routed(ownerA, "0000000a", base.Add(-time.Millisecond)), routed(ownerA, "0000000a", base)
			enqueueAll(t, ring, []job.Occurrence{first, second})
			_, err := q.Publish(t.Context(), 100, base, queue.Caps{Owner: 1, Host: 100})
			require.NoError(t, err)
			msgs, err := q.Read(t.Context(), "w1", 10, noBlock)
			require.NoError(t, err)
			require.Len(t, msgs, 1)

			require.NoError(t, ring.Release(t.Context(), map[int][]string{0: {msgs[0].ID}}))
			next, err := q.Read(t.Context(), "w1", 10, noBlock)
			require.NoError(t, err)
			require.Len(t, next, 1, "the held one took the place")
			require.Equal(t, second, next[0].Occurrence)
			// A second release of the same entry (another worker ran it
			// again) and a recount before the settle count it no more.
			require.NoError(t, ring.Release(t.Context(), map[int][]string{0: {msgs[0].ID}}))
			require.NoError(t, ring.Recount(t.Context()))
			n, err := rdb.HGet(t.Context(), q.Keys().Inflight(), laneA).Int()
			require.NoError(t, err)
			require.Equal(t, 1, n, "only the second counts")

			// Settling the released entry only acknowledges it: the place it
			// gave back is not given back twice.
			require.NoError(t, ring.Settle(t.Context(), map[int]queue.Settlement{0: {IDs: []string{msgs[0].ID}}}))
			n, err = rdb.HGet(t.Context(), q.Keys().Inflight(), laneA).Int()
			require.NoError(t, err)
			require.Equal(t, 1, n, "the second is in flight")
			// Settled without a release (the release failed): settling
			// gives the place back.
			require.NoError(t, ring.Settle(t.Context(), map[int]queue.Settlement{0: {IDs: []string{next[0].ID}}}))
			left, err := rdb.HLen(t.Context(), q.Keys().Inflight()).Result()
			require.NoError(t, err)
			require.Zero(t, left)
			// A release after the settle finds nothing to give back.
			require.NoError(t, ring.Release(t.Context(), map[int][]string{0: {next[0].ID}}))
			left, err = rdb.HLen(t.Context(), q.Keys().Inflight()).Result()
			require.NoError(t, err)
			require.Zero(t, left)
			released, err := rdb.SCard(t.Context(), q.Keys().Released()).Result()
			require.NoError(t, err)
			require.Zero(t, released, "the released set is emptied by settling")
			xlen, err := rdb.XLen(t.Context(), q.Keys().Ready()).Result()
			require.NoError(t, err)
			require.Zero(t, xlen, "both settled")
		})
	})

	t.Run("PoolAddsUpLiveWorkers", func(t *testing.T) {
		t.Parallel()
		onBothRedis(t, func(t *testing.T, b *bundle) {
			require.NoError(t, b.q.WorkerBeat(b.ctx, "w1", 1024, base))
			require.NoError(t, b.q.WorkerBeat(b.ctx, "w2", 512, base.Add(-30*time.Second)))
			require.NoError(t, b.q.WorkerBeat(b.ctx, "w3", 256, base.Add(-2*time.Hour)))
			slots, workers, err := b.q.Pool(b.ctx, base, 5*time.Second)
			require.NoError(t, err)
			require.Equal(t, 1024, slots)
			require.Equal(t, 1, workers)
			slots, workers, err = b.q.Pool(b.ctx, base, time.Minute)
			require.NoError(t, err)
			require.Equal(t, 1536, slots)
			require.Equal(t, 2, workers)
		})
	})
}

func TestCapsPerShard(t *testing.T) {
	t.Parallel()
	require.Equal(t, queue.Caps{Owner: 512, Host: 1024}, queue.Caps{Owner: 512, Host: 1024}.PerShard(1))
	require.Equal(t, queue.Caps{Owner: 171, Host: 342}, queue.Caps{Owner: 512, Host: 1024}.PerShard(3))
	require.Equal(t, queue.Caps{}, queue.Caps{}.PerShard(4))
}

func enqueueAll(t *testing.T, ring *queue.Queue, occs []job.Occurrence) {
	t.Helper()
	entries := make([]queue.Entry, len(occs))
	for i, o := range occs {
		entries[i] = entry(o)
	}
	require.NoError(t, ring.Enqueue(t.Context(), entries))
}

func count2(in []bool) int {
	n := 0
	for _, b := range in {
		if b {
			n++
		}
	}
	return n
}

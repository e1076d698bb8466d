package queue

import (
	"context"
	"errors"
	"fmt"
	"math"
	neturl "net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tockhq/tock/pkg/job"
)

// Shard moves occurrences through Redis for one shard.
type Shard struct {
	rdb  redis.UniversalClient
	keys Keys
}

// NewShard returns a Shard on rdb for the shard that keys names.
func NewShard(rdb redis.UniversalClient, keys Keys) *Shard { return &Shard{rdb: rdb, keys: keys} }

// Keys returns the keys this shard works on.
func (q *Shard) Keys() Keys { return q.keys }

// Entry is an occurrence and the time it is due, as held in the due set.
type Entry struct {
	Occurrence job.Occurrence
	DueAt      time.Time
}

// AsScheduled returns entries for occs, each due at its scheduled time.
func AsScheduled(occs []job.Occurrence) []Entry {
	entries := make([]Entry, len(occs))
	for i, o := range occs {
		entries[i] = Entry{Occurrence: o, DueAt: o.ScheduledFor}
	}
	return entries
}

// DueAt returns entries for occs, all due at t.
func DueAt(occs []job.Occurrence, t time.Time) []Entry {
	entries := make([]Entry, len(occs))
	for i, o := range occs {
		entries[i] = Entry{Occurrence: o, DueAt: t}
	}
	return entries
}

// zaddChunk bounds the members of one ZADD so no command grows without limit.
const zaddChunk = 1000

// Enqueue adds entries to the due set in one pipelined round trip. Adding a
// member that is already there only sets its score, so enqueueing twice is safe.
func (q *Shard) Enqueue(ctx context.Context, entries []Entry) error {
	if len(entries) == 0 {
		return nil
	}
	pipe := q.rdb.Pipeline()
	q.zadd(ctx, pipe, entries)
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("enqueue %d occurrences: %w", len(entries), err)
	}
	return nil
}

// zadd queues ZADDs of entries to the due set on pipe, zaddChunk at a time.
func (q *Shard) zadd(ctx context.Context, pipe redis.Pipeliner, entries []Entry) {
	for start := 0; start < len(entries); start += zaddChunk {
		end := min(start+zaddChunk, len(entries))
		zs := make([]redis.Z, 0, end-start)
		for _, e := range entries[start:end] {
			zs = append(zs, redis.Z{Score: float64(e.DueAt.UnixMilli()), Member: e.Occurrence.Member()})
		}
		pipe.ZAdd(ctx, q.keys.Due(), zs...)
	}
}

// Remove takes occurrences out of the due set, so an edited or cancelled job's
// old time never fires. It is not an error if they are not there.
func (q *Shard) Remove(ctx context.Context, occs []job.Occurrence) error {
	return q.alone().Remove(ctx, occs)
}

// Scheduled reports which of occs are in the due set.
func (q *Shard) Scheduled(ctx context.Context, occs []job.Occurrence) ([]bool, error) {
	return q.alone().Scheduled(ctx, occs)
}

// alone is a queue of this one shard: the multi-shard code serves one shard too.
func (q *Shard) alone() *Queue { return &Queue{rdb: q.rdb, shards: []*Shard{q}} }

// publishScript moves due members from the due set to the ready stream, at
// most ARGV[1] per call so one call never blocks Redis for long, holding back
// those whose owner or host is at its cap (see fair.go). Members of equal
// score come out in member order, which puts higher priority first (see
// job.Occurrence.Member). Being one script, the pop is atomic: two schedulers
// never publish the same member. After popping (a member just due comes
// first: it may be another owner's, and a lane's new members go behind its
// held ones anyway), it looks at up to ARGV[5] lanes with held members and
// publishes those that now have room (a cap was raised, a count repaired,
// the workers read); settling does that too, at once, for the lanes of what
// it settles. It skips that look when a member it published made way (see
// fair.go), which would only undo it.
//
// KEYS[1..10] as lanesLua
// ARGV[1] most members to move
// ARGV[2] now in unix ms, or "" to use Redis TIME (the one clock of due-ness)
// ARGV[3] default cap per owner to record, or "" to keep the recorded one
// ARGV[4] default cap per host to record, or ""
// ARGV[5] most held lanes to look at
// ARGV[6] borrow limit to record (routed entries in flight under which a
// lane may pass its cap while no other lane waits; 0 lends nothing), or ""
// ARGV[7] unread limit to record (Caps.Unread), or ""
// ARGV[8] lead in ms: members due up to this long after now are published
// too, for the workers to start at their due time; "" or 0 for none
// Returns {popped, now_ms, next_due_ms or -1, published, held, next flow
// wake ms or -1}
var publishScript = redis.NewScript(lanesLua + strings.ReplaceAll(strings.ReplaceAll(`
local now
if ARGV[2] ~= '' then
  now = tonumber(ARGV[2])
else
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
clock = now -- the flow lanes' clock too
flowLead = tonumber(ARGV[8]) or 0
-- What is recorded already is read (the lanes need it anyway) and only
-- what changed is written.
local recorded = readDefaults()
local record = {}
for i, c in ipairs({{'*o', ARGV[3]}, {'*h', ARGV[4]}, {'*b', ARGV[6]}, {'*u', ARGV[7]}}) do
  if c[2] ~= '' and c[2] ~= recorded[i] then
    record[#record + 1] = c[1]
    record[#record + 1] = c[2]
    defaults[c[1]] = c[2]
  end
end
if #record > 0 then redis.call('HSET', KEYS[4], unpack(record)) end
local limit = tonumber(ARGV[1])
local upto = now + (tonumber(ARGV[8]) or 0)
local published, held, n = 0, 0, 0
local function placeAll(due, from, to, step)
  for i = from, to, step do
    if place(due[i], due[i + 1]) then
      published = published + 1
    else
      held = held + 1
    end
  end
end
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', upto, 'WITHSCORES', 'LIMIT', 0, limit)
prefetchMembers(due)
local take = #due / 2
-- Behind a backlog (more is due than this call takes, and the earliest of
-- it came due a while ago), the members that came due most recently go
-- first, up to a quarter of the call and oldest of them first: an owner's
-- burst still being sorted into its held set does not make another owner's
-- next job wait for the whole of it.
if take == limit and limit >= 4 and tonumber(due[2]) < now - __BACKLOGMS__ then
  local after = math.max(now - __FRESHMS__, tonumber(due[#due]))
  local fresh = redis.call('ZREVRANGEBYSCORE', KEYS[1], upto, '(' .. after, 'WITHSCORES', 'LIMIT', 0, math.floor(limit / 4))
  if #fresh > 0 then
    placeAll(fresh, #fresh - 1, 1, -2)
    local members = {}
    for i = 1, #fresh, 2 do members[#members + 1] = fresh[i] end
    redis.call('ZREM', KEYS[1], unpack(members))
    n = #members
    take = limit - n
  end
end
placeAll(due, 1, 2 * take - 1, 2)
if take > 0 then
  redis.call('ZREMRANGEBYRANK', KEYS[1], 0, take - 1)
  n = n + take
end
-- Then the held lanes, unless a newcomer just made way: what it put back
-- would only come out again at once, and the workers' releases refill it.
if not movedAside then
  local sweep = redis.call('SRANDMEMBER', KEYS[5], tonumber(ARGV[5]))
  if published < limit then published = published + sweepHeld(sweep, limit - published) end
end
-- Then the flow lanes whose rate window reopened or that were resumed: the
-- earliest wake is read once, and again only if some were due.
local wake = redis.call('ZRANGE', KEYS[10], 0, 0, 'WITHSCORES')
if #wake > 0 and tonumber(wake[2]) <= now and published < limit then
  published = published + wakeFlows(limit - published)
  wake = redis.call('ZRANGE', KEYS[10], 0, 0, 'WITHSCORES')
end
flushCounts()
local nxt = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
local next_due = -1
if #nxt > 0 then next_due = tonumber(nxt[2]) end
local next_wake = -1
if #wake > 0 then next_wake = tonumber(wake[2]) end
return {n, now, next_due, published, held, next_wake}
`, "__BACKLOGMS__", strconv.Itoa(int(backlogAfter/time.Millisecond))), "__FRESHMS__", strconv.Itoa(int(freshWindow/time.Millisecond))))

// A backlog is members due more than backlogAfter ago still in the due set;
// behind one, the members due within the last freshWindow go first, up to a
// quarter of each call.
const (
	backlogAfter = 100 * time.Millisecond
	freshWindow  = time.Second
)

// heldLanesPerCall bounds the held lanes one publish call looks at.
const heldLanesPerCall = 16

// Published is what one publish call did.
type Published struct {
	// Moved is how many due members it took from the due set: published, or
	// held back because their owner or host was at its cap.
	Moved int
	// Sent is how many members it put in the stream, held ones included;
	// Held how many due members it held back.
	Sent, Held int
	Now        time.Time // Redis's clock at the call
	Next       time.Time // due time of the earliest member left, zero if none
	// Wake is when the earliest flow lane held back by its rate may start
	// again, or was asked to be looked at again; zero if none.
	Wake time.Time
}

// Publish moves up to limit due members to the ready stream, holding back
// those whose lanes are at their caps, and records caps as the shard's
// defaults. A zero now uses Redis TIME; tests pass their own clock.
func (q *Shard) Publish(ctx context.Context, limit int, now time.Time, caps Caps) (Published, error) {
	return q.PublishAhead(ctx, limit, now, 0, caps)
}

// PublishAhead is Publish of the members due up to lead after now as
// well: a worker reads them ahead and starts each at its due time (the
// entry's DueAt), so that at a steady load one call, one read, one
// Postgres read and one lease script serve the members due over a few
// milliseconds instead of each paying its own, and the start's own
// latency comes before the due time instead of after it.
func (q *Shard) PublishAhead(ctx context.Context, limit int, now time.Time, lead time.Duration, caps Caps) (Published, error) {
	c := q.publishCall(limit, now, lead, caps)
	res, err := c.script.Run(ctx, q.rdb, c.keys, c.args...).Int64Slice()
	if err != nil {
		return Published{}, fmt.Errorf("publish due: %w", err)
	}
	p := Published{Moved: int(res[0]), Now: time.UnixMilli(res[1]).UTC(), Sent: int(res[3]), Held: int(res[4])}
	if res[2] >= 0 {
		p.Next = time.UnixMilli(res[2]).UTC()
	}
	if len(res) > 5 && res[5] >= 0 {
		p.Wake = time.UnixMilli(res[5]).UTC()
	}
	return p, nil
}

// publishCall is PublishAhead's script call.
func (q *Shard) publishCall(limit int, now time.Time, lead time.Duration, caps Caps) scriptCall {
	nowArg := ""
	if !now.IsZero() {
		nowArg = strconv.FormatInt(now.UnixMilli(), 10)
	}
	capArg := func(v int) string {
		if v <= 0 {
			return ""
		}
		return strconv.Itoa(v)
	}
	borrow := ""
	if caps.Borrow != 0 {
		borrow = strconv.Itoa(max(caps.Borrow, 0))
	}
	return scriptCall{publishScript, q.keys.laneKeys(),
		[]any{limit, nowArg, capArg(caps.Owner), capArg(caps.Host), heldLanesPerCall, borrow, capArg(caps.Unread), lead.Milliseconds()}}
}

// EnsureGroup creates the ready stream and its consumer group if missing.
func (q *Shard) EnsureGroup(ctx context.Context) error {
	err := q.rdb.XGroupCreateMkStream(ctx, q.keys.Ready(), Group, "0").Err()
	if err != nil && !redis.HasErrorPrefix(err, errBusyGroup) {
		return fmt.Errorf("create consumer group: %w", err)
	}
	return nil
}

// Message is one stream entry handed to a worker.
type Message struct {
	// Shard is the shard whose stream the entry came from.
	Shard      int
	ID         string
	Occurrence job.Occurrence
	DueAt      time.Time
	// Throttled is how long the attempt waited behind its flow key's limits
	// after DueAt before it was published: late by design, not lateness.
	Throttled time.Duration
	// Capped says the entry took the last place in one of its lanes (or
	// borrowed past it) when it was published: its worker gives that place
	// back as the attempt ends (Queue.Release), for the member waiting on
	// it, instead of when the attempt is settled.
	Capped bool
	// Deliveries is how many times the group has handed the entry to a
	// consumer, this time included: 1 when Read, more when Reclaimed (0 when
	// it was acknowledged between the claim and the count), less the
	// reclaims given back because the attempt still ran (GiveBack). An
	// entry delivered again and again never reached an outcome.
	Deliveries int
	// Err is set when the entry cannot be decoded (a poison entry), or by
	// the worker to say why it sets a decoded entry aside (SetAside).
	Err error
	Raw map[string]any
}

// Released is when the attempt was free to start: its due time, plus what
// it waited behind its flow key's limits. Its lateness is measured from it.
func (m Message) Released() time.Time { return m.DueAt.Add(m.Throttled) }

func (q *Shard) decode(x redis.XMessage) Message {
	m := Message{Shard: q.keys.Shard, ID: x.ID, Raw: x.Values}
	member, _ := x.Values["m"].(string)
	occ, err := job.ParseMember(member)
	if err != nil {
		m.Err = err
		return m
	}
	m.Occurrence = occ
	due, err := strconv.ParseInt(fmt.Sprint(x.Values["d"]), 10, 64)
	if err != nil {
		m.Err = fmt.Errorf("entry %s: bad due time: %w", x.ID, err)
		return m
	}
	m.DueAt = time.UnixMilli(due).UTC()
	if t, ok := x.Values["t"]; ok {
		if ms, err := strconv.ParseInt(fmt.Sprint(t), 10, 64); err == nil && ms > 0 {
			m.Throttled = time.Duration(ms) * time.Millisecond
		}
	}
	_, m.Capped = x.Values["c"]
	return m
}

// Read takes up to count new entries for consumer, waiting up to block for the
// first (zero waits without limit, a negative block not at all). A lost group
// (Redis restarted empty) is recreated.
func (q *Shard) Read(ctx context.Context, consumer string, count int, block time.Duration) ([]Message, error) {
	res, err := q.rdb.XReadGroup(ctx, &redis.XReadGroupArgs{
		Group: Group, Consumer: consumer, Streams: []string{q.keys.Ready(), ">"}, Count: int64(count), Block: block,
	}).Result()
	if errors.Is(err, redis.Nil) {
		return nil, nil
	}
	if err != nil && redis.HasErrorPrefix(err, errNoGroup) {
		if gerr := q.EnsureGroup(ctx); gerr != nil {
			return nil, gerr
		}
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read stream: %w", err)
	}
	var out []Message
	for _, s := range res {
		for _, x := range s.Messages {
			m := q.decode(x)
			m.Deliveries = 1
			out = append(out, m)
		}
	}
	return out, nil
}

// Reclaim takes over up to count entries that other consumers left pending for
// longer than minIdle: their worker died or stalled, or Postgres refused to
// start them, or their attempt still runs. Each comes with its delivery
// count, read in one more round trip (XAUTOCLAIM does not return it), so
// that the worker can tell an entry that never reaches an outcome.
func (q *Shard) Reclaim(ctx context.Context, consumer string, minIdle time.Duration, count int) ([]Message, error) {
	msgs, _, err := q.rdb.XAutoClaim(ctx, &redis.XAutoClaimArgs{
		Stream: q.keys.Ready(), Group: Group, Consumer: consumer, MinIdle: minIdle, Start: "0-0", Count: int64(count),
	}).Result()
	if err != nil {
		if redis.HasErrorPrefix(err, errNoGroup) {
			return nil, q.EnsureGroup(ctx)
		}
		return nil, fmt.Errorf("reclaim pending: %w", err)
	}
	return q.withCounts(ctx, msgs, "reclaim pending")
}

// endedMinIdle is how long an entry must have gone undelivered for
// ClaimEnded to take it: far less than any lease (the shortest timeout and
// the margin), far more than a claim takes to reach its start.
const endedMinIdle = time.Second

// ClaimEnded takes over, for consumer, the entries of up to count attempts
// whose lease ended before now without their outcome (their worker died, or
// stalled past its attempt's timeout and the margin): at once, rather than
// when the entries have been pending a visibility timeout, which may be long
// after the lease. Until then such an attempt keeps its places in its
// lanes and its flow key; a key at its concurrency limit would run short
// all that time. The start script takes the ended lease over as it does
// for any reclaim.
//
// next says when to look again: when no lease has ended, the end of the
// earliest lease still running (the zero time when none runs), read in the
// same round trip, so that a caller can sleep until then rather than poll;
// when one has, its end (not after now).
//
// An entry claimed in the last endedMinIdle (by another worker's look at
// the same lease, or its reclaim) is left to that worker: each claim counts
// a delivery, and two for one run would dead-letter the attempt early.
func (q *Shard) ClaimEnded(ctx context.Context, consumer string, now time.Time, count int) (msgs []Message, next time.Time, err error) {
	ended, _, next, err := q.alone().leased(ctx, now, count, true)
	if err != nil || len(ended) == 0 {
		return nil, next, err
	}
	next = ended[0].Until
	ids := make([]string, 0, len(ended))
	for _, l := range ended {
		if l.Entry != "" {
			ids = append(ids, l.Entry)
		}
	}
	if len(ids) == 0 {
		return nil, next, nil
	}
	claimed, err := q.rdb.XClaim(ctx, &redis.XClaimArgs{Stream: q.keys.Ready(), Group: Group, Consumer: consumer, MinIdle: endedMinIdle, Messages: ids}).Result()
	if err != nil {
		return nil, next, fmt.Errorf("claim ended leases' entries: %w", err)
	}
	msgs, err = q.withCounts(ctx, claimed, "claim ended leases' entries")
	return msgs, next, err
}

// Unread returns up to count of the entries pending to consumer after the
// entry id after ("" for all), delivered once, that known does not know, oldest first, with
// their delivery counts, and the id to resume from ("" when none is left).
// A read Redis served but whose answer never reached its consumer (its
// connection broke, or its client gave up while Redis stalled and Redis
// served it on resuming) leaves its entries pending to the consumer, unread,
// until a reclaim takes them after the visibility timeout: the reader
// finds them here instead, at once. It lists the consumer's pending
// entries (XPENDING) and reads the unknown ones (XRANGE), in pages:
// neither changes an entry's count or idle time.
func (q *Shard) Unread(ctx context.Context, consumer, after string, count int, known func(id string) bool) ([]Message, string, error) {
	const page = 512
	start := "-"
	if after != "" {
		start = nextID(after)
	}
	var lost []redis.XPendingExt
	resume := ""
	for len(lost) < count {
		ps, err := q.rdb.XPendingExt(ctx, &redis.XPendingExtArgs{
			Stream: q.keys.Ready(), Group: Group, Start: start, End: "+", Count: page, Consumer: consumer,
		}).Result()
		if err != nil {
			if redis.HasErrorPrefix(err, errNoGroup) {
				return nil, "", q.EnsureGroup(ctx)
			}
			return nil, "", fmt.Errorf("list pending: %w", err)
		}
		for _, p := range ps {
			start, resume = nextID(p.ID), p.ID
			// Delivered once: a read's. A reclaim counts one more, so the
			// entries the worker's reclaimer took, which it holds, are not
			// found here.
			if p.RetryCount == 1 && !known(p.ID) {
				lost = append(lost, p)
				if len(lost) == count {
					break
				}
			}
		}
		if len(ps) < page && len(lost) < count {
			resume = ""
			break
		}
	}
	if len(lost) == 0 {
		return nil, resume, nil
	}
	pipe := q.rdb.Pipeline()
	reads := make([]*redis.XMessageSliceCmd, len(lost))
	for i, p := range lost {
		reads[i] = pipe.XRange(ctx, q.keys.Ready(), p.ID, p.ID)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, "", fmt.Errorf("read pending: %w", err)
	}
	out := make([]Message, 0, len(lost))
	for i, p := range lost {
		xs := reads[i].Val()
		if len(xs) != 1 {
			continue // deleted while pending: a reclaim drops it from the list
		}
		m := q.decode(xs[0])
		m.Deliveries = int(p.RetryCount)
		out = append(out, m)
	}
	return out, resume, nil
}

// nextID is the stream entry id right after id ("<ms>-<seq>"), for a range
// that starts after id (the "(" of Redis 6.2 ranges, which miniredis lacks).
func nextID(id string) string {
	ms, seq, _ := strings.Cut(id, "-")
	m, _ := strconv.ParseUint(ms, 10, 64)
	n, _ := strconv.ParseUint(seq, 10, 64)
	if n == math.MaxUint64 {
		return strconv.FormatUint(m+1, 10) + "-0"
	}
	return ms + "-" + strconv.FormatUint(n+1, 10)
}

// withCounts decodes msgs taken from the pending list and gives each its
// delivery count, read in one more round trip (XAUTOCLAIM and XREADGROUP
// do not return it), so that the worker can tell an entry that never
// reaches an outcome. what names the call in errors.
func (q *Shard) withCounts(ctx context.Context, msgs []redis.XMessage, what string) ([]Message, error) {
	if len(msgs) == 0 {
		return nil, nil
	}
	pipe := q.rdb.Pipeline()
	counts := make([]*redis.XPendingExtCmd, len(msgs))
	for i, x := range msgs {
		counts[i] = pipe.XPendingExt(ctx, &redis.XPendingExtArgs{Stream: q.keys.Ready(), Group: Group, Start: x.ID, End: x.ID, Count: 1})
	}
	// An error here leaves the entries pending, now this consumer's: they
	// are reclaimed after the visibility timeout.
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, fmt.Errorf("%s: delivery counts: %w", what, err)
	}
	out := make([]Message, 0, len(msgs))
	for i, x := range msgs {
		m := q.decode(x)
		if p := counts[i].Val(); len(p) == 1 && p[0].ID == x.ID {
			m.Deliveries = int(p[0].RetryCount)
		}
		out = append(out, m)
	}
	return out, nil
}

// giveBackScript gives back the delivery that a reclaim counted, for each
// entry still pending to that reclaim's consumer with the count it returned:
// an entry reclaimed since by another consumer, or acknowledged, keeps its
// count (one delivery too many counted is the safe side of the race). The
// XCLAIM keeps the entry's owner and idle time; RETRYCOUNT sets its count
// and JUSTID does not add one. Bounded by the batch reclaimed.
//
// KEYS[1] ready stream
// ARGV[1] consumer group
// ARGV[2] consumer that reclaimed the entries
// ARGV[3..] entry id, delivery count pairs: the count the reclaim returned
// Returns the number of entries given back
var giveBackScript = redis.NewScript(`
local given = 0
for i = 3, #ARGV, 2 do
  local n = tonumber(ARGV[i + 1])
  local p = redis.call('XPENDING', KEYS[1], ARGV[1], ARGV[i], ARGV[i], 1)
  if #p == 1 and p[1][2] == ARGV[2] and tonumber(p[1][4]) == n then
    redis.call('XCLAIM', KEYS[1], ARGV[1], ARGV[2], 0, ARGV[i], 'IDLE', p[1][3], 'RETRYCOUNT', n - 1, 'JUSTID')
    given = given + 1
  end
end
return given
`)

// GiveBack uncounts the delivery of entries that consumer reclaimed and
// found leased to a live worker: taking over an attempt that still runs
// is not a delivery without an outcome, and counting it would dead-letter
// a long attempt whose worker dies after many visibility timeouts instead
// of running it again. Each entry's count goes back to what it was before
// the reclaim (its Deliveries less one); entries read fresh (1) have
// nothing to give back. It returns how many entries it gave back.
func (q *Shard) GiveBack(ctx context.Context, consumer string, msgs []Message) (int, error) {
	args := make([]any, 0, 2+2*len(msgs))
	args = append(args, Group, consumer)
	for _, m := range msgs {
		if m.Deliveries > 1 {
			args = append(args, m.ID, m.Deliveries)
		}
	}
	if len(args) == 2 {
		return 0, nil
	}
	n, err := giveBackScript.Run(ctx, q.rdb, []string{q.keys.Ready()}, args...).Int()
	if err != nil {
		return 0, fmt.Errorf("give back %d deliveries: %w", (len(args)-2)/2, err)
	}
	return n, nil
}

// settleScript schedules retries, ends leases, then acknowledges and
// deletes entries, as one script: a pipeline of ZADD, XACK and XDEL is not
// atomic, so a ZADD refused (Redis out of memory under noeviction, a slot
// mid-migration) would still let the acknowledgement through and lose the
// retry. A script stops at the first refused command, before the
// acknowledgement. Each entry deleted frees a place in its lanes (see
// fair.go), which goes at once to the lane's oldest held member: the
// host's first (another owner may be waiting on it), then the owner's.
//
// Each ended attempt's lease leaves its job's run hash and the leases set,
// and so does the job's overlap hold (or buffer_one waiting place) when the
// attempt's occurrence held it: a finished attempt's (mode "f") whoever
// holds it, a dropped one's (mode "d") only once it ran out (a live lease
// is its worker's to end). A finished attempt's field keeps, for DoneKept,
// the mark that stops it starting again (StartDone); older marks of the
// job are removed on the way. A run hash left without a lease expires:
// after FenceTTL when it holds a fence, else after DoneKept.
//
// An entry whose worker gave its place back when its attempt ended
// (Release, noted in the released set) is only acknowledged and deleted.
//
// KEYS[1..10] as lanesLua; KEYS[11] leases set; KEYS[12+k] the run hash of
// ended attempt k
// ARGV[1] consumer group
// ARGV[2] number of retries, r
// ARGV[3 .. 2+2r] score, member pairs
// ARGV[3+2r] number of ended attempts, e; ARGV[4+2r] now in unix ms
// ARGV[5+2r .. 4+2r+4e] field, leases member, scheduled ms, mode ("f" or
// "d") per ended attempt
// ARGV[5+2r+4e ..] entry ids
// Returns the number of entries deleted
var settleScript = redis.NewScript(lanesLua + `
local r = tonumber(ARGV[2])
local first, last = 3, 2 + 2 * r
local chunk = 1000
for i = first, last, chunk do
  redis.call('ZADD', KEYS[1], unpack(ARGV, i, math.min(i + chunk - 1, last)))
end
local e = tonumber(ARGV[last + 1])
local now = tonumber(ARGV[last + 2])
local efirst = last + 3
local doneKept, fenceTTL = ` + strconv.Itoa(int(DoneKept/time.Millisecond)) + `, ` + strconv.Itoa(int(FenceTTL/time.Millisecond)) + `
local unleased = {}
for k = 0, e - 1 do
  local key = KEYS[12 + k]
  local a = efirst + 4 * k
  local field, member, sched, mode = ARGV[a], ARGV[a + 1], ARGV[a + 2], ARGV[a + 3]
  -- One read of the whole run hash (a few fields) instead of one per field.
  local h = {}
  local all = redis.call('HGETALL', key)
  for j = 1, #all, 2 do h[all[j]] = all[j + 1] end
  local held = h[field]
  local ends = true
  if held and mode == 'd' then
    local u = string.match(held, '^v1|[^|]*|[^|]*|[^|]*|([^|]*)|')
    ends = (tonumber(u) or 0) <= now
  end
  if ends then
    if mode == 'f' then
      h[field] = 'done|' .. (now + doneKept)
      redis.call('HSET', key, field, h[field])
    elseif held then
      h[field] = nil
      redis.call('HDEL', key, field)
    end
    unleased[#unleased + 1] = member
    if h['hold'] and string.match(h['hold'], '^([^|]*)|') == sched then redis.call('HDEL', key, 'hold') end
    if h['wait'] and string.match(h['wait'], '^([^|]*)|') == sched then redis.call('HDEL', key, 'wait') end
    local leased = false
    for f, v in pairs(h) do
      if f ~= 'fence' and string.find(f, ':', 1, true) then
        if string.sub(v, 1, 5) ~= 'done|' then
          leased = true
        elseif (tonumber(string.sub(v, 6)) or 0) <= now then
          redis.call('HDEL', key, f)
        end
      end
    end
    if not leased then
      local ttl = doneKept
      if h['fence'] then ttl = fenceTTL end
      -- A run hash its start persisted (the common case) takes the TTL in
      -- one command; one that has a TTL keeps the longer of the two.
      if redis.call('PEXPIRE', key, ttl, 'NX') == 0 and redis.call('PTTL', key) < ttl then
        redis.call('PEXPIRE', key, ttl)
      end
    end
  end
end
for i = 1, #unleased, chunk do
  redis.call('ZREM', KEYS[11], unpack(unleased, i, math.min(i + chunk - 1, #unleased)))
end
local ids = efirst + 4 * e
local freed = {}
for i = ids, #ARGV do
  -- A released entry (the common case) gave its place back already: its
  -- lanes need not be read.
  if redis.call('SREM', KEYS[7], ARGV[i]) == 0 then
    local ol, hl, fl, present = entryLanes(ARGV[i])
    if ol and present then freed[#freed + 1] = {ol, hl, fl} end
  end
end
local deleted = 0
for i = ids, #ARGV, chunk do
  local j = math.min(i + chunk - 1, #ARGV)
  redis.call('XACK', KEYS[2], ARGV[1], unpack(ARGV, i, j))
  deleted = deleted + redis.call('XDEL', KEYS[2], unpack(ARGV, i, j))
end
freeAndUnhold(freed)
flushCounts()
return deleted
`)

func (q *Shard) settle(s Settlement) scriptCall {
	ended := len(s.Ended) + len(s.Dropped)
	keys := append(q.keys.laneKeys(), q.keys.Leases())
	args := make([]any, 0, 4+2*len(s.Retries)+4*ended+len(s.IDs))
	args = append(args, Group, len(s.Retries))
	for _, e := range s.Retries {
		args = append(args, e.DueAt.UnixMilli(), e.Occurrence.Member())
	}
	args = append(args, ended, s.Now.UnixMilli())
	for i, o := range append(s.Ended[:len(s.Ended):len(s.Ended)], s.Dropped...) {
		mode := "f"
		if i >= len(s.Ended) {
			mode = "d"
		}
		keys = append(keys, q.keys.Run(o.JobID))
		args = append(args, leaseField(o), leaseMember(o), o.ScheduledFor.UnixMilli(), mode)
	}
	for _, id := range s.IDs {
		args = append(args, id)
	}
	return scriptCall{settleScript, keys, args}
}

// SetAside moves poison entries to the dead stream and acknowledges them, so a
// message nobody can decode, or one dead-lettered after too many deliveries,
// is kept for people to read but never retried. The dead entry holds the
// original's id, fields (prefixed f_), Err as "error" and its deliveries.
func (q *Shard) SetAside(ctx context.Context, msgs []Message) error {
	if len(msgs) == 0 {
		return nil
	}
	pipe := q.rdb.Pipeline()
	ids := make([]string, len(msgs))
	for i, m := range msgs {
		ids[i] = m.ID
		vals := map[string]any{"id": m.ID}
		if m.Err != nil {
			vals["error"] = m.Err.Error()
		}
		if m.Deliveries > 0 {
			vals["deliveries"] = m.Deliveries
		}
		for k, v := range m.Raw {
			vals["f_"+k] = v
		}
		pipe.XAdd(ctx, &redis.XAddArgs{Stream: q.keys.Dead(), MaxLen: 10000, Approx: true, Values: vals})
	}
	// Acknowledged and deleted as settling does, so that an entry whose
	// member names its lanes gives its place back.
	// EVAL, not EVALSHA, in this rare path's one round trip: a NOSCRIPT
	// could not be retried in it.
	c := q.settle(Settlement{IDs: ids})
	c.script.Eval(ctx, pipe, c.keys, c.args...)
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("set aside %d entries: %w", len(msgs), err)
	}
	return nil
}

// Stats are the queue's sizes, for readiness and metrics.
type Stats struct {
	Due     int64 // members waiting in the due set
	Ready   int64 // entries in the stream (unread and pending)
	Pending int64 // entries delivered and not yet acknowledged
	// Held is how many due members are held back because their owner or
	// their host was at its cap on attempts in flight.
	Held int64
}

// Stats reads the queue's sizes in one round trip.
func (q *Shard) Stats(ctx context.Context) (Stats, error) { return q.alone().Stats(ctx) }

// Connect opens a Redis client from a redis:// or rediss:// URL. With cluster
// set, or seed addresses given, it opens a Redis Cluster client instead: the
// URL's host (a cluster's configuration endpoint, or any node) and addrs
// together seed the node discovery, and the URL's credentials, TLS and
// options apply to every node.
func Connect(url string, cluster bool, addrs []string) (redis.UniversalClient, error) {
	if !cluster && len(addrs) == 0 {
		opt, err := redis.ParseURL(url)
		if err != nil {
			return nil, fmt.Errorf("parse redis url: %w", err)
		}
		return redis.NewClient(opt), nil
	}
	opt, err := redis.ParseClusterURL(url)
	if err != nil {
		return nil, fmt.Errorf("parse redis cluster url: %w", err)
	}
	// A cluster has database 0 only; ParseClusterURL ignores the path.
	if u, err := neturl.Parse(url); err == nil && strings.Trim(u.Path, "/") != "" && strings.Trim(u.Path, "/") != "0" {
		return nil, fmt.Errorf("parse redis cluster url: a cluster has database 0 only, not %q", strings.Trim(u.Path, "/"))
	}
	for _, a := range addrs {
		if !slices.Contains(opt.Addrs, a) {
			opt.Addrs = append(opt.Addrs, a)
		}
	}
	return redis.NewClusterClient(opt), nil
}

// Intact reports whether the marker is present and holds at least mark:
// false after Redis lost its data, or lost a claim's writes that Postgres
// committed (its marker is older than mark).
func (q *Shard) Intact(ctx context.Context, mark int64) (bool, error) {
	v, err := q.rdb.Get(ctx, q.keys.Marker()).Result()
	if errors.Is(err, redis.Nil) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("check marker: %w", err)
	}
	held, err := strconv.ParseInt(v, 10, 64)
	return err == nil && held >= mark, nil
}

// MarkIntact sets the marker to mark, once what Redis should hold has been
// rebuilt.
func (q *Shard) MarkIntact(ctx context.Context, mark int64) error {
	if err := q.rdb.Set(ctx, q.keys.Marker(), mark, 0).Err(); err != nil {
		return fmt.Errorf("set marker: %w", err)
	}
	return nil
}

// raiseMarkerScript raises the marker to ARGV[1], only if it exists: a
// missing marker must stay missing until the leader has rebuilt what Redis
// lost, and a lower mark must never replace a higher one.
var raiseMarkerScript = redis.NewScript(`
local v = redis.call('GET', KEYS[1])
if v and (tonumber(v) or 0) < tonumber(ARGV[1]) then
  redis.call('SET', KEYS[1], ARGV[1])
end
return 0
`)

// DeadEntry is one entry of the dead stream, as SetAside wrote it: its id
// there, the original entry's fields (without their f_ prefix), and the
// error and deliveries it was set aside with.
type DeadEntry struct {
	ID         string
	At         time.Time // when it was set aside: its id's time
	Fields     map[string]string
	Error      string
	Deliveries int
}

// DeadEntries reads up to n entries of the dead stream, oldest first.
func (q *Shard) DeadEntries(ctx context.Context, n int64) ([]DeadEntry, error) {
	msgs, err := q.rdb.XRangeN(ctx, q.keys.Dead(), "-", "+", n).Result()
	if err != nil {
		return nil, fmt.Errorf("read the dead stream: %w", err)
	}
	out := make([]DeadEntry, 0, len(msgs))
	for _, m := range msgs {
		e := DeadEntry{ID: m.ID, Fields: map[string]string{}}
		if ms, _, ok := strings.Cut(m.ID, "-"); ok {
			if v, err := strconv.ParseInt(ms, 10, 64); err == nil {
				e.At = time.UnixMilli(v).UTC()
			}
		}
		for k, v := range m.Values {
			s := fmt.Sprint(v)
			switch {
			case k == "error":
				e.Error = s
			case k == "deliveries":
				e.Deliveries, _ = strconv.Atoi(s)
			case strings.HasPrefix(k, "f_"):
				e.Fields[strings.TrimPrefix(k, "f_")] = s
			}
		}
		out = append(out, e)
	}
	return out, nil
}

// DropDead deletes entries from the dead stream, once Postgres holds them.
func (q *Shard) DropDead(ctx context.Context, ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	if err := q.rdb.XDel(ctx, q.keys.Dead(), ids...).Err(); err != nil {
		return fmt.Errorf("drop %d dead entries: %w", len(ids), err)
	}
	return nil
}

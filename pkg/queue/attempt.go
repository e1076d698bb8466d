package queue

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"github.com/tockhq/tock/pkg/job"
)

// Attempts in flight live in Redis, not in Postgres (docs/architecture.md,
// "The path of one job"): starting an attempt writes nothing to Postgres,
// and its one row there is its outcome. What a running attempt needs beyond
// its stream entry (which stays pending until it is settled, and which
// XAUTOCLAIM hands to another worker should this one die) is kept per job,
// in the job's run hash (Keys.Run):
//
//   - "<scheduled ms>:<attempt>": one field per attempt running, its lease
//     (Lease), "v1|worker|run id|started ms|until ms|due ms|entry|member":
//     who runs it, since when, until when, and its entry;
//   - "fence": "<generation>|<until ms>", set by a change of the job (an
//     edit, a pause, a cancel) before it commits: an entry planned under an
//     older generation must not start while it holds. The worker's start and
//     the change's fence are each one script, so one of them always sees the
//     other: a DELETE answered 204 means the job will not run;
//   - "hold" and "wait": a recurring job's overlap policy, the occurrence
//     that holds the job and the one that waits its turn (buffer_one), each
//     "<scheduled ms>|<until ms>".
//
// The shard's leases sorted set (Keys.Leases) scores every attempt running
// by the end of its lease, for the reconciler and for listing what runs.

// Lease is a running attempt as Redis holds it.
type Lease struct {
	Occurrence job.Occurrence
	// Worker is the consumer that runs it.
	Worker string
	// Run is the id its run's row will have.
	Run uuid.UUID
	// StartedAt is when it started; Until when its lease ends (its timeout
	// and the margin after it).
	StartedAt, Until time.Time
	// DueAt is when the attempt was due.
	DueAt time.Time
	// Entry is its stream entry's id.
	Entry string
	// Member is its due-set member, to put it back should its entry be lost.
	Member string
}

// field is the lease's field in its job's run hash.
func leaseField(o job.Occurrence) string {
	return strconv.FormatInt(o.ScheduledFor.UnixMilli(), 10) + ":" + strconv.Itoa(o.Attempt)
}

// leaseMember is the attempt's member in the leases set: job, scheduled ms
// and attempt.
func leaseMember(o job.Occurrence) string {
	return o.JobID.String() + ":" + leaseField(o)
}

// encode writes the lease as its field's value.
func (l Lease) encode() string {
	return strings.Join([]string{"v1", l.Worker, l.Run.String(), strconv.FormatInt(l.StartedAt.UnixMilli(), 10),
		strconv.FormatInt(l.Until.UnixMilli(), 10), strconv.FormatInt(l.DueAt.UnixMilli(), 10), l.Entry, l.Member}, "|")
}

// decodeLease reads a lease field of job id.
func decodeLease(field, value string) (Lease, bool) {
	parts := strings.SplitN(value, "|", 8)
	if len(parts) != 8 || parts[0] != "v1" {
		return Lease{}, false
	}
	occ, err := job.ParseMember(parts[7])
	if err != nil {
		return Lease{}, false
	}
	run, _ := uuid.Parse(parts[2])
	ms := func(s string) time.Time {
		n, _ := strconv.ParseInt(s, 10, 64)
		return time.UnixMilli(n).UTC()
	}
	_ = field
	return Lease{Occurrence: occ, Worker: parts[1], Run: run, StartedAt: ms(parts[3]), Until: ms(parts[4]), DueAt: ms(parts[5]),
		Entry: parts[6], Member: parts[7]}, true
}

// The answers of the start script, one per attempt.
const (
	// StartRun: the attempt is leased to the caller; run it.
	StartRun = 1
	// StartFenced: a change of its job is committing under a newer
	// generation: not started. Put it back shortly; its job, read again,
	// says whether it is stale.
	StartFenced = 2
	// StartHeld: another worker holds a live lease on the attempt: not
	// started; leave its entry pending.
	StartHeld = 3
	// StartSkip: an earlier occurrence of its job holds the job (overlap):
	// leased only to be recorded skipped.
	StartSkip = 4
	// StartWait: buffer_one: it took the job's one waiting place; not
	// started, to be tried again shortly.
	StartWait = 5
	// StartDone: the attempt ended moments ago (its outcome is recorded,
	// though the caller read Postgres before it was): not started;
	// acknowledge its entry.
	StartDone = 6
)

// DoneKept is how long an attempt whose outcome was recorded keeps, in its
// run hash, the mark that answers StartDone: longer than any worker takes
// from reading Postgres (store.Fetch) to its start script, so that a
// worker that read the attempt unfinished just before another recorded it
// does not run it again.
const DoneKept = 30 * time.Second

// startScript leases a batch of attempts to one worker: for each, unless a
// fence of its job stops it, or another live lease holds it, it writes its
// lease into its job's run hash and the shard's leases set, applying its
// job's overlap policy on the way (retries are not held back: the caller
// passes no policy for them). A lease whose time ran out (its worker died)
// is taken over; an attempt that ended within DoneKept ("done|<until ms>"
// in its field) is not started again. Bounded by the batch.
//
// KEYS[1] leases set; KEYS[1+i] the run hash of attempt i
// ARGV[1] now in unix ms
// ARGV[2 + 6(i-1) ..] per attempt: field, generation, lease value, lease
// until ms, leases-set member, overlap policy ("", "skip", "buffer_one")
// ARGV[2 + 6n] how long a buffer_one wait keeps its place, ms
// Returns one answer (Start*) per attempt
var startScript = redis.NewScript(`
local now = tonumber(ARGV[1])
local n = #KEYS - 1
local keep = tonumber(ARGV[2 + 6 * n])
local out = {}
local function parts(v)
  local a, b = string.match(v or '', '^([^|]*)|([^|]*)$')
  return a, tonumber(b)
end
for i = 1, n do
  local key = KEYS[1 + i]
  local a = 2 + 6 * (i - 1)
  local field, gen, value, untilms, member, overlap = ARGV[a], tonumber(ARGV[a + 1]), ARGV[a + 2], ARGV[a + 3], ARGV[a + 4], ARGV[a + 5]
  local answer = 1
  local got = redis.call('HMGET', key, field, 'fence')
  local held = got[1]
  local fgen, funtil = parts(got[2])
  if held and string.sub(held, 1, 5) == 'done|' then
    if (tonumber(string.sub(held, 6)) or 0) > now then answer = 6 end
  elseif fgen and funtil > now and tonumber(fgen) > gen then
    answer = 2
  elseif held then
    local lease = tonumber(string.match(held, '^v1|[^|]*|[^|]*|[^|]*|([^|]*)|'))
    if lease and lease > now then answer = 3 end
  end
  if answer == 1 and overlap ~= '' then
    local sched = string.match(field, '^([^:]*)')
    local hsched, huntil = parts(redis.call('HGET', key, 'hold'))
    if hsched and hsched ~= sched and huntil > now then
      answer = 4
      if overlap == 'buffer_one' then
        local wsched, wuntil = parts(redis.call('HGET', key, 'wait'))
        if not wsched or wuntil <= now or wsched == sched or tonumber(wsched) > tonumber(sched) then
          redis.call('HSET', key, 'wait', sched .. '|' .. (now + keep))
          answer = 5
        end
      end
    else
      local wsched, wuntil = parts(redis.call('HGET', key, 'wait'))
      if wsched and wsched ~= sched and wuntil > now and tonumber(wsched) < tonumber(sched) then
        -- an earlier occurrence waits its turn: it goes first
        answer = 4
      else
        redis.call('HSET', key, 'hold', sched .. '|' .. untilms)
        if wsched == sched then redis.call('HDEL', key, 'wait') end
      end
    end
  end
  if answer == 1 or answer == 4 then
    redis.call('HSET', key, field, value)
    redis.call('PERSIST', key)
    redis.call('ZADD', KEYS[1], untilms, member)
  end
  out[i] = answer
end
return out
`)

// Start is one attempt a worker asks to start.
type Start struct {
	Lease Lease
	// Overlap is its job's overlap policy for a first attempt: "" (allow,
	// or a retry), "skip" or "buffer_one".
	Overlap job.Overlap
	// Generation is the generation its job had when the worker read it.
	Generation int
}

// Start leases attempts of this shard to worker, in one script: each gets
// one answer (StartRun, StartFenced, StartHeld, StartSkip, StartWait).
// waitKept is how long a buffer_one occurrence keeps its waiting place
// without trying again.
func (q *Shard) Start(ctx context.Context, starts []Start, now time.Time, waitKept time.Duration) ([]int, error) {
	if len(starts) == 0 {
		return nil, nil
	}
	keys := make([]string, 0, 1+len(starts))
	keys = append(keys, q.keys.Leases())
	args := make([]any, 0, 2+6*len(starts))
	args = append(args, now.UnixMilli())
	for _, s := range starts {
		o := s.Lease.Occurrence
		keys = append(keys, q.keys.Run(o.JobID))
		args = append(args, leaseField(o), s.Generation, s.Lease.encode(), s.Lease.Until.UnixMilli(), leaseMember(o), string(s.Overlap))
	}
	args = append(args, waitKept.Milliseconds())
	res, err := startScript.Run(ctx, q.rdb, keys, args...).Int64Slice()
	if err != nil {
		return nil, fmt.Errorf("start %d attempts: %w", len(starts), err)
	}
	out := make([]int, len(res))
	for i, v := range res {
		out[i] = int(v)
	}
	return out, nil
}

// fenceScript sets a job's fence (see the package's attempts comment) to
// a generation, unless a higher one holds, frees its buffer_one waiting
// place (the occurrence that waits belongs to an older generation and will
// never start; should the change roll back, it takes its place again at its
// next try), and returns the attempts
// running (every lease field, live or not: an attempt that started may have
// reached its target).
//
// KEYS[1] the job's run hash
// ARGV[1] generation; ARGV[2] now in unix ms; ARGV[3] how long the fence holds, ms
// Returns the running attempts as field, value pairs
var fenceScript = redis.NewScript(`
local now = tonumber(ARGV[1 + 1])
local gen = tonumber(ARGV[1])
local cur = redis.call('HGET', KEYS[1], 'fence')
local cgen, cuntil = string.match(cur or '', '^([^|]*)|([^|]*)$')
local untilms = now + tonumber(ARGV[3])
if not (cgen and tonumber(cuntil) > now and tonumber(cgen) > gen) then
  redis.call('HSET', KEYS[1], 'fence', gen .. '|' .. untilms)
  -- the occurrence that waits (buffer_one) is of an older generation
  redis.call('HDEL', KEYS[1], 'wait')
end
local all = redis.call('HGETALL', KEYS[1])
local out = {}
for i = 1, #all, 2 do
  if string.find(all[i], ':', 1, true) and string.sub(all[i + 1], 1, 3) == 'v1|' then
    out[#out + 1] = all[i]
    out[#out + 1] = all[i + 1]
  end
end
if #out == 0 and redis.call('PTTL', KEYS[1]) < tonumber(ARGV[3]) then
  redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[3]))
end
return out
`)

// FenceTTL is how long a fence holds. It only has to outlast the moment
// between a worker reading a job and its start script: a worker that reads
// the job after the change committed finds it stale (or cancelled) itself.
const FenceTTL = 5 * time.Minute

// Fence stops every entry of job id planned under a generation older than
// gen from starting, for FenceTTL, and returns the attempts of the job that
// run (or started and never settled). A change that must not meet a
// running attempt (cancelling a one-off job) refuses itself when there is
// one; a change that rolls back lifts the fence with Unfence.
func (r *Queue) Fence(ctx context.Context, id uuid.UUID, gen int, now time.Time) ([]Lease, error) {
	s := r.Of(id)
	res, err := fenceScript.Run(ctx, r.rdb, []string{s.keys.Run(id)}, gen, now.UnixMilli(), FenceTTL.Milliseconds()).StringSlice()
	if err != nil {
		return nil, fmt.Errorf("fence job %s: %w", id, err)
	}
	return leases(res), nil
}

// unfenceScript lifts a fence a change set, if it is still that change's.
//
// KEYS[1] the job's run hash
// ARGV[1] generation
var unfenceScript = redis.NewScript(`
local cur = redis.call('HGET', KEYS[1], 'fence')
if cur and string.match(cur, '^([^|]*)|') == ARGV[1] then redis.call('HDEL', KEYS[1], 'fence') end
return 0
`)

// Unfence lifts the fence of generation gen on job id: the change that set
// it did not commit.
func (r *Queue) Unfence(ctx context.Context, id uuid.UUID, gen int) error {
	s := r.Of(id)
	if err := unfenceScript.Run(ctx, r.rdb, []string{s.keys.Run(id)}, gen).Err(); err != nil {
		return fmt.Errorf("unfence job %s: %w", id, err)
	}
	return nil
}

// Running returns the attempts of job id that run, from its run hash.
func (r *Queue) Running(ctx context.Context, id uuid.UUID) ([]Lease, error) {
	s := r.Of(id)
	res, err := r.rdb.HGetAll(ctx, s.keys.Run(id)).Result()
	if err != nil {
		return nil, fmt.Errorf("running attempts of job %s: %w", id, err)
	}
	flat := make([]string, 0, 2*len(res))
	for k, v := range res {
		flat = append(flat, k, v)
	}
	return leases(flat), nil
}

// RunningOf returns the attempts running of each of jobs, in one pipelined
// round trip: what a page of jobs shows as their latest attempt.
func (r *Queue) RunningOf(ctx context.Context, jobs []uuid.UUID) (map[uuid.UUID][]Lease, error) {
	if len(jobs) == 0 {
		return nil, nil
	}
	pipe := r.rdb.Pipeline()
	cmds := make([]*redis.MapStringStringCmd, len(jobs))
	for i, id := range jobs {
		cmds[i] = pipe.HGetAll(ctx, r.Of(id).keys.Run(id))
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, fmt.Errorf("running attempts of %d jobs: %w", len(jobs), err)
	}
	out := make(map[uuid.UUID][]Lease)
	for i, c := range cmds {
		flat := make([]string, 0, 2*len(c.Val()))
		for k, v := range c.Val() {
			flat = append(flat, k, v)
		}
		if ls := leases(flat); len(ls) > 0 {
			out[jobs[i]] = ls
		}
	}
	return out, nil
}

// leases reads the lease fields among field, value pairs.
func leases(flat []string) []Lease {
	var out []Lease
	for i := 0; i+1 < len(flat); i += 2 {
		if !strings.Contains(flat[i], ":") {
			continue
		}
		if l, ok := decodeLease(flat[i], flat[i+1]); ok {
			out = append(out, l)
		}
	}
	return out
}

// Leased returns up to limit attempts running in every shard, those whose
// lease ends first first, with their leases read in one more round trip per
// shard: what GET /api/v1/runs?status=running lists. Only leases ending
// before until are returned (the zero time: any).
func (r *Queue) Leased(ctx context.Context, until time.Time, limit int) ([]Lease, error) {
	out, _, _, err := r.leased(ctx, until, limit, false)
	return out, err
}

// Expired returns up to limit attempts whose lease ended before until
// without being settled (their worker died or stalled), for the reconciler
// to put back in the due set, and removes from the leases sets the members
// whose lease is gone (a crash between two writes of a repair).
func (r *Queue) Expired(ctx context.Context, until time.Time, limit int) ([]Lease, error) {
	out, orphans, _, err := r.leased(ctx, until, limit, false)
	if err != nil || len(orphans) == 0 {
		return out, err
	}
	pipe := r.rdb.Pipeline()
	for s, members := range orphans {
		pipe.ZRem(ctx, s.keys.Leases(), members...)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, fmt.Errorf("remove lost leases: %w", err)
	}
	return out, nil
}

// leased reads the leases ending before until (the zero time: any), and the
// members of the leases sets whose lease is not in its run hash. With
// wantNext (and until set) it also says, from a second command in the same
// round trip, when the earliest lease not ended by until ends (the zero
// time when none runs).
func (r *Queue) leased(ctx context.Context, until time.Time, limit int, wantNext bool) ([]Lease, map[*Shard][]any, time.Time, error) {
	var out []Lease
	var next time.Time
	orphans := map[*Shard][]any{}
	max := "+inf"
	if !until.IsZero() {
		max = "(" + strconv.FormatInt(until.UnixMilli(), 10)
	}
	wantNext = wantNext && !until.IsZero()
	for _, s := range r.shards {
		pipe := r.rdb.Pipeline()
		ended := pipe.ZRangeByScore(ctx, s.keys.Leases(), &redis.ZRangeBy{Min: "-inf", Max: max, Count: int64(limit)})
		var after *redis.ZSliceCmd
		if wantNext {
			after = pipe.ZRangeByScoreWithScores(ctx, s.keys.Leases(), &redis.ZRangeBy{Min: strconv.FormatInt(until.UnixMilli(), 10), Max: "+inf", Count: 1})
		}
		if _, err := pipe.Exec(ctx); err != nil {
			return nil, nil, time.Time{}, fmt.Errorf("leases: %w", err)
		}
		if after != nil {
			if z := after.Val(); len(z) > 0 {
				if t := time.UnixMilli(int64(z[0].Score)).UTC(); next.IsZero() || t.Before(next) {
					next = t
				}
			}
		}
		members := ended.Val()
		if len(members) == 0 {
			continue
		}
		pipe = r.rdb.Pipeline()
		cmds := make([]*redis.StringCmd, len(members))
		for i, m := range members {
			id, field, _ := strings.Cut(m, ":")
			jid, err := uuid.Parse(id)
			if err != nil {
				orphans[s] = append(orphans[s], m)
				continue
			}
			cmds[i] = pipe.HGet(ctx, s.keys.Run(jid), field)
		}
		if _, err := pipe.Exec(ctx); err != nil && err != redis.Nil {
			return nil, nil, time.Time{}, fmt.Errorf("leases: %w", err)
		}
		for i, m := range members {
			if cmds[i] == nil {
				continue
			}
			_, field, _ := strings.Cut(m, ":")
			l, ok := decodeLease(field, cmds[i].Val())
			if cmds[i].Err() == redis.Nil || (cmds[i].Err() == nil && !ok) {
				orphans[s] = append(orphans[s], m)
				continue
			}
			if ok {
				out = append(out, l)
			}
		}
	}
	// Each shard gave its first limit: the first of all of them, in order.
	slices.SortStableFunc(out, func(a, b Lease) int { return a.Until.Compare(b.Until) })
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out, orphans, next, nil
}

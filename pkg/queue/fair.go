package queue

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"github.com/tockhq/tock/pkg/job"
)

// Fair dispatch. Every routed occurrence (job.Occurrence.Owner set) belongs
// to two lanes: its owner's ("o:<owner>") and the host it calls
// ("h:<target>"; none for a job that calls no user-given host). The ready
// stream holds, per lane, at most the lane's cap of entries, read or not: a
// due member whose lane is full is held back in that lane's held set instead
// of being published, and comes out, highest priority and then oldest first
// (a host lane: oldest first), as soon as an entry of the lane is settled.
// So an owner whose targets hang, or a host that is down, can occupy no
// more than its cap of the workers' slots, and another owner's due member
// goes to the stream at once, ahead of everything held.
//
// The caps bind only when others are waiting. While no other lane has
// members held back, a lane at its cap may borrow idle slots: its members are
// published past the cap as long as the shard's routed entries in flight stay
// under the borrow limit (the workers' slots less one owner's cap, kept for
// whoever comes next) and the workers have read what is in the stream (fewer
// than one read per worker wait unread), so that borrowed entries never queue
// ahead of another owner's. An owner alone thus gets most of the pool; once
// another lane waits, nobody borrows more, and what was borrowed comes back
// as those attempts end.
//
// Whatever the caps, the stream's unread part is first come, first served,
// so it is kept short: an owner with the unread limit (Caps.Unread, a read
// per live worker, so that every worker finds a full read waiting) in flight
// already publishes another only while fewer than that wait unread;
// otherwise the member is held in its owner lane until the workers have
// read. And an owner with less than a read in flight goes ahead of what is
// unread: publishing its entry puts the unread entries of owners with a
// read's worth or more in flight back in their held sets (makeWay), where
// they come out again, oldest first, behind it. So another owner's job is
// read next even while one owner's burst drains (a 100,000-job burst put
// over 1,000 entries ahead of it before).
//
// The counts live in Inflight and are kept by the scripts that add entries
// to the stream (publish) and remove them (settle, and set aside through
// it), so they are exact while Redis keeps its data; losing it loses the
// stream, the counts and the held sets together, and the rebuild puts the
// members back in the due set. Recount repairs them from the stream should
// they ever drift.

// ReadSize is the entries a worker reads at once by default
// (TOCK_WORKER_BATCH); the unread limit is one such read per live worker,
// and one read while the scheduler has heard from none.
const ReadSize = 256

// lanesLua is the Lua the publish and settle scripts share: a member's lanes,
// their caps and counts, and publishing or holding a member. A script that
// includes it takes these keys first, all of one shard:
//
// KEYS[1] due sorted set
// KEYS[2] ready stream
// KEYS[3] inflight hash (Keys.Inflight): per lane, and "*" for all routed
// entries
// KEYS[4] caps hash (Keys.Caps): "*o", "*h" default caps, "*b" the borrow
// limit, "*u" the unread limit, "o:<owner>" an owner's own cap
// KEYS[5] held lanes set (Keys.HeldLanes)
// KEYS[6] held sets' key prefix (Keys.HeldPrefix): a lane's held set is
// KEYS[6] .. lane, in the same hash tag
// KEYS[7] released set (Keys.Released): entries whose places were given back
// before they were settled
// KEYS[8] flows hash (Keys.Flows): a flow lane's limits; its start log is the
// list KEYS[8] .. ':log:' .. lane, in the same hash tag
// KEYS[9] held flow lanes set (Keys.FlowsHeld)
// KEYS[10] flow wakes sorted set (Keys.FlowWakes): flow lanes to look at
// again, scored by when (a rate window reopens, a limit was raised, a key
// was resumed)
var lanesLua = strings.NewReplacer("__GROUP__", Group, "__READSIZE__", strconv.Itoa(ReadSize)).Replace(`
-- defaults are the recorded default caps per owner ('*o') and per host
-- ('*h'), the borrow limit ('*b') and the unread limit ('*u'), as strings
-- (false: none recorded), read in one HMGET when first needed; the publish
-- script sets them from what it records.
local defaults = nil
local function readDefaults()
  local v = redis.call('HMGET', KEYS[4], '*o', '*h', '*b', '*u')
  defaults = {['*o'] = v[1], ['*h'] = v[2], ['*b'] = v[3], ['*u'] = v[4]}
  return v
end
local function default(name)
  if defaults == nil then readDefaults() end
  return tonumber(defaults[name] or '')
end
local caps = {}
-- cap returns the most entries a lane may have in the stream: the owner's
-- own cap, or the recorded default for owners or hosts; unlimited when the
-- scheduler has recorded none yet.
local function cap(lane)
  local c = caps[lane]
  if c ~= nil then return c end
  local kind = string.sub(lane, 1, 1)
  if kind == 'o' then
    c = tonumber(redis.call('HGET', KEYS[4], lane) or '') or default('*o')
  else
    c = default('*h')
  end
  c = c or math.huge
  caps[lane] = c
  return c
end
-- used is a lane's entries in flight, read once per script and kept up as
-- the script counts (counted, below), which writes nothing until
-- flushCounts: a lane counted up and down many times in one script (a
-- batch of one owner's entries) is written once. Every script that counts
-- calls flushCounts before it returns. forgetCounts drops what was read.
local usedc, dirty = {}, {}
local function used(lane)
  local u = usedc[lane]
  if u == nil then
    u = tonumber(redis.call('HGET', KEYS[3], lane) or '0') or 0
    usedc[lane] = u
  end
  return u
end
local function counted(lane, by)
  local u = used(lane) + by
  if u <= 0 then u = 0 end
  usedc[lane] = u
  dirty[lane] = true
end
-- flushHolds writes the members held so far (hold, below), declared here
-- so that flushCounts, which every script calls before it returns, writes
-- them too.
local flushHolds
-- missing returns the distinct lanes of ls (nils and repeats allowed, up to
-- n) that cache has no entry for.
local function missing(ls, n, cache)
  local want, seen = {}, {}
  for i = 1, n do
    local l = ls[i]
    if l and cache[l] == nil and not seen[l] then
      seen[l] = true
      want[#want + 1] = l
    end
  end
  return want
end
-- hmget reads fields of hash key, one HMGET per 1,000, and hands each
-- field and its value to got.
local function hmget(key, fields, got)
  for i = 1, #fields, 1000 do
    local part = {unpack(fields, i, math.min(i + 999, #fields))}
    local vs = redis.call('HMGET', key, unpack(part))
    for k, f in ipairs(part) do got(f, vs[k]) end
  end
end
-- prefetchCounts reads the counts of lanes (ls, nils and repeats allowed,
-- up to n) not read yet, one HMGET per 1,000 lanes: a batch's lanes (an
-- owner, its hosts, "*") would otherwise pay an HGET each. One lane is
-- left to used.
local function prefetchCounts(ls, n)
  local want = missing(ls, n, usedc)
  if #want < 2 then return end
  hmget(KEYS[3], want, function(l, v) usedc[l] = tonumber(v or '0') or 0 end)
end
-- flushCounts writes the counts changed, all in one HSET and the lanes
-- left with none in one HDEL.
local function flushCounts()
  flushHolds()
  local set, del = {}, {}
  for lane in pairs(dirty) do
    local u = usedc[lane]
    if u <= 0 then
      del[#del + 1] = lane
    else
      set[#set + 1] = lane
      set[#set + 1] = u
    end
  end
  for i = 1, #set, 1000 do redis.call('HSET', KEYS[3], unpack(set, i, math.min(i + 999, #set))) end
  for i = 1, #del, 1000 do redis.call('HDEL', KEYS[3], unpack(del, i, math.min(i + 999, #del))) end
  dirty = {}
end
local function forgetCounts()
  flushCounts()
  usedc = {}
end
-- isHeld says whether lane has members held back (its held set exists),
-- looked up once per script and kept up as the script holds and unholds.
local heldc = {}
local function isHeld(lane)
  local h = heldc[lane]
  if h == nil then
    h = redis.call('EXISTS', KEYS[6] .. lane) == 1
    heldc[lane] = h
  end
  return h
end
-- waitingLanes is the held lanes set's size and, when it has at most two
-- members, the members: what canBorrow asks of every member it places,
-- read once per script and read again only after the set changed.
local waitingc = nil
local function waitingLanes()
  if waitingc == nil then
    local n = redis.call('SCARD', KEYS[5])
    local members = {}
    if n > 0 and n <= 2 then members = redis.call('SMEMBERS', KEYS[5]) end
    waitingc = {n = n, members = members}
  end
  return waitingc
end
-- isFlow says whether lane is a flow lane.
local function isFlow(lane) return string.byte(lane, 1) == 102 end
-- An owner's or flow key's held set is ordered by priority, then due
-- time: under a backlog the higher priority comes out first, whatever its
-- due time. Its score is the rank of the member's priority (its first five
-- digits, the inverted priority, clamped to the 2,048 ranks of priorities
-- -1024..1023) times 2^42, plus the due ms (2^42 ms reach 2109): exact in a
-- double, whose integers go to 2^53, and written with '%d' (Redis's Lua
-- formats it as a 64-bit integer: exact, and far cheaper than '%.0f'). A
-- host lane's held set, which every owner calling the host shares, stays
-- in due order, so that one owner's priority never passes another's jobs.
-- heldDue reads the due time back.
local heldSpan = 4398046511104
local function heldScore(lane, score, m)
  if string.byte(lane, 1) == 104 then return score end
  local rank = (tonumber(string.sub(m, 1, 5)) or 32767) - 32767 + 1023
  if rank < 0 then rank = 0 elseif rank > 2047 then rank = 2047 end
  return string.format('%d', rank * heldSpan + (tonumber(score) or 0))
end
local function heldDue(s)
  return string.format('%d', tonumber(s) % heldSpan)
end
-- hold puts member m, due at score, in lane's held set. A script's holds
-- are written per lane, many members to a ZADD (a burst holds most of its
-- members, one call of a script hundreds), by flushHolds: before anything
-- reads a held set (unhold) and before the script returns (flushCounts).
local holdq, holdLanes = {}, {}
flushHolds = function()
  for _, lane in ipairs(holdLanes) do
    local q = holdq[lane]
    for i = 1, #q, 1000 do
      redis.call('ZADD', KEYS[6] .. lane, unpack(q, i, math.min(i + 999, #q)))
    end
    holdq[lane] = nil
  end
  holdLanes = {}
end
local function hold(lane, score, m)
  local q = holdq[lane]
  if q == nil then
    q = {}
    holdq[lane] = q
    holdLanes[#holdLanes + 1] = lane
  end
  q[#q + 1] = heldScore(lane, score, m)
  q[#q + 1] = m
  -- A lane known to have members held is in its held lanes set already.
  if heldc[lane] then return end
  if isFlow(lane) then
    redis.call('SADD', KEYS[9], lane)
  elseif redis.call('SADD', KEYS[5], lane) == 1 then
    waitingc = nil
  end
  heldc[lane] = true
end
-- unmarkHeld takes lane, whose held set is gone, out of the held lanes set.
local function unmarkHeld(lane)
  if isFlow(lane) then
    redis.call('SREM', KEYS[9], lane)
  elseif redis.call('SREM', KEYS[5], lane) == 1 then
    waitingc = nil
  end
  heldc[lane] = false
end
local function hasHeld(lane) return isHeld(lane) end
-- unread is how many entries of the stream no worker has read yet, counted
-- once per script and kept up as it publishes.
local unreadCount = nil
local unreadLimit = nil
local function limitUnread()
  if unreadLimit == nil then unreadLimit = default('*u') or __READSIZE__ end
  return unreadLimit
end
local function unread()
  if unreadCount == nil then
    local p = redis.pcall('XPENDING', KEYS[2], '__GROUP__')
    local pending = 0
    if type(p) == 'table' and p.err == nil then pending = tonumber(p[1]) or 0 end
    unreadCount = redis.call('XLEN', KEYS[2]) - pending
  end
  return unreadCount
end
-- canBorrow says whether a member of lanes ol and hl may be published past
-- their caps: lending is on, no other lane waits, the shard's routed entries
-- in flight are under the borrow limit and the workers keep up.
local borrowLimit = nil
local function canBorrow(ol, hl)
  if borrowLimit == nil then borrowLimit = default('*b') or 0 end
  if borrowLimit <= 0 or used('*') >= borrowLimit then return false end
  local waiting = waitingLanes()
  if waiting.n > 2 then return false end
  for _, lane in ipairs(waiting.members) do
    if lane ~= ol and lane ~= hl then return false end
  end
  return unread() < limitUnread()
end
-- deep says whether owner lane ol must wait for the workers to read: it has
-- the unread limit in flight already and as much waits unread in the stream,
-- so another entry of it would only queue ahead of other owners' next ones.
local function deep(ol)
  local l = limitUnread()
  return used(ol) >= l and unread() >= l
end
-- lanes returns a member's owner lane, host lane (nil if none) and flow
-- lane (nil if none); nil for a member without a route. A member without a
-- flow key (the common case) is matched once; one prefetchMembers matched
-- already is not matched again. A backfill's member has a ninth part after
-- its flow lane (empty for none): the backfill, which routes nothing.
local lanesc = {}
local function lanes(m)
  local c = lanesc[m]
  if c then return c[1], c[2], c[3] end
  local o, h = string.match(m, '^[^:]*:[^:]*:[^:]*:[^:]*:[^:]*:([^:]+):([^:]*)$')
  local f = nil
  if not o then
    o, h, f = string.match(m, '^[^:]*:[^:]*:[^:]*:[^:]*:[^:]*:([^:]+):([^:]*):([^:]+)$')
    if not o then
      o, h, f = string.match(m, '^[^:]*:[^:]*:[^:]*:[^:]*:[^:]*:([^:]+):([^:]*):([^:]*):[^:]+$')
      if not o then return nil, nil, nil end
      if f == '' then f = nil end
    end
    if f then f = 'f:' .. f end
  end
  if h == '' then return 'o:' .. o, nil, f end
  return 'o:' .. o, 'h:' .. h, f
end
local function release(lane) counted(lane, -1) end
-- free gives back the places of an entry of lanes ol, hl and fl.
local function free(ol, hl, fl)
  release(ol)
  if hl then release(hl) end
  if fl then release(fl) end
  release('*')
end
-- entryLanes returns the lanes of the stream entry with id, and whether the
-- entry is in the stream.
local function entryLanes(id)
  local e = redis.call('XRANGE', KEYS[2], id, id)
  if #e == 0 then return nil, nil, nil, false end
  local f = e[1][2]
  for j = 1, #f, 2 do
    if f[j] == 'm' then
      local ol, hl, fl = lanes(f[j + 1])
      return ol, hl, fl, true
    end
  end
  return nil, nil, nil, true
end
-- Flow lanes ("f:<lane id>", job.FlowLane) carry an owner's own limits on
-- a key: attempts in flight (counted in KEYS[3] like any lane, never
-- borrowed past), starts per period (a log of the last starts, newest
-- first, at most the limit's count long), and a pause. Their held sets are
-- listed in KEYS[9], not KEYS[5]: a key waiting on its own limits is no
-- reason for others to stop borrowing idle slots.
local clock = nil
local function nowMs()
  if clock == nil then
    local t = redis.call('TIME')
    clock = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  end
  return clock
end
local flowc = {}
-- flowConf returns a flow lane's limits: {c = most in flight, n = starts
-- per ms milliseconds (0: none), p = paused}; none known is no limit (the
-- scheduler writes what Postgres holds at every loader round).
local function parseFlow(v)
  local f = {c = math.huge, n = 0, ms = 0, p = false}
  if v then
    local c, n, ms, p = string.match(v, '^(%d+)|(%d+)|(%d+)|(%d)$')
    if c then
      if tonumber(c) > 0 then f.c = tonumber(c) end
      f.n, f.ms, f.p = tonumber(n), tonumber(ms), p == '1'
    end
  end
  return f
end
local function flowConf(lane)
  local f = flowc[lane]
  if f == nil then
    f = parseFlow(redis.call('HGET', KEYS[8], lane))
    flowc[lane] = f
  end
  return f
end
-- prefetchFlows reads the counts and the limits of many flow lanes (fls,
-- nils and repeats allowed, up to n), one HMGET of each per 1,000 lanes: a
-- batch spread over many keys (a burst over 10,000 customers) would
-- otherwise pay two HGETs per key.
local function prefetchFlows(fls, n)
  prefetchCounts(fls, n)
  hmget(KEYS[8], missing(fls, n, flowc), function(fl, v) flowc[fl] = parseFlow(v) end)
end
-- prefetchMembers reads, for members (every other item of ms, as ZRANGE
-- ... WITHSCORES gives them), the counts of their lanes and the limits of
-- their flow lanes, a few HMGETs for the lot, and keeps their lanes for
-- lanes, so that each is matched once.
local function prefetchMembers(ms)
  local ls, fls, n, nf = {}, {}, 0, 0
  for i = 1, #ms, 2 do
    local ol, hl, fl = lanes(ms[i])
    lanesc[ms[i]] = {ol, hl, fl}
    if ol then
      ls[n + 1] = ol
      ls[n + 2] = hl
      n = n + 2
    end
    if fl then
      nf = nf + 1
      fls[nf] = fl
    end
  end
  if nf > 0 then prefetchFlows(fls, nf) end
  if n > 0 then
    ls[n + 1] = '*'
    prefetchCounts(ls, n + 1)
  end
end
-- flowLead is how far ahead of its start a member may be published (the
-- publish script's lead; 0 elsewhere): a member whose key's rate lets it
-- start within it is published with that start, which its worker waits
-- for, so that the starts keep the rate to the millisecond whatever the
-- time a read takes.
local flowLead = 0
-- flowOpen says whether flow lane fl may start a member due at score now,
-- and when it starts: its due time, now, or the moment its key's rate lets
-- it, if that comes within flowLead. When the rate stops it, it notes when
-- to look again.
local function flowOpen(fl, score)
  local f = flowConf(fl)
  if f.p or f.shut or used(fl) >= f.c then return false end
  local at = math.max(nowMs(), tonumber(score) or 0)
  if f.n > 0 then
    local oldest = redis.call('LINDEX', KEYS[8] .. ':log:' .. fl, f.n - 1)
    if oldest then
      local free = tonumber(oldest) + f.ms
      if free > at then
        if free > nowMs() + flowLead then
          redis.call('ZADD', KEYS[10], free - flowLead, fl)
          f.shut = true -- for the rest of this script: its clock stands still
          return false
        end
        at = free
      end
    end
  end
  return true, at
end
-- flowRoom is how many more members flow lane fl may have in flight now,
-- at most 64 (a lane without a concurrency: 64).
local function flowRoom(fl)
  local f = flowConf(fl)
  if f.c == math.huge then return 64 end
  return math.max(math.min(f.c - used(fl), 64), 1)
end
-- flowStarted counts a member of flow lane fl, starting at at, published.
local function flowStarted(fl, at)
  counted(fl, 1)
  local f = flowConf(fl)
  if f.n > 0 then
    local log = KEYS[8] .. ':log:' .. fl
    redis.call('LPUSH', log, at)
    redis.call('LTRIM', log, 0, f.n - 1)
    redis.call('PEXPIRE', log, f.ms + 1000)
  end
end
-- lastDelivered returns the id of the last entry the workers' group was
-- given, or nil without the group: every entry after it is unread.
local function lastDelivered()
  local groups = redis.pcall('XINFO', 'GROUPS', KEYS[2])
  if type(groups) ~= 'table' or groups.err then return nil end
  for _, g in ipairs(groups) do
    local name, last = nil, nil
    for j = 1, #g, 2 do
      if g[j] == 'name' then name = g[j + 1] elseif g[j] == 'last-delivered-id' then last = g[j + 1] end
    end
    if name == '__GROUP__' then return last end
  end
  return nil
end
-- makeWay puts the unread entries of other owners with a read's worth or
-- more in flight back in their held sets, at their due times, so that owner
-- lane ol's next entry is read before them: a burst that fills the stream's
-- unread part does not make a newcomer wait for it. Once per script, and
-- only when others have a read's worth in flight and a quarter of a read
-- waits unread.
local madeWay, movedAside = false, false
local function makeWay(ol)
  if madeWay then return end
  madeWay = true
  if used('*') - used(ol) < __READSIZE__ or unread() < __READSIZE__ / 4 then return end
  local last = lastDelivered()
  if not last then return end
  local deepLanes = {}
  for _, e in ipairs(redis.call('XRANGE', KEYS[2], '(' .. last, '+', 'COUNT', 2 * limitUnread())) do
    local m, d = nil, nil
    local f = e[2]
    for j = 1, #f, 2 do
      if f[j] == 'm' then m = f[j + 1] elseif f[j] == 'd' then d = f[j + 1] end
    end
    local eol, ehl, efl = nil, nil, nil
    if m and d then eol, ehl, efl = lanes(m) end
    if eol and eol ~= ol then
      if deepLanes[eol] == nil then deepLanes[eol] = used(eol) >= __READSIZE__ end
      if deepLanes[eol] then
        redis.call('XDEL', KEYS[2], e[1])
        free(eol, ehl, efl)
        -- The key's room goes to its next waiting member, at the end of
        -- this call (wakeFlows).
        if efl then redis.call('ZADD', KEYS[10], 0, efl) end
        hold(eol, d, m)
        unreadCount = unread() - 1
        movedAside = true
      end
    end
  end
end
-- place publishes member m, due at score, or holds it in the first of its
-- lanes that is at its cap, unless it may borrow: its flow lane first (no
-- borrowing there), then its owner and host lanes. A new member (not
-- fromHeld) of a lane that already has members held goes behind them; one
-- that comes out of its flow lane's held set (fromHeld 'f') has passed its
-- flow's limits already, and its entry says how long it waited there ('t',
-- in ms). It returns true when it published.
local function place(m, score, fromHeld, at, ol, hl, fl)
  if not ol then ol, hl, fl = lanes(m) end
  local capped = false
  if fl and fromHeld ~= 'f' then
    -- A new member goes behind its key's waiting ones; one back from an
    -- owner's or host's held set passed its key once already, and takes
    -- the key's room if it has some (else nothing would fill that room).
    local open = false
    if fromHeld or not isHeld(fl) then open, at = flowOpen(fl, score) end
    if not open then
      hold(fl, score, m)
      return false
    end
  end
  if ol then
    local full, wait = nil, false
    if used(ol) >= cap(ol) then
      full = ol
    elseif hl and used(hl) >= cap(hl) then
      full = hl
    end
    if full then
      wait = (not fromHeld and hasHeld(full)) or not canBorrow(ol, hl)
    elseif deep(ol) or (not fromHeld and hasHeld(ol)) then
      full, wait = ol, true
    end
    if wait then
      hold(full, score, m)
      return false
    end
    if used(ol) < __READSIZE__ then makeWay(ol) end
    counted(ol, 1)
    if hl then counted(hl, 1) end
    counted('*', 1)
    capped = used(ol) >= cap(ol) or (hl ~= nil and used(hl) >= cap(hl))
  end
  local waited = 0
  if fl then
    at = at or math.max(nowMs(), tonumber(score) or 0)
    flowStarted(fl, at)
    waited = at - (tonumber(score) or 0)
    capped = capped or used(fl) >= flowConf(fl).c
  end
  -- A member that took the last place in a lane (or one past it, borrowed)
  -- is marked ('c'): its worker gives the place back as its attempt ends
  -- (Queue.Release), for the next member waiting on it. Any other place
  -- comes back when the attempt is settled, a round trip fewer.
  if waited > 0 and capped then
    redis.call('XADD', KEYS[2], '*', 'm', m, 'd', score, 't', waited, 'c', 1)
  elseif waited > 0 then
    redis.call('XADD', KEYS[2], '*', 'm', m, 'd', score, 't', waited)
  elseif capped then
    redis.call('XADD', KEYS[2], '*', 'm', m, 'd', score, 'c', 1)
  else
    redis.call('XADD', KEYS[2], '*', 'm', m, 'd', score)
  end
  if unreadCount ~= nil then unreadCount = unreadCount + 1 end
  return true
end
-- unhold takes up to n of a lane's held members, highest priority and then
-- oldest first (heldScore), while the lane has room or may borrow, and
-- places each: published, or held under its other lane if that one is
-- full. It returns how many it published.
--
-- A lane without a held set is left at once (the common case: one lookup
-- per lane and script). The members are read a few at first, then twice as
-- many at each read (up to 256), one more than it may take each time, so
-- that the last one is known: the held lanes set loses the lane as its held
-- set empties.
local function unhold(lane, n)
  if not isHeld(lane) then return 0 end
  flushHolds()
  local key = KEYS[6] .. lane
  local published, taken, chunk = 0, 0, 4
  -- The members taken from one read leave the held set in one ZREM, before
  -- the next read. A member placed back in this lane meanwhile (place)
  -- waits in holdq, written after that ZREM.
  local gone = {}
  local function drop()
    if #gone > 0 then
      redis.call('ZREM', key, unpack(gone))
      gone = {}
    end
    return published
  end
  while taken < n do
    local want = math.min(chunk, n - taken)
    chunk = math.min(chunk * 2, 256)
    local top = redis.call('ZRANGE', key, 0, want, 'WITHSCORES')
    if not isFlow(lane) then prefetchMembers(top) end
    local count = #top / 2
    if count == 0 then
      unmarkHeld(lane)
      return published
    end
    for i = 1, math.min(want, count) do
      local m = top[2 * i - 1]
      local ol, hl, fl = lanes(m)
      local due = heldDue(top[2 * i])
      local from, at = true, nil
      if isFlow(lane) then
        local open
        open, at = flowOpen(lane, due)
        if not open then return drop() end
        from = 'f'
      elseif used(lane) >= cap(lane) then
        if not canBorrow(ol, hl) then return drop() end
      elseif ol == lane and deep(ol) then
        return drop()
      end
      gone[#gone + 1] = m
      taken = taken + 1
      if i == count then unmarkHeld(lane) end
      if place(m, due, from, at, ol, hl, fl) then published = published + 1 end
    end
    drop()
    if count <= want then return published end
  end
  return published
end
-- sweepHeld unholds up to n members of each of lanes (members of the held
-- lanes set), oldest first, and drops from the set a lane whose held set is
-- gone; it returns how many it published.
local function sweepHeld(lanes, n)
  local published = 0
  for _, lane in ipairs(lanes) do
    if published >= n then break end
    if isHeld(lane) then
      published = published + unhold(lane, n - published)
    else
      unmarkHeld(lane)
    end
  end
  return published
end
-- wakeFlows unholds, up to n members in all, the flow lanes whose wake time
-- has come (a rate window reopened, a limit was raised, a key resumed); a
-- lane still closed notes its next wake itself. It returns how many it
-- published.
local function wakeFlows(n)
  local published = 0
  local due = redis.call('ZRANGEBYSCORE', KEYS[10], '-inf', nowMs(), 'LIMIT', 0, 64)
  if #due == 0 then return 0 end
  redis.call('ZREM', KEYS[10], unpack(due))
  for _, lane in ipairs(due) do
    local budget = n - published
    if budget <= 0 then
      redis.call('ZADD', KEYS[10], 0, lane)
    else
      local got = unhold(lane, budget)
      published = published + got
      -- Out of budget with members left: the next call goes on.
      if got >= budget and isHeld(lane) then redis.call('ZADD', KEYS[10], 0, lane) end
    end
  end
  return published
end
-- freeAndUnhold gives back the places of the entries of lanes (a list of
-- {ol, hl, fl}) and hands each place to the oldest member held for it:
-- the flow lane's, then the host lane's, then the owner lane's.
--
-- Each lane is unheld once, for as many places as were freed in it: a
-- batch of one owner's entries (a burst's) reads its held set a few times,
-- not once per entry.
local function freeAndUnhold(freed)
  local fls, ls = {}, {'*'}
  for i, l in ipairs(freed) do
    fls[i] = l[3]
    ls[2 * i], ls[2 * i + 1] = l[1], l[2]
  end
  prefetchFlows(fls, #freed)
  if #freed > 0 then prefetchCounts(ls, 2 * #freed + 1) end
  local order, places = {}, {}
  local function note(lane)
    if places[lane] == nil then
      places[lane] = 0
      order[#order + 1] = lane
    end
    places[lane] = places[lane] + 1
  end
  for _, l in ipairs(freed) do
    free(l[1], l[2], l[3])
    if l[3] then note(l[3]) end
    if l[2] then note(l[2]) end
    note(l[1])
  end
  for _, lane in ipairs(order) do
    if isFlow(lane) then
      -- All the room the key has: a member it let out earlier may have
      -- been held by its owner or host since, leaving room nobody took.
      unhold(lane, flowRoom(lane))
    else
      unhold(lane, places[lane])
    end
  end
end
`)

// Caps are the default caps on attempts in flight that the publisher records
// for its shard: per owner (unless the owner has one of their own) and per
// target host. Zero leaves what is recorded.
type Caps struct {
	Owner int
	Host  int
	// Borrow is the routed entries in flight under which a lane at its cap
	// may still be published while no other lane waits: the workers' slots
	// less what is kept for newcomers. Zero leaves what is recorded; a
	// negative value records 0, which lends nothing.
	Borrow int
	// Unread is how many entries may wait unread in the stream before an
	// owner with as many in flight is held back, and a lane at its cap stops
	// borrowing: one read (ReadSize) per live worker, as every worker reads
	// every shard. Zero leaves what is recorded (ReadSize if nothing is).
	Unread int
}

// PerShard divides caps for the whole deployment among n shards: an owner's
// jobs spread evenly over them, so each shard holds its share, rounded up.
func (c Caps) PerShard(n int) Caps {
	n = max(n, 1)
	div := func(v int) int {
		if v <= 0 {
			return 0
		}
		return (v + n - 1) / n
	}
	borrow := c.Borrow
	if borrow > 0 {
		borrow = div(borrow)
	}
	return Caps{Owner: div(c.Owner), Host: div(c.Host), Borrow: borrow, Unread: c.Unread}
}

func (k Keys) laneKeys() []string {
	return []string{k.Due(), k.Ready(), k.Inflight(), k.Caps(), k.HeldLanes(), k.HeldPrefix(), k.Released(),
		k.Flows(), k.FlowsHeld(), k.FlowWakes()}
}

// laneKeyCount is how many keys laneKeys gives: a script's own keys follow.
const laneKeyCount = 10

// heldScript counts the members held back in one shard.
//
// KEYS[1] held lanes set
// KEYS[2] held sets' key prefix
// Returns the number of held members
var heldScript = redis.NewScript(`
local n = 0
for _, lane in ipairs(redis.call('SMEMBERS', KEYS[1])) do
  n = n + redis.call('ZCARD', KEYS[2] .. lane)
end
return n
`)

// recountScript sets the shard's counts of entries in flight to what the
// ready stream holds, less the entries whose places were given back already
// (the released set, which it also rids of entries no longer in the stream),
// for when they drifted (a counted entry that was deleted some other way),
// then moves what an older release held back into this release's held sets
// (a rolling upgrade), and publishes what the corrected counts make room
// for. It does nothing
// when the stream holds more than ARGV[1] entries: a count of that many
// entries would block Redis for too long.
//
// KEYS[1..10] as lanesLua
// KEYS[11] an older release's held sets' key prefix (Keys.LegacyHeldPrefix)
// ARGV[1] most entries to count
// Returns the number of entries counted, or -1 when there were too many
var recountScript = redis.NewScript(lanesLua + `
if redis.call('XLEN', KEYS[2]) > tonumber(ARGV[1]) then return -1 end
local counts = {}
local n = 0
local present = {}
for _, e in ipairs(redis.call('XRANGE', KEYS[2], '-', '+')) do
  n = n + 1
  present[e[1]] = true
  if redis.call('SISMEMBER', KEYS[7], e[1]) == 0 then
    local f = e[2]
    for j = 1, #f, 2 do
      if f[j] == 'm' then
        local ol, hl, fl = lanes(f[j + 1])
        if ol then
          counts[ol] = (counts[ol] or 0) + 1
          counts['*'] = (counts['*'] or 0) + 1
        end
        if hl then counts[hl] = (counts[hl] or 0) + 1 end
        if fl then counts[fl] = (counts[fl] or 0) + 1 end
        break
      end
    end
  end
end
for _, id in ipairs(redis.call('SMEMBERS', KEYS[7])) do
  if not present[id] then redis.call('SREM', KEYS[7], id) end
end
redis.call('DEL', KEYS[3])
for lane, c in pairs(counts) do redis.call('HSET', KEYS[3], lane, c) end
forgetCounts()
-- An older release's held sets (KEYS[11] .. lane, scored by due time) go
-- into this release's, up to 1,000 members a lane and call.
local function adopt(lane)
  local old = redis.call('ZPOPMIN', KEYS[11] .. lane, 1000)
  for i = 1, #old, 2 do hold(lane, old[i + 1], old[i]) end
end
for _, lane in ipairs(redis.call('SMEMBERS', KEYS[5])) do
  adopt(lane)
  sweepHeld({lane}, 1000)
end
for _, lane in ipairs(redis.call('SRANDMEMBER', KEYS[9], 1000)) do
  adopt(lane)
  sweepHeld({lane}, 1000)
end
flushCounts()
return n
`)

// maxRecount is the longest stream Recount counts.
const maxRecount = 100_000

// Recount sets every shard's counts of attempts in flight to what its stream
// holds, and publishes held members the corrected counts make room for. The
// scheduler's reconciler runs it: the counts are kept exactly by the scripts,
// and this repairs them should anything else ever remove an entry.
func (r *Queue) Recount(ctx context.Context) error {
	for _, q := range r.shards {
		if err := recountScript.Run(ctx, r.rdb, append(q.keys.laneKeys(), q.keys.LegacyHeldPrefix()), maxRecount).Err(); err != nil {
			return fmt.Errorf("recount in flight: %w", err)
		}
	}
	return nil
}

// SetOwnerCaps records the caps of owners with a limit of their own (the
// user's max_running, for the whole deployment) in every shard, divided
// among the shards, and forgets those of owners not in caps. A cap of 0 is
// no cap of their own.
func (r *Queue) SetOwnerCaps(ctx context.Context, caps map[uuid.UUID]int) error {
	n := len(r.shards)
	want := make(map[string]string, len(caps))
	for owner, c := range caps {
		if c > 0 {
			want[OwnerLane(job.OwnerKey(owner))] = strconv.Itoa(Caps{Owner: c}.PerShard(n).Owner)
		}
	}
	for _, q := range r.shards {
		have, err := r.rdb.HGetAll(ctx, q.keys.Caps()).Result()
		if err != nil {
			return fmt.Errorf("owner caps: %w", err)
		}
		pipe := r.rdb.Pipeline()
		for field, v := range have {
			if strings.HasPrefix(field, "o:") && want[field] != v {
				pipe.HDel(ctx, q.keys.Caps(), field)
			}
		}
		for field, v := range want {
			if have[field] != v {
				pipe.HSet(ctx, q.keys.Caps(), field, v)
			}
		}
		if pipe.Len() == 0 {
			continue
		}
		if _, err := pipe.Exec(ctx); err != nil {
			return fmt.Errorf("owner caps: %w", err)
		}
	}
	return nil
}

// SetOwnerCap records one owner's cap of their own (0: none) in every shard,
// in one round trip, as SetOwnerCaps does for all of them.
func (r *Queue) SetOwnerCap(ctx context.Context, owner uuid.UUID, cap int) error {
	field := OwnerLane(job.OwnerKey(owner))
	pipe := r.rdb.Pipeline()
	for _, q := range r.shards {
		if cap > 0 {
			pipe.HSet(ctx, q.keys.Caps(), field, Caps{Owner: cap}.PerShard(len(r.shards)).Owner)
		} else {
			pipe.HDel(ctx, q.keys.Caps(), field)
		}
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("owner cap: %w", err)
	}
	return nil
}

// InFlight reads how many attempts of an owner are in flight, over every
// shard, and how many of its due members are held back.
func (r *Queue) InFlight(ctx context.Context, owner uuid.UUID) (inFlight, held int64, err error) {
	lane := OwnerLane(job.OwnerKey(owner))
	pipe := r.rdb.Pipeline()
	var counts []*redis.StringCmd
	var helds []*redis.IntCmd
	for _, q := range r.shards {
		counts = append(counts, pipe.HGet(ctx, q.keys.Inflight(), lane))
		helds = append(helds, pipe.ZCard(ctx, q.keys.Held(lane)))
	}
	_, _ = pipe.Exec(ctx)
	for i := range counts {
		if e := counts[i].Err(); e != nil && !errors.Is(e, redis.Nil) {
			return 0, 0, fmt.Errorf("owner in flight: %w", e)
		}
		if e := helds[i].Err(); e != nil {
			return 0, 0, fmt.Errorf("owner in flight: %w", e)
		}
		n, _ := counts[i].Int64()
		inFlight += n
		held += helds[i].Val()
	}
	return inFlight, held, nil
}

// releaseScript gives back the places of entries whose attempts ended, before
// they are settled: the group commit that records outcomes takes a while, and
// an owner's next attempt should not wait for it. Each place goes at once to
// the oldest held member of the host lane, then of the owner lane, as
// settling does. A released entry is noted in the released set, so that its
// settlement, a second release (its worker died after releasing, and
// another ran it again) and a recount do not count it again; an entry
// already settled is left alone.
//
// KEYS[1..10] as lanesLua
// ARGV the entries' ids
// Returns the number of places given back
var releaseScript = redis.NewScript(lanesLua + `
local n = 0
local freed = {}
for i = 1, #ARGV do
  local ol, hl, fl = entryLanes(ARGV[i])
  if ol and redis.call('SADD', KEYS[7], ARGV[i]) == 1 then
    n = n + 1
    freed[n] = {ol, hl, fl}
  end
end
freeAndUnhold(freed)
flushCounts()
return n
`)

// Release gives back, per shard, the places in their lanes of entries whose
// attempts ended (their stream ids), in one round trip. Settling them later
// only acknowledges them.
func (r *Queue) Release(ctx context.Context, ids map[int][]string) error {
	var calls []scriptCall
	n := 0
	for i, shard := range ids {
		if len(shard) == 0 {
			continue
		}
		args := make([]any, len(shard))
		for j, id := range shard {
			args[j] = id
		}
		calls = append(calls, scriptCall{releaseScript, r.shards[i].keys.laneKeys(), args})
		n += len(shard)
	}
	if len(calls) == 0 {
		return nil
	}
	if _, err := runScripts(ctx, r.rdb, calls); err != nil {
		return fmt.Errorf("release %d places: %w", n, err)
	}
	return nil
}

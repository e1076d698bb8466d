// Package queue is tock's Redis layer: the due sorted set, the ready stream and
// its consumer group, and the Lua scripts that move occurrences between them.
// Redis is a rebuildable cache and transport; Postgres stays the truth.
package queue

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/google/uuid"
)

// Group is the consumer group every worker reads the ready stream through.
const Group = "workers"

// Keys builds every Redis key tock uses, and nothing else does. All keys of one
// shard carry the shard's hash tag, so each script's keys live in one Redis
// Cluster slot; the prefix isolates deployments (and tests) from each other.
type Keys struct {
	Prefix string
	Shard  int
	// Tag is the shard's hash tag, without braces; empty means s<Shard>.
	// A queue of several shards sets it with ShardTag.
	Tag string
}

func (k Keys) key(name string) string {
	tag := k.Tag
	if tag == "" {
		tag = "s" + strconv.Itoa(k.Shard)
	}
	return k.Prefix + ":{" + tag + "}:" + name
}

// ShardsKey holds a deployment's shard count. It has no hash tag: one key,
// outside every shard, that every service of the deployment reads.
func ShardsKey(prefix string) string { return prefix + ":shards" }

// The Redis error replies tock recognises, by their first word
// (redis.HasErrorPrefix).
const (
	// errNoGroup: the stream, or its consumer group, does not exist.
	errNoGroup = "NOGROUP"
	// errBusyGroup: the consumer group exists already.
	errBusyGroup = "BUSYGROUP"
)

// clusterSlots is how many hash slots a Redis Cluster has.
const clusterSlots = 16384

// ShardTag is the hash tag of shard i of n: s<i>, or s<i>.<k> with the
// smallest k that puts its slot in the i-th of n equal slot ranges. A
// cluster's masters own equal ranges of slots unless resharded, so n shards
// spread over m masters as evenly as n allows, and exactly when m divides n
// (plain s<i> tags would put 4 of 6 shards on one master of 3). One shard
// keeps the tag s0.
func ShardTag(i, n int) string {
	base := "s" + strconv.Itoa(i)
	if n <= 1 {
		return base
	}
	lo, hi := i*clusterSlots/n, (i+1)*clusterSlots/n
	for k := 0; ; k++ {
		tag := base
		if k > 0 {
			tag += "." + strconv.Itoa(k)
		}
		if s := Slot(tag); s >= lo && s < hi {
			return tag
		}
	}
}

// Slot is the Redis Cluster hash slot of a key (of a tag, for a key with
// one): CRC-16/XMODEM modulo 16384, as the cluster specification defines it.
func Slot(key string) int {
	if open := strings.IndexByte(key, '{'); open >= 0 {
		if end := strings.IndexByte(key[open+1:], '}'); end > 0 {
			key = key[open+1 : open+1+end]
		}
	}
	var crc uint16
	for i := 0; i < len(key); i++ {
		crc ^= uint16(key[i]) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return int(crc) % clusterSlots
}

// Due is the sorted set of occurrences waiting for their time: score = due time
// in unix ms, member = job.Occurrence.Member.
func (k Keys) Due() string { return k.key("due") }

// Ready is the stream of due occurrences that workers consume.
func (k Keys) Ready() string { return k.key("ready") }

// Dead is the stream where entries that cannot be decoded are set aside.
func (k Keys) Dead() string { return k.key("dead") }

// Run is a job's run hash: its attempts running, its fence and its overlap
// holds (see attempt.go). It lives in the job's shard.
func (k Keys) Run(job uuid.UUID) string { return k.key("run:" + job.String()) }

// Leases scores every attempt running in the shard by the end of its lease.
func (k Keys) Leases() string { return k.key("leases") }

// Inflight is the hash of attempts in flight per lane: field "o:<owner>" or
// "h:<target>" (see job.OwnerKey, job.TargetKey), value the entries of that
// owner or host in the ready stream, read or not. The publish and settle
// scripts keep it; it is what the caps are held against.
func (k Keys) Inflight() string { return k.key("inflight") }

// Caps is the hash of the caps on attempts in flight: "*o" and "*h", the
// deployment's default per owner and per host (the scheduler records them),
// and "o:<owner>" for an owner with a limit of their own (max_running).
// Values are per shard.
func (k Keys) Caps() string { return k.key("caps") }

// Released is the set of stream entry ids whose places in their lanes were
// given back when their attempts ended, before they were settled (see
// Queue.Release).
func (k Keys) Released() string { return k.key("released") }

// HeldLanes is the set of lanes that have members held back.
func (k Keys) HeldLanes() string { return k.key("held") }

// HeldPrefix is what a lane's held set's key starts with; the scripts append
// the lane, which keeps the shard's hash tag (see Held).
func (k Keys) HeldPrefix() string { return k.key("heldp:") }

// Held is the sorted set of a lane's members that are due but held back
// because the lane was at its cap, scored by priority and then due time
// (heldScore in lanesLua; a host lane's by due time alone, as in Due).
func (k Keys) Held(lane string) string { return k.HeldPrefix() + lane }

// LegacyHeldPrefix is what an older release's held sets' keys start with:
// scored by due time alone, which that release reads back as the due time.
// The new sets have a prefix of their own so that an older process of a
// rolling upgrade never reads a priority score as a due time; the leader's
// recount moves what older processes held into them (Recount).
func (k Keys) LegacyHeldPrefix() string { return k.key("held:") }

// Flows is the hash of flow keys' limits, per flow lane ("f:<lane id>", see
// job.FlowLane): "<concurrency>|<rate count>|<rate period ms>|<paused 0 or
// 1>", 0 for no limit. A flow lane's start log, the list of its last starts
// in unix ms for its rate, is Flows() + ":log:" + lane.
func (k Keys) Flows() string { return k.key("flows") }

// FlowsHeld is the set of flow lanes that have members held back.
func (k Keys) FlowsHeld() string { return k.key("flows-held") }

// FlowWakes is the sorted set of flow lanes the publisher looks at again,
// scored by when: a rate window that reopens, a limit raised, a resume.
func (k Keys) FlowWakes() string { return k.key("flow-wakes") }

// FlowLog is a flow lane's start log.
func (k Keys) FlowLog(lane string) string { return k.Flows() + ":log:" + lane }

// Workers is the sorted set of worker instances (home shard): member = name,
// score = the unix ms of its last heartbeat; WorkerSlots holds each one's
// slots. The scheduler derives the default caps from the live ones' total.
func (k Keys) Workers() string { return k.key("workers") }

// WorkerSlots is the hash of each worker's slots (TOCK_WORKER_CONCURRENCY).
func (k Keys) WorkerSlots() string { return k.key("worker-slots") }

// Aborts is the sorted set of abort requests (home shard): member = a job id
// or "owner:<id>", score = the unix ms of the request. Workers poll it and
// stop the attempts it names.
func (k Keys) Aborts() string { return k.key("aborts") }

// LoaderLock is the lock held by the scheduler instance that loads from Postgres.
func (k Keys) LoaderLock() string { return k.key("loader-lock") }

// Schedulers is the sorted set of scheduler instances: member = name, score =
// the unix ms of its last heartbeat. The dashboard's system page reads it.
func (k Keys) Schedulers() string { return k.key("schedulers") }

// LoaderHolder names the scheduler instance that holds the loader lock; it
// expires with the lock unless renewed.
func (k Keys) LoaderHolder() string { return k.key("loader-holder") }

// Marker exists while Redis still holds what tock put there; its absence tells
// the reconciler that Redis lost its data (FLUSHALL, a restart without
// persistence) and the window must be rebuilt from Postgres. Its value is the
// load mark (store.LoadMark) of the last claim written to it: a value below
// the committed mark tells that Redis lost a claim's writes but kept the
// marker (a failover to a replica that lagged).
func (k Keys) Marker() string { return k.key("marker") }

// Dashboards is the set of live dashboards' process numbers (home shard),
// each with a beat key, DashboardBeat, that expires when it stops beating.
func (k Keys) Dashboards() string { return k.key("dashboards") }

// DashboardBeat is the key that lives while dashboard n beats.
func (k Keys) DashboardBeat(n int32) string { return k.key("dashboard:" + strconv.Itoa(int(n))) }

// RateKey is the key of one user's rate-limit bucket ("requests", "jobs").
// It belongs to no shard: each limiter call is a script on this one key, so it
// may live in any Redis Cluster slot, and users spread over the slots.
func RateKey(prefix, bucket string, user fmt.Stringer) string {
	return fmt.Sprintf("%s:{u:%s}:rate:%s", prefix, user, bucket)
}

// VouchedKey marks a credential minted a moment ago (an API key just
// created, a dashboard session just opened), named by the SHA-256 of the
// token, so that every dashboard, not only the one that minted it, lets it
// past an address blocked for bad tokens before it has seen it succeed. It
// expires on its own, as a dashboard's memory of a success does. Like
// RateKey it belongs to no shard: each use is one command on this one key,
// so it may live in any Redis Cluster slot. It holds no secret: the token
// is 32 random bytes, whose SHA-256 opens nothing.
func VouchedKey(prefix string, sum [32]byte) string {
	return fmt.Sprintf("%s:{v:%x}:vouched", prefix, sum)
}

// OwnerLane and TargetLane name the lanes of an owner and of a target host
// in Inflight, Caps and Held.
func OwnerLane(owner string) string { return "o:" + owner }

// TargetLane: see OwnerLane.
func TargetLane(target string) string { return "h:" + target }

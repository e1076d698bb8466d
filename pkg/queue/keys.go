// Package queue is tock's Redis layer: the due sorted set, the ready stream and
// its consumer group, and the Lua scripts that move occurrences between them.
// Redis is a rebuildable cache and transport; Postgres stays the truth.
package queue

import "fmt"

// Group is the consumer group every worker reads the ready stream through.
const Group = "workers"

// Keys builds every Redis key tock uses, and nothing else does. All keys of one
// shard carry the shard's hash tag, {s<N>}, so each script's keys live in one
// Redis Cluster slot; the prefix isolates deployments (and tests) from each other.
type Keys struct {
	Prefix string
	Shard  int
}

func (k Keys) key(name string) string { return fmt.Sprintf("%s:{s%d}:%s", k.Prefix, k.Shard, name) }

// Due is the sorted set of occurrences waiting for their time: score = due time
// in unix ms, member = job.Occurrence.Member.
func (k Keys) Due() string { return k.key("due") }

// Ready is the stream of due occurrences that workers consume.
func (k Keys) Ready() string { return k.key("ready") }

// Dead is the stream where entries that cannot be decoded are set aside.
func (k Keys) Dead() string { return k.key("dead") }

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
// persistence) and the window must be rebuilt from Postgres.
func (k Keys) Marker() string { return k.key("marker") }

// RateKey is the key of one user's rate-limit bucket ("requests", "jobs").
// It belongs to no shard: each limiter call is a script on this one key, so it
// may live in any Redis Cluster slot, and users spread over the slots.
func RateKey(prefix, bucket string, user fmt.Stringer) string {
	return fmt.Sprintf("%s:{u:%s}:rate:%s", prefix, user, bucket)
}

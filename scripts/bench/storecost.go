package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// storeCost is what the stores have spent so far: Postgres's CPU (every
// process of the server), the WAL it has written, and Redis's CPU. The
// difference of two is a phase's cost.
type storeCost struct {
	pgCPU    time.Duration
	walLSN   int64
	redisCPU time.Duration
	ok       bool
}

// storeCost reads the stores' cost so far. Postgres's CPU is that of the
// server the bench's connection is on: the postmaster's own and its reaped
// children's (a backend that exited is counted there) plus every live
// backend's, read from /proc, so the server must run on this machine, as it
// does here. A store it cannot read leaves ok
// false and the phase's figures out.
func (b *bench) storeCost(ctx context.Context) storeCost {
	var c storeCost
	var backend int
	if err := b.db.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&backend); err != nil {
		logf("store cost: %v", err)
		return c
	}
	pg, err := postgresCPU(backend)
	if err != nil {
		logf("store cost: %v", err)
		return c
	}
	c.pgCPU = pg
	var lsn string
	if err := b.db.QueryRow(ctx, `SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::bigint::text`).Scan(&lsn); err != nil {
		logf("store cost: wal position: %v", err)
		return c
	}
	c.walLSN, _ = strconv.ParseInt(lsn, 10, 64)
	info, err := b.rdb.Info(ctx, "cpu").Result()
	if err != nil {
		logf("store cost: redis cpu: %v", err)
		return c
	}
	for line := range strings.SplitSeq(info, "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), ":")
		if ok && (k == "used_cpu_sys" || k == "used_cpu_user") {
			s, _ := strconv.ParseFloat(v, 64)
			c.redisCPU += time.Duration(s * float64(time.Second))
		}
	}
	c.ok = true
	return c
}

// The keys of a phase's store costs in results.StoreCost.
const (
	pgCPUKey    = "pg_cpu_us_per_job"
	walKey      = "wal_bytes_per_job"
	redisCPUKey = "redis_cpu_us_per_job"
)

// perJob records a phase's store costs per job under name: Postgres and
// Redis CPU in µs, WAL in bytes.
func (r *results) perJob(name string, before, after storeCost, jobs int) {
	if !before.ok || !after.ok || jobs == 0 {
		return
	}
	n := float64(jobs)
	r.StoreCost[name] = map[string]float64{
		pgCPUKey:    round(float64((after.pgCPU-before.pgCPU).Microseconds())/n, 1),
		walKey:      round(float64(after.walLSN-before.walLSN)/n, 0),
		redisCPUKey: round(float64((after.redisCPU-before.redisCPU).Microseconds())/n, 1),
	}
	switch name {
	case "burst":
		r.BurstPGCPUUsPerJob = r.StoreCost[name][pgCPUKey]
	case "ingest":
		r.IngestPGCPUUsPerJob = r.StoreCost[name][pgCPUKey]
	case "steady":
		r.SteadyPGCPUUsPerJob = r.StoreCost[name][pgCPUKey]
	}
}

// postgresCPU sums the CPU time of the Postgres server that runs backend
// (a pid of one of its processes): its postmaster, with the children it has
// reaped, and every live child.
func postgresCPU(backend int) (time.Duration, error) {
	stats, err := filepath.Glob("/proc/[0-9]*/stat")
	if err != nil {
		return 0, err
	}
	type st struct {
		ppid      int
		self, sub int64 // ticks: utime+stime, cutime+cstime
	}
	procs := map[int]st{}
	for _, path := range stats {
		raw, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		end := bytes.LastIndexByte(raw, ')')
		if end < 0 {
			continue
		}
		f := strings.Fields(string(raw[end+1:]))
		if len(f) < 15 {
			continue
		}
		pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(path)))
		ppid, _ := strconv.Atoi(f[1])
		num := func(i int) int64 { v, _ := strconv.ParseInt(f[i], 10, 64); return v }
		procs[pid] = st{ppid: ppid, self: num(11) + num(12), sub: num(13) + num(14)}
	}
	b, ok := procs[backend]
	if !ok {
		return 0, fmt.Errorf("Postgres backend %d is not on this machine", backend)
	}
	master, ok := procs[b.ppid]
	if !ok {
		return 0, fmt.Errorf("Postgres server of backend %d not found in /proc", backend)
	}
	ticks := master.self + master.sub
	for _, p := range procs {
		if p.ppid == b.ppid {
			ticks += p.self
		}
	}
	return time.Duration(ticks) * time.Second / clockTicks, nil
}

package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// clockTicks is USER_HZ, the unit of utime and stime in /proc/<pid>/stat: 100
// on every Linux architecture Go runs on (the kernel's own HZ is hidden from
// user space behind it).
const clockTicks = 100

// proc is one service process whose CPU the benchmark reads.
type proc struct {
	name    string // dashboard, scheduler-1, worker-2...
	service string // dashboard, scheduler, worker
	pid     int
}

// cpuTime is a process's user plus system CPU time so far.
func cpuTime(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name (field 2) is in parentheses and may hold spaces; the
	// fields after its closing parenthesis start at field 3 (state).
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("parse /proc/%d/stat", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0, fmt.Errorf("parse /proc/%d/stat: %d fields", pid, len(f))
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64) // field 14
	stime, err2 := strconv.ParseInt(f[12], 10, 64) // field 15
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("parse /proc/%d/stat: utime %q, stime %q", pid, f[11], f[12])
	}
	return time.Duration(utime+stime) * time.Second / clockTicks, nil
}

// cpuSnapshot is every service process's CPU time at one instant.
type cpuSnapshot map[string]time.Duration

func snapshot(procs []proc) cpuSnapshot {
	s := cpuSnapshot{}
	for _, p := range procs {
		if d, err := cpuTime(p.pid); err == nil {
			s[p.name] = d
		}
	}
	return s
}

// perThousand turns the CPU spent between two snapshots into seconds per
// 1,000 jobs, per service (workers and schedulers summed), and per process.
func perThousand(procs []proc, before, after cpuSnapshot, jobs int) (byService, byProc map[string]float64) {
	byService, byProc = map[string]float64{}, map[string]float64{}
	for _, p := range procs {
		v := (after[p.name] - before[p.name]).Seconds() / float64(jobs) * 1000
		byService[p.service] += v
		byProc[p.name] = round(v, 4)
	}
	for s, v := range byService {
		byService[s] = round(v, 4)
	}
	return byService, byProc
}

// childProcs finds the pids of the service processes this process started:
// its children, told apart by the TOCK_METRICS_ADDR each was given, which is
// unique to each one. The cluster package keeps its exec.Cmd to itself.
func childProcs(byAddr map[string]proc) ([]proc, error) {
	self := os.Getpid()
	stats, err := filepath.Glob("/proc/[0-9]*/stat")
	if err != nil {
		return nil, err
	}
	var out []proc
	for _, path := range stats {
		b, err := os.ReadFile(path)
		if err != nil {
			continue // gone since the glob
		}
		i := bytes.LastIndexByte(b, ')')
		f := strings.Fields(string(b[i+1:]))
		if i < 0 || len(f) < 2 || f[1] != strconv.Itoa(self) {
			continue
		}
		pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(path)))
		env, err := os.ReadFile(filepath.Join(filepath.Dir(path), "environ"))
		if err != nil {
			continue
		}
		addr := ""
		for kv := range bytes.SplitSeq(env, []byte{0}) {
			if v, ok := bytes.CutPrefix(kv, []byte("TOCK_METRICS_ADDR=")); ok {
				addr = string(v) // the last one is the one the service reads
			}
		}
		if p, ok := byAddr[addr]; ok {
			p.pid = pid
			out = append(out, p)
		}
	}
	if len(out) != len(byAddr) {
		return out, fmt.Errorf("found %d of %d service processes in /proc", len(out), len(byAddr))
	}
	return out, nil
}

// peakRSS is a process's peak resident memory (VmHWM) in bytes.
func peakRSS(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			f := strings.Fields(rest)
			if len(f) == 2 && f[1] == "kB" {
				kb, err := strconv.ParseInt(f[0], 10, 64)
				return kb << 10, err
			}
		}
	}
	return 0, fmt.Errorf("no VmHWM in /proc/%d/status", pid)
}

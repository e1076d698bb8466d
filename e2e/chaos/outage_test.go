package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/tockhq/tock/e2e/cluster"
)

// The store's outages, as a user deploying tock meets them: the services
// run with their default settings, not the suite's quick knobs, and the last
// job due during the outage must start within storeBound of the store's
// return, none lost, none run twice but an attempt in flight at the fault
// (under its Idempotency-Key).
const (
	storeBound    = 5 * time.Second
	longOutage    = 30 * time.Second
	outageRate    = 100 // jobs due per second through a long outage
	outageSpan    = 45 * time.Second
	outageStrike  = 6 * time.Second
	burstJobs     = 20_000
	burstStart    = 5 * time.Second // insert to the burst's due time: loaded by then
	burstStrike   = 2 * time.Second // about the middle of its run here
	createsPerSec = 20              // creates through the API during PostgresStopped
)

func storeOutages() []fault {
	return []fault{
		{
			// Postgres crashes and comes back while a burst is being
			// started: the workers' reads and outcome writes meet broken
			// connections, then a store replaying its WAL.
			name: "PGRestartBurst", outage: true, defaults: true, bound: storeBound,
			shape:  burstLoad(burstJobs, burstStart, burstStrike),
			strike: func(ctx context.Context, f *fixture) error { return f.pg.StopImmediate(ctx) },
			hold:   time.Second,
			heal:   func(ctx context.Context, f *fixture) error { return f.pg.Start(ctx) },
		},
		{
			// Postgres down for 30 s while jobs fall due and users create
			// more: creates answer an error and the client retries them
			// under their Idempotency-Key; what fell due waits in Redis.
			name: "PGStopped30s", outage: true, defaults: true, bound: storeBound,
			shape:  steadyLoad(outageRate, outageSpan, outageStrike),
			strike: func(ctx context.Context, f *fixture) error { return f.pg.StopImmediate(ctx) },
			hold:   longOutage,
			heal:   func(ctx context.Context, f *fixture) error { return f.pg.Start(ctx) },
			during: createThrough,
		},
		{
			// Redis stalls for 30 s (SIGSTOP): every call to it hangs, the
			// leader's lock and the running attempts' leases run out
			// meanwhile, and what fell due is published all at once after.
			name: "RedisPaused30s", outage: true, defaults: true, bound: storeBound,
			shape:  steadyLoad(outageRate, outageSpan, outageStrike),
			strike: func(ctx context.Context, f *fixture) error { return f.redis.Pause() },
			hold:   longOutage,
			heal:   func(ctx context.Context, f *fixture) error { return f.redis.Resume() },
		},
	}
}

// createThrough creates createsPerSec jobs a second through the API, each
// due a second after its create, from the load's first due time until two
// seconds before its last, as a user's service would: each create is tried
// until it is answered, with backoff, under one Idempotency-Key, so a create
// the outage cut off is neither lost nor made twice. The wait it returns
// adds the created jobs to the load. Their lateness does not count toward
// recovery: one created just after the heal is due a second after the
// dashboard took it, which, while the dashboard works through the creates
// held back by the outage, can be after it was answered.
func createThrough(ctx context.Context, fx *fixture, l *load) func() {
	_, key, err := userKey(ctx, fx.c.API(), "creates")
	if err != nil {
		return func() { l.failed = append(l.failed, fmt.Sprintf("make the creating user: %v", err)) }
	}
	api := &cluster.API{Base: fx.c.APIURL, Token: key,
		HTTP: &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64}}}
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		created []cluster.Job
		refused []string
		slowest time.Duration // the slowest create that was answered
	)
	create := func(i int) {
		defer wg.Done()
		h := http.Header{"Idempotency-Key": {uuid.NewString()}}
		spec := map[string]any{"name": fmt.Sprintf("created %d", i), "type": "webhook", "delay": "1s",
			"payload": map[string]any{"url": l.target + string(kindOK)}}
		// The Go SDK's backoff (from 250 ms, doubled, a quarter of jitter),
		// capped at 4 s and never giving up.
		wait := 250 * time.Millisecond
		for ctx.Err() == nil {
			var j cluster.Job
			asked := time.Now()
			code, err := api.DoWith(ctx, "POST", "/api/v1/jobs", h, spec, &j)
			switch {
			case err == nil && (code == http.StatusCreated || code == http.StatusOK):
				mu.Lock()
				created = append(created, j)
				slowest = max(slowest, time.Since(asked))
				mu.Unlock()
				return
			case err == nil && code < 500 && code != http.StatusTooManyRequests && code != http.StatusConflict:
				// A 409 is the key still held by a try the outage cut
				// off: the dashboard settles it once Postgres is back.
				mu.Lock()
				refused = append(refused, fmt.Sprintf("create %d answered %d", i, code))
				mu.Unlock()
				return
			}
			time.Sleep(wait + rand.N(wait/4))
			wait = min(2*wait, 4*time.Second)
		}
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		cluster.SleepUntil(ctx, l.first)
		tick := time.NewTicker(time.Second / createsPerSec)
		defer tick.Stop()
		for i := 0; ctx.Err() == nil && time.Now().Before(l.last.Add(-2*time.Second)); i++ {
			wg.Add(1)
			go create(i)
			<-tick.C
		}
	}()
	return func() {
		wg.Wait()
		l.failed = append(l.failed, refused...)
		for _, j := range created {
			id, err := uuid.Parse(j.ID)
			if err != nil || j.RunAt == nil {
				l.failed = append(l.failed, fmt.Sprintf("a create answered job %q due %v", j.ID, j.RunAt))
				continue
			}
			at := j.RunAt.UTC()
			l.planned[id] = &planned{id: id, at: at, kind: kindOK, attempts: 1, created: true}
			if at.After(l.last) {
				l.last = at
			}
		}
		l.created = len(created)
		l.notes = append(l.notes, fmt.Sprintf("%d creates through the API; the slowest answered in %s", len(created), slowest.Round(time.Millisecond)))
	}
}

package main

import (
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/tockhq/tock/pkg/job"
	"github.com/tockhq/tock/pkg/queue"
	"github.com/tockhq/tock/pkg/testenv"
)

// stallProxy forwards TCP connections to the real Redis, and can stall
// them all, as a Redis that stops answering (SIGSTOP, an overloaded host)
// looks to its clients: bytes are neither sent on nor answered until it
// resumes.
type stallProxy struct {
	ln     net.Listener
	target string

	mu      sync.Mutex
	stalled bool
	resumed chan struct{}
}

func newStallProxy(t *testing.T, target string) *stallProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &stallProxy{ln: ln, target: target, resumed: make(chan struct{})}
	close(p.resumed)
	var wg sync.WaitGroup
	var conns sync.Map
	t.Cleanup(func() {
		p.resume()
		_ = ln.Close()
		conns.Range(func(k, _ any) bool { _ = k.(net.Conn).Close(); return true })
		wg.Wait()
	})
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", target)
			if err != nil {
				_ = c.Close()
				continue
			}
			conns.Store(c, true)
			conns.Store(up, true)
			wg.Go(func() { p.pipe(up, c) })
			wg.Go(func() { p.pipe(c, up) })
		}
	})
	return p
}

// pipe copies from src to dst, holding each chunk while the proxy stalls.
func (p *stallProxy) pipe(dst, src net.Conn) {
	defer dst.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			p.mu.Lock()
			wait := p.resumed
			p.mu.Unlock()
			<-wait
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			if err != io.EOF {
				_ = src.Close()
			}
			return
		}
	}
}

func (p *stallProxy) stall() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.stalled {
		p.stalled, p.resumed = true, make(chan struct{})
	}
}

func (p *stallProxy) resume() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stalled {
		p.stalled = false
		close(p.resumed)
	}
}

// TestRedisStall: attempts that end while Redis does not answer have their
// outcomes recorded in Postgres all the same, so that their redelivery
// after the stall (their leases may have run out meanwhile) finds them
// done and does not run them again; their entries are settled once Redis
// answers.
func TestRedisStall(t *testing.T) {
	t.Parallel()
	b := setup(t)
	opt, err := redis.ParseURL(testenv.RedisURL())
	require.NoError(t, err)
	proxy := newStallProxy(t, opt.Addr)
	opt.Addr = proxy.ln.Addr().String()
	opt.ReadTimeout, opt.WriteTimeout = 300*time.Millisecond, 300*time.Millisecond
	stalling := redis.NewClient(opt)
	t.Cleanup(func() { _ = stalling.Close() })

	jobs := make([]*job.Job, 4)
	for i := range jobs {
		jobs[i] = b.claimedJob()
	}
	b.create(t, jobs...)
	require.Equal(t, len(jobs), b.publish(t))
	r := holding()
	w := b.consumer(r, func(w *Worker) { w.Queue = queue.New(stalling, b.queue.Prefix(), 1) })
	testenv.GoRun(t, w.Run)
	testenv.WaitUntil(t, 10*time.Second, func() bool { running, _ := r.concurrency(); return running == len(jobs) },
		"the attempts did not start")

	proxy.stall()
	r.let(t, len(jobs))
	testenv.WaitUntil(t, 10*time.Second, func() bool {
		for _, j := range jobs {
			if b.finished(t, j) != job.StatusCompleted {
				return false
			}
		}
		return true
	}, "the outcomes were not recorded while Redis stalled")
	require.Equal(t, int64(len(jobs)), b.pending(t), "nothing is acknowledged while Redis stalls")

	proxy.resume()
	b.untilSettled(t, 10*time.Second, func() bool { return b.settled(t) }, "the entries were not settled after the stall")
	require.Equal(t, len(jobs), r.calls(), "each attempt ran once")
}

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
	clients sync.Map // the clients' ends of the connections
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
			p.clients.Store(c, true)
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

// cut closes the clients' ends of every connection, dropping the answers
// a stall holds: as a client sees a connection reset after Redis served
// its command.
func (p *stallProxy) cut() {
	p.clients.Range(func(k, _ any) bool {
		_ = k.(net.Conn).Close()
		p.clients.Delete(k)
		return true
	})
}

func (p *stallProxy) resume() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stalled {
		p.stalled = false
		close(p.resumed)
	}
}

// stallingClient is a client of the real Redis through a stallProxy, its
// options changed by mod.
func stallingClient(t *testing.T, mod func(*redis.Options)) (*stallProxy, *redis.Client) {
	t.Helper()
	opt, err := redis.ParseURL(testenv.RedisURL())
	require.NoError(t, err)
	proxy := newStallProxy(t, opt.Addr)
	opt.Addr = proxy.ln.Addr().String()
	mod(opt)
	c := redis.NewClient(opt)
	t.Cleanup(func() { _ = c.Close() })
	return proxy, c
}

// TestRedisStall: attempts that end while Redis does not answer have their
// outcomes recorded in Postgres all the same, so that their redelivery
// after the stall (their leases may have run out meanwhile) finds them
// done and does not run them again; their entries are settled once Redis
// answers.
func TestRedisStall(t *testing.T) {
	t.Parallel()
	b := setup(t)
	proxy, stalling := stallingClient(t, func(o *redis.Options) {
		o.ReadTimeout, o.WriteTimeout = 300*time.Millisecond, 300*time.Millisecond
	})

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
	for _, e := range b.logs.All() {
		t.Logf("%s %s %v", e.Time.Format("15:04:05.000"), e.Message, e.ContextMap())
	}
}

// TestReadServedAfterAStall: a read Redis served but whose answer never
// reached the worker (its connection broke, or its client gave up during a
// stall while Redis went on to serve it) leaves the entries it took
// pending to the worker, unread. The worker reads them back after its
// failed read, at once, not after the visibility timeout (30 s here) lets a
// reclaim take them.
func TestReadServedAfterAStall(t *testing.T) {
	t.Parallel()
	b := setup(t)
	proxy, stalling := stallingClient(t, func(o *redis.Options) { o.MaxRetries = -1 }) // the read fails at once

	r := newRunner()
	w := b.consumer(r, func(w *Worker) {
		w.Queue = queue.New(stalling, b.queue.Prefix(), 1)
		w.Block = 2 * time.Second
	})
	testenv.GoRun(t, w.Run)
	time.Sleep(300 * time.Millisecond) // blocked in its read

	proxy.stall()
	jobs := make([]*job.Job, 4)
	for i := range jobs {
		jobs[i] = b.claimedJob()
	}
	b.create(t, jobs...)
	require.Equal(t, len(jobs), b.publish(t)) // served to the blocked read; its answer held
	testenv.WaitUntil(t, 5*time.Second, func() bool { return b.pending(t) == int64(len(jobs)) },
		"the blocked read was not served")
	proxy.cut()
	proxy.resume()

	b.untilSettled(t, 10*time.Second, func() bool {
		for _, j := range jobs {
			if b.finished(t, j) != job.StatusCompleted {
				return false
			}
		}
		return b.settled(t)
	}, "the entries of a read whose answer was lost waited for the visibility timeout")
	require.Equal(t, len(jobs), r.calls(), "each attempt ran once")
	require.Equal(t, 1, b.logs.FilterMessage("read_recovered").Len())
}

func TestLaterID(t *testing.T) {
	for _, tt := range []struct{ a, b, want string }{
		{"", "1-0", "1-0"},
		{"1-0", "", "1-0"},
		{"1700000000000-5", "1700000000000-10", "1700000000000-10"},
		{"1700000000001-0", "1700000000000-10", "1700000000001-0"},
		{"999-0", "1000-0", "1000-0"},
	} {
		require.Equal(t, tt.want, laterID(tt.a, tt.b), "%q %q", tt.a, tt.b)
	}
}

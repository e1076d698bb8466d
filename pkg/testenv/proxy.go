package testenv

import (
	"io"
	"net"
	"net/url"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Proxy forwards TCP connections to a target: a broker connection can be
// lost mid-run (Cut), or the broker made unreachable for a while (Down),
// without restarting a broker other tests share.
type Proxy struct {
	ln   net.Listener
	down atomic.Bool

	mu    sync.Mutex
	conns []net.Conn
}

// NewProxy listens on a loopback port and forwards to target until the
// test ends.
func NewProxy(t testing.TB, target string) *Proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("proxy: %v", err)
	}
	p := &Proxy{ln: ln}
	t.Cleanup(func() { _ = ln.Close(); p.Cut() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			if p.down.Load() {
				_ = c.Close()
				continue
			}
			up, err := net.Dial("tcp", target)
			if err != nil {
				_ = c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, up)
			p.mu.Unlock()
			go func() { _, _ = io.Copy(up, c); _ = up.Close() }()
			go func() { _, _ = io.Copy(c, up); _ = c.Close() }()
		}
	}()
	return p
}

// Addr is the proxy's host:port.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Cut closes every connection open through the proxy.
func (p *Proxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		_ = c.Close()
	}
	p.conns = nil
}

// Down cuts every connection and closes new ones at once until Up: the
// broker is gone for the clients.
func (p *Proxy) Down() { p.down.Store(true); p.Cut() }

// Up lets connections through again.
func (p *Proxy) Up() { p.down.Store(false) }

// NATSURL is the NATS server tests use: TOCK_TEST_NATS_URL or the one this
// machine kind runs, with JetStream on.
func NATSURL() string {
	if u := os.Getenv("TOCK_TEST_NATS_URL"); u != "" {
		return u
	}
	return "nats://127.0.0.1:4222"
}

// AMQPURL is the RabbitMQ broker tests use: TOCK_TEST_AMQP_URL or the one
// this machine kind runs.
func AMQPURL() string {
	if u := os.Getenv("TOCK_TEST_AMQP_URL"); u != "" {
		return u
	}
	return "amqp://guest:guest@127.0.0.1:5672/"
}

// Broker returns rawURL's host:port once something answers there: a test
// skips when the broker is down, except under CI, where .ci/run starts it
// and its absence is a failure.
func Broker(t testing.TB, rawURL string) string {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatalf("broker URL %q: %v", rawURL, err)
	}
	c, err := net.DialTimeout("tcp", u.Host, time.Second)
	if err != nil {
		unavailable(t, "the broker at "+u.Host, err)
	}
	_ = c.Close()
	return u.Host
}

// Via is rawURL with its host:port replaced by addr (a Proxy's), keeping
// its scheme, credentials and path.
func Via(rawURL, addr string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		return rawURL
	}
	u.Host = addr
	return u.String()
}

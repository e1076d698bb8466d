package testenv

import (
	"io"
	"net"
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

// Reachable skips the test when nothing answers at addr (a broker this
// machine kind runs), except under CI, where .ci/run starts it and its
// absence is a failure.
func Reachable(t testing.TB, addr string) {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("broker at %s: %v", addr, err)
		}
		t.Skipf("broker at %s unavailable: %v", addr, err)
	}
	_ = c.Close()
}

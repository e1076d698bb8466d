// Broker connections: one per worker per broker address (credentials
// included, so tenants never share one), dialled through the outbound guard,
// at most MaxBrokerConns, the least recently used closed to make room. A
// connection the broker closed is dropped and dialled again on next use.

package jobtype

import (
	"context"
	"io"
	"net"
	"sync"
	"time"

	"github.com/tockhq/tock/pkg/outbound"
)

// MaxBrokerConns bounds the broker connections one worker keeps open.
const MaxBrokerConns = 64

// brokerDialTimeout bounds one connect to a broker.
const brokerDialTimeout = 5 * time.Second

// brokerConn is an open connection to a broker: alive says whether it is
// still usable; Close ends it.
type brokerConn interface {
	io.Closer
	alive() bool
}

// Brokers holds a worker's broker connections.
type Brokers struct {
	dialer *net.Dialer
	mu     sync.Mutex
	conns  map[string]*brokerEntry
}

type brokerEntry struct {
	ready chan struct{} // closed once the dial below has ended
	conn  brokerConn
	err   error
	used  time.Time
}

// NewBrokers returns an empty set of connections whose dials pass the
// outbound policy targets.
func NewBrokers(targets outbound.Options) *Brokers {
	d := outbound.NewDialer(targets)
	d.Timeout = brokerDialTimeout
	return &Brokers{dialer: d, conns: map[string]*brokerEntry{}}
}

// get returns the connection for key, dialling it with dial when there is
// none or the one there has died. Concurrent callers for one key share one
// dial; a failed dial is not kept.
func (b *Brokers) get(ctx context.Context, key string, dial func(*net.Dialer) (brokerConn, error)) (brokerConn, error) {
	b.mu.Lock()
	e, ok := b.conns[key]
	if ok {
		select {
		case <-e.ready:
			if e.err != nil || !e.conn.alive() {
				if e.conn != nil {
					_ = e.conn.Close()
				}
				delete(b.conns, key)
				ok = false
			}
		default:
		}
	}
	if !ok {
		b.evict()
		e = &brokerEntry{ready: make(chan struct{})}
		b.conns[key] = e
		go func() {
			c, err := dial(b.dialer)
			b.mu.Lock()
			e.conn, e.err = c, err
			if err != nil && b.conns[key] == e {
				delete(b.conns, key)
			}
			b.mu.Unlock()
			close(e.ready)
		}()
	}
	e.used = time.Now()
	b.mu.Unlock()
	select {
	case <-e.ready:
		return e.conn, e.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// evict closes the least recently used connection when the set is full.
// b.mu is held.
func (b *Brokers) evict() {
	if len(b.conns) < MaxBrokerConns {
		return
	}
	var oldest string
	for k, e := range b.conns {
		if oldest == "" || e.used.Before(b.conns[oldest].used) {
			oldest = k
		}
	}
	e := b.conns[oldest]
	delete(b.conns, oldest)
	go func() {
		<-e.ready
		if e.conn != nil {
			_ = e.conn.Close()
		}
	}()
}

// Close closes every connection.
func (b *Brokers) Close() {
	b.mu.Lock()
	conns := b.conns
	b.conns = map[string]*brokerEntry{}
	b.mu.Unlock()
	for _, e := range conns {
		<-e.ready
		if e.conn != nil {
			_ = e.conn.Close()
		}
	}
}

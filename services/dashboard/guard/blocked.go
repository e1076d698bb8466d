package guard

import (
	"sync"
	"time"
)

// blockedAddrs remembers, in this process, the client addresses whose
// failure budget is spent and until when, so that their next requests are
// refused before any Postgres lookup, and without a Redis call unless the
// token is shaped like a key or a session id (Gate.Admit). Every dashboard
// learns it from the shared bucket on the first failure it sees.
type blockedAddrs struct {
	mu    sync.Mutex
	until map[string]time.Time
}

// maxBlocked bounds the memory of blockedAddrs: beyond it, the expired
// entries go, and if all are live the new address is not remembered (its
// failures still meet the shared bucket).
const maxBlocked = 100_000

func (b *blockedAddrs) blocked(addr string, now time.Time) (time.Duration, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	t, ok := b.until[addr]
	if !ok {
		return 0, false
	}
	if !now.Before(t) {
		delete(b.until, addr)
		return 0, false
	}
	return t.Sub(now), true
}

func (b *blockedAddrs) block(addr string, now, until time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.until == nil {
		b.until = map[string]time.Time{}
	}
	if len(b.until) >= maxBlocked {
		for a, t := range b.until {
			if !now.Before(t) {
				delete(b.until, a)
			}
		}
		if len(b.until) >= maxBlocked {
			return
		}
	}
	b.until[addr] = until
}

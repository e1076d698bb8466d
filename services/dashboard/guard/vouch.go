package guard

import (
	"context"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/tockhq/tock/pkg/queue"
	"github.com/tockhq/tock/services/dashboard/rate"
)

// Vouch records that a credential was minted a moment ago (a key created, a
// session opened), by the SHA-256 of its token: in this process's good
// tokens, and in Redis for goodFor, so that every other dashboard lets it
// past a blocked address too before it has seen it succeed. Failing to tell
// Redis costs only that: its client may wait out a block elsewhere.
func (g *Gate) Vouch(ctx context.Context, sum [32]byte) {
	if g.limiter == nil {
		return
	}
	g.good.add(sum, g.clock())
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	if err := g.rdb.Set(ctx, queue.VouchedKey(g.prefix, sum), 1, goodFor).Err(); err != nil {
		// Logged as limits, with the outage warnings of the buckets: a
		// vouch fails when Redis does.
		g.log.Named("limits").Warn("vouch_failed", zap.Error(err))
	}
}

// vouched asks Redis whether any dashboard minted the token lately (Vouch).
// Only a token shaped like a key or a session id is asked about, with one
// EXISTS and no Postgres query; an error counts as no, leaving the block as
// it was before keys were shared.
func (g *Gate) vouched(ctx context.Context, token string, sum [32]byte) bool {
	if !g.minted(token) {
		return false
	}
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	n, err := g.rdb.Exists(ctx, queue.VouchedKey(g.prefix, sum)).Result()
	if err != nil {
		_ = g.limiter.Unavailable(bucketVouched, err, rate.Allow)
		return false
	}
	return n == 1
}

// bucketVouched names the credentials Vouch records, in the warning logged
// while Redis cannot be asked about them.
const bucketVouched = "vouched"

// goodTokens remembers, by SHA-256, the tokens that authenticated within
// goodFor, or were minted here within it (Vouch), so that a blocked
// address's known clients still get through.
type goodTokens struct {
	mu   sync.Mutex
	seen map[[32]byte]time.Time
}

// goodFor is how long a success, or a minting, vouches for a token (in this
// process's memory, and in Redis for a minting), and maxGood bounds the
// memory (beyond it, stale entries go; if none is stale, the new one is not
// kept and its client merely waits out a block like the rest).
const (
	goodFor = 10 * time.Minute
	maxGood = 100_000
)

func (g *goodTokens) add(sum [32]byte, now time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.seen == nil {
		g.seen = map[[32]byte]time.Time{}
	}
	if _, ok := g.seen[sum]; !ok && len(g.seen) >= maxGood {
		for k, t := range g.seen {
			if now.Sub(t) >= goodFor {
				delete(g.seen, k)
			}
		}
		if len(g.seen) >= maxGood {
			return
		}
	}
	g.seen[sum] = now
}

func (g *goodTokens) has(sum [32]byte, now time.Time) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	t, ok := g.seen[sum]
	return ok && now.Sub(t) < goodFor
}

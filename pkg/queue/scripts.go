package queue

import (
	"context"
	"errors"

	"github.com/redis/go-redis/v9"
)

// scriptCall is one call of a script, for runScripts.
type scriptCall struct {
	script *redis.Script
	keys   []string
	args   []any
}

// runScripts runs calls in one pipelined round trip, each by its hash
// (EVALSHA): the scripts that count lanes are several KB, which EVAL would
// send, and Redis hash, at every call. Those Redis does not know (NOSCRIPT:
// it restarted, failed over or flushed its scripts) are sent again by
// their bodies (EVAL, which caches them) in a second round trip; a script
// that did not run is never half run. It returns the calls' results, or
// the first error.
func runScripts(ctx context.Context, rdb redis.UniversalClient, calls []scriptCall) ([]*redis.Cmd, error) {
	cmds := make([]*redis.Cmd, len(calls))
	pipe := rdb.Pipeline()
	for i, c := range calls {
		cmds[i] = c.script.EvalSha(ctx, pipe, c.keys, c.args...)
	}
	if _, err := pipe.Exec(ctx); err == nil {
		return cmds, nil
	}
	var again []int
	for i, c := range cmds {
		if err := c.Err(); err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
			again = append(again, i)
		}
	}
	if len(again) > 0 {
		pipe := rdb.Pipeline()
		for _, i := range again {
			cmds[i] = calls[i].script.Eval(ctx, pipe, calls[i].keys, calls[i].args...)
		}
		_, _ = pipe.Exec(ctx)
	}
	for _, c := range cmds {
		if err := c.Err(); err != nil && !errors.Is(err, redis.Nil) {
			return cmds, err
		}
	}
	return cmds, nil
}

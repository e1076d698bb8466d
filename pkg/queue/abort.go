package queue

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"
)

// AbortRequest asks the workers to stop running attempts: every attempt of
// Job, or of every job of Owner, that started at or before At. Actor is who
// asked, for the runs' error.
type AbortRequest struct {
	Job   uuid.UUID // zero for an owner's jobs
	Owner uuid.UUID // zero for one job
	Actor uuid.UUID
	At    time.Time
}

// abortMemory is how long a request is kept for workers to see: longer
// than any attempt may run (job.MaxTimeout, an hour) with its lease.
const abortMemory = 2 * time.Hour

// member encodes the request as a member of Keys.Aborts; its score is At.
func (a AbortRequest) member() string {
	if a.Job != uuid.Nil {
		return "job:" + a.Job.String() + ":" + a.Actor.String()
	}
	return "owner:" + a.Owner.String() + ":" + a.Actor.String()
}

func parseAbort(member string, score float64) (AbortRequest, bool) {
	kind, rest, ok := strings.Cut(member, ":")
	if !ok {
		return AbortRequest{}, false
	}
	id, actor, ok := strings.Cut(rest, ":")
	if !ok {
		return AbortRequest{}, false
	}
	a := AbortRequest{At: time.UnixMilli(int64(score)).UTC()}
	var err1, err2 error
	switch kind {
	case "job":
		a.Job, err1 = uuid.Parse(id)
	case "owner":
		a.Owner, err1 = uuid.Parse(id)
	default:
		return AbortRequest{}, false
	}
	a.Actor, err2 = uuid.Parse(actor)
	return a, err1 == nil && err2 == nil
}

// Abort records a request to stop running attempts in the home shard, where
// every worker polls for them, and forgets requests older than abortMemory.
func (r *Queue) Abort(ctx context.Context, a AbortRequest) error {
	key := r.Home().keys.Aborts()
	pipe := r.rdb.Pipeline()
	pipe.ZAdd(ctx, key, redis.Z{Score: float64(a.At.UnixMilli()), Member: a.member()})
	pipe.ZRemRangeByScore(ctx, key, "-inf", strconv.FormatInt(a.At.Add(-abortMemory).UnixMilli(), 10))
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("abort: %w", err)
	}
	return nil
}

// Aborts returns the requests made at or after since, oldest first.
func (r *Queue) Aborts(ctx context.Context, since time.Time) ([]AbortRequest, error) {
	zs, err := r.rdb.ZRangeByScoreWithScores(ctx, r.Home().keys.Aborts(), &redis.ZRangeBy{
		Min: strconv.FormatInt(since.UnixMilli(), 10), Max: "+inf", Count: 10_000,
	}).Result()
	if err != nil {
		return nil, fmt.Errorf("read aborts: %w", err)
	}
	out := make([]AbortRequest, 0, len(zs))
	for _, z := range zs {
		if m, ok := z.Member.(string); ok {
			if a, ok := parseAbort(m, z.Score); ok {
				out = append(out, a)
			}
		}
	}
	return out, nil
}

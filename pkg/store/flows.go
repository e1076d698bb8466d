package store

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/tockhq/tock/pkg/job"
)

// Flow is a flow key of an owner's with its limits (migration 026): at most
// Concurrency attempts in flight (0: none), at most Rate starts in any of its
// periods (nil: none), none at all while Paused.
type Flow struct {
	Owner       uuid.UUID
	Key         string
	Concurrency int
	Rate        *job.Rate
	Paused      bool
	CreatedAt   time.Time
	UpdatedAt   time.Time
}

// Lane is the flow's lane id (job.FlowLane).
func (f *Flow) Lane() string { return job.FlowLane(f.Owner, f.Key) }

// DefaultMaxFlowKeys bounds the flow keys one owner may hold unless the
// operator sets another bound (TOCK_MAX_FLOW_KEYS).
const DefaultMaxFlowKeys = 100_000

// FlowKeysError refuses a change that would give an owner more flow keys
// than they may hold.
type FlowKeysError struct{ Max int }

func (e *FlowKeysError) Error() string {
	return "the owner would hold more than " + strconv.Itoa(e.Max) + " flow keys"
}

// Audit actions and target type of flow keys; an entry's target id is the
// owner's, and its change names the key.
const (
	ActionFlowPut    = "flow.put"
	ActionFlowDelete = "flow.delete"
	TargetFlow       = "flow"
)

const flowColumns = `owner_id, key, coalesce(concurrency, 0), rate_count, rate_period_ms, paused, created_at, updated_at`

func scanFlow(row pgx.Row) (*Flow, error) {
	var f Flow
	var count *int32
	var period *int64
	if err := row.Scan(&f.Owner, &f.Key, &f.Concurrency, &count, &period, &f.Paused, &f.CreatedAt, &f.UpdatedAt); err != nil {
		return nil, err
	}
	if count != nil && period != nil {
		f.Rate = &job.Rate{Count: int(*count), Period: time.Duration(*period) * time.Millisecond}
	}
	f.CreatedAt, f.UpdatedAt = f.CreatedAt.UTC(), f.UpdatedAt.UTC()
	return &f, nil
}

func rateArgs(r *job.Rate) (*int32, *int64) {
	if r == nil {
		return nil, nil
	}
	c, p := int32(r.Count), r.Period.Milliseconds()
	return &c, &p
}

const (
	// setFlowLimitsSQL gives keys the limits their jobs set.
	setFlowLimitsSQL = `INSERT INTO flows AS f (owner_id, key, concurrency, rate_count, rate_period_ms, created_at, updated_at)
SELECT u.owner_id, u.key, nullif(u.concurrency, 0), u.rate_count, u.rate_period_ms, $6, $6
FROM unnest($1::uuid[], $2::text[], $3::integer[], $4::integer[], $5::bigint[]) AS u(owner_id, key, concurrency, rate_count, rate_period_ms)
ON CONFLICT (owner_id, key) DO UPDATE SET concurrency = EXCLUDED.concurrency, rate_count = EXCLUDED.rate_count,
    rate_period_ms = EXCLUDED.rate_period_ms, updated_at = EXCLUDED.updated_at
WHERE (f.concurrency, f.rate_count, f.rate_period_ms) IS DISTINCT FROM (EXCLUDED.concurrency, EXCLUDED.rate_count, EXCLUDED.rate_period_ms)
RETURNING owner_id, (xmax = 0)`
	// addFlowKeysSQL creates the keys jobs name without limits, unless they exist.
	addFlowKeysSQL = `INSERT INTO flows (owner_id, key, created_at, updated_at)
SELECT u.owner_id, u.key, $3, $3 FROM unnest($1::uuid[], $2::text[]) AS u(owner_id, key)
ON CONFLICT (owner_id, key) DO NOTHING
RETURNING owner_id, true`
	// countFlowKeysSQL counts an owner's keys no further than $2.
	countFlowKeysSQL = `SELECT count(*) FROM (SELECT FROM flows WHERE owner_id = $1 LIMIT $2) capped`
)

// claimFlows records the flow keys jobs name, and the limits they set, in
// tx: a key a job gives limits takes them, a key it only names is created
// bare if new. An owner given new keys past maxKeys (0: no bound) is a
// *FlowKeysError. Jobs without a flow write nothing.
func claimFlows(ctx context.Context, tx pgx.Tx, jobs []*job.Job, now time.Time, maxKeys int) error {
	type ok struct {
		owner uuid.UUID
		key   string
	}
	limits := map[ok]*job.Flow{}
	bare := map[ok]bool{}
	var order []ok
	for _, j := range jobs {
		if j.Flow == nil {
			continue
		}
		k := ok{j.Owner, j.Flow.Key}
		if _, seen := limits[k]; !seen && !bare[k] {
			order = append(order, k)
		}
		if j.Flow.HasLimits() {
			limits[k] = j.Flow // the last job of a batch wins, as it would one by one
			delete(bare, k)
		} else if _, has := limits[k]; !has {
			bare[k] = true
		}
	}
	if len(order) == 0 {
		return nil
	}
	var lo, bo []uuid.UUID
	var lk, bk []string
	var conc, counts []*int32
	var periods []*int64
	for _, k := range order {
		if f, has := limits[k]; has {
			c, p := rateArgs(f.Rate)
			n := int32(f.Concurrency)
			lo, lk, conc, counts, periods = append(lo, k.owner), append(lk, k.key), append(conc, &n), append(counts, c), append(periods, p)
		} else {
			bo, bk = append(bo, k.owner), append(bk, k.key)
		}
	}
	added := map[uuid.UUID]bool{}
	var owner uuid.UUID
	var inserted bool
	scanAdded := func(sql string, args ...any) error {
		rows, err := tx.Query(ctx, sql, args...)
		if err != nil {
			return err
		}
		_, err = pgx.ForEachRow(rows, []any{&owner, &inserted}, func() error {
			if inserted {
				added[owner] = true
			}
			return nil
		})
		return err
	}
	if len(lo) > 0 {
		if err := scanAdded(setFlowLimitsSQL, lo, lk, conc, counts, periods, now); err != nil {
			return fmt.Errorf("flow limits: %w", translate(err))
		}
	}
	if len(bo) > 0 {
		if err := scanAdded(addFlowKeysSQL, bo, bk, now); err != nil {
			return fmt.Errorf("flow keys: %w", translate(err))
		}
	}
	if maxKeys <= 0 {
		return nil
	}
	for o := range added {
		var n int
		if err := tx.QueryRow(ctx, countFlowKeysSQL, o, maxKeys+1).Scan(&n); err != nil {
			return fmt.Errorf("count flow keys: %w", translate(err))
		}
		if n > maxKeys {
			return &FlowKeysError{Max: maxKeys}
		}
	}
	return nil
}

// FlowLimits returns the limits of owner's keys among keys (those it holds).
func (s *Store) FlowLimits(ctx context.Context, owner uuid.UUID, keys []string) ([]*Flow, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+flowColumns+` FROM flows WHERE owner_id = $1 AND key = ANY($2)`, owner, keys)
	if err != nil {
		return nil, fmt.Errorf("flow limits: %w", translate(err))
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (*Flow, error) { return scanFlow(r) })
	if err != nil {
		return nil, fmt.Errorf("flow limits: %w", translate(err))
	}
	return out, nil
}

// FlowCursor is where a walk of changed flows goes on from: after the flow
// of Owner and Key changed at Since, in (updated_at, owner, key) order.
type FlowCursor struct {
	Since time.Time
	Owner uuid.UUID
	Key   string
}

// FlowsChanged returns up to limit flows changed after the cursor, oldest
// change first: the scheduler's leader writes them to Redis every round.
func (s *Store) FlowsChanged(ctx context.Context, after FlowCursor, limit int) ([]*Flow, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+flowColumns+` FROM flows WHERE (updated_at, owner_id, key) > ($1, $2, $3)
ORDER BY updated_at, owner_id, key LIMIT $4`, after.Since, after.Owner, after.Key, limit)
	if err != nil {
		return nil, fmt.Errorf("flows changed: %w", translate(err))
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (*Flow, error) { return scanFlow(r) })
	if err != nil {
		return nil, fmt.Errorf("flows changed: %w", translate(err))
	}
	return out, nil
}

// GetFlow returns one of owner's flow keys; job.ErrNotFound when it has none
// of that name.
func (s *Store) GetFlow(ctx context.Context, owner uuid.UUID, key string) (*Flow, error) {
	f, err := scanFlow(s.pool.QueryRow(ctx, `SELECT `+flowColumns+` FROM flows WHERE owner_id = $1 AND key = $2`, owner, key))
	if err != nil {
		return nil, fmt.Errorf("flow %q: %w", key, translate(err))
	}
	return f, nil
}

// Flows lists owner's flow keys in key order, after the key after, at most
// limit.
func (s *Store) Flows(ctx context.Context, owner uuid.UUID, after string, limit int) ([]*Flow, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+flowColumns+` FROM flows WHERE owner_id = $1 AND key > $2 ORDER BY key LIMIT $3`, owner, after, limit)
	if err != nil {
		return nil, fmt.Errorf("flows: %w", translate(err))
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (*Flow, error) { return scanFlow(r) })
	if err != nil {
		return nil, fmt.Errorf("flows: %w", translate(err))
	}
	return out, nil
}

const putFlowSQL = `INSERT INTO flows AS f (owner_id, key, concurrency, rate_count, rate_period_ms, paused, created_at, updated_at)
VALUES ($1, $2, nullif($3, 0), $4, $5, $6, $7, $7)
ON CONFLICT (owner_id, key) DO UPDATE SET concurrency = EXCLUDED.concurrency, rate_count = EXCLUDED.rate_count,
    rate_period_ms = EXCLUDED.rate_period_ms, paused = EXCLUDED.paused, updated_at = EXCLUDED.updated_at
RETURNING ` + flowColumns + `, (xmax = 0)`

// PutFlow sets one of owner's flow keys to f's limits and pause, creating it
// if new (past maxKeys, 0 for no bound, a *FlowKeysError), with its audit
// entry. It returns the key as stored and whether it was created.
func (s *Store) PutFlow(ctx context.Context, f Flow, now time.Time, maxKeys int, a Audit) (*Flow, bool, error) {
	var out *Flow
	var created bool
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		count, period := rateArgs(f.Rate)
		st, err := scanFlow(createdRow{tx.QueryRow(ctx, putFlowSQL, f.Owner, f.Key, int32(f.Concurrency), count, period, f.Paused, now), &created})
		if err != nil {
			return translate(err)
		}
		out = st
		if created && maxKeys > 0 {
			var n int
			if err := tx.QueryRow(ctx, countFlowKeysSQL, f.Owner, maxKeys+1).Scan(&n); err != nil {
				return translate(err)
			}
			if n > maxKeys {
				return &FlowKeysError{Max: maxKeys}
			}
		}
		return record(ctx, tx, a, now, TargetFlow, f.Owner, map[string]any{"key": f.Key, "concurrency": out.Concurrency,
			"rate": rateText(out.Rate), "paused": out.Paused})
	})
	if err != nil {
		return nil, false, fmt.Errorf("put flow %q: %w", f.Key, err)
	}
	return out, created, nil
}

// createdRow scans a row of flowColumns followed by whether it was created.
type createdRow struct {
	pgx.Row
	created *bool
}

func (r createdRow) Scan(dest ...any) error { return r.Row.Scan(append(dest, r.created)...) }

func rateText(r *job.Rate) string {
	if r == nil {
		return ""
	}
	return r.String()
}

// DeleteFlow removes one of owner's flow keys (job.ErrNotFound when it has
// none of that name): its jobs run without limits until a job or a PUT sets
// them again.
func (s *Store) DeleteFlow(ctx context.Context, owner uuid.UUID, key string, now time.Time, a Audit) error {
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `DELETE FROM flows WHERE owner_id = $1 AND key = $2`, owner, key)
		if err != nil {
			return translate(err)
		}
		if tag.RowsAffected() == 0 {
			return job.ErrNotFound
		}
		return record(ctx, tx, a, now, TargetFlow, owner, map[string]any{"key": key, "deleted": true})
	})
	if err != nil {
		return fmt.Errorf("delete flow %q: %w", key, err)
	}
	return nil
}

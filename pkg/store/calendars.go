package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/tockhq/tock/pkg/calendar"
	"github.com/tockhq/tock/pkg/job"
)

// Audit actions and target type of calendars; an entry's target id is the
// owner's, and its change names the calendar.
const (
	ActionCalendarPut    = "calendar.put"
	ActionCalendarDelete = "calendar.delete"
	TargetCalendar       = "calendar"
)

// StoredCalendar is a calendar with its owner and times.
type StoredCalendar struct {
	calendar.Calendar
	Owner                uuid.UUID
	CreatedAt, UpdatedAt time.Time
}

const calendarColumns = `owner_id, name, timezone, dates, ranges, rrules, created_at, updated_at`

func scanCalendar(row pgx.Row) (*StoredCalendar, error) {
	var c StoredCalendar
	var ranges []byte
	if err := row.Scan(&c.Owner, &c.Name, &c.Timezone, &c.Dates, &ranges, &c.RRules, &c.CreatedAt, &c.UpdatedAt); err != nil {
		return nil, err
	}
	if err := json.Unmarshal(ranges, &c.Ranges); err != nil {
		return nil, fmt.Errorf("calendar %q: ranges: %w", c.Name, err)
	}
	return &c, nil
}

// ErrTooManyCalendars refuses a calendar beyond calendar.MaxPerOwner; it
// is a job.ErrConflict.
var ErrTooManyCalendars = fmt.Errorf("%w: an owner holds at most %d calendars", job.ErrConflict, calendar.MaxPerOwner)

// PutCalendar creates or replaces one of owner's calendars (c compiled
// already), with its audit entry, and says whether it was created.
func (s *Store) PutCalendar(ctx context.Context, owner uuid.UUID, c *calendar.Calendar, now time.Time, a Audit) (*StoredCalendar, bool, error) {
	ranges, err := json.Marshal(nonNil(c.Ranges))
	if err != nil {
		return nil, false, err
	}
	var out *StoredCalendar
	var created bool
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		st, err := scanCalendar(createdRow{tx.QueryRow(ctx, `INSERT INTO calendars AS c (owner_id, name, timezone, dates, ranges, rrules, created_at, updated_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $7)
ON CONFLICT (owner_id, name) DO UPDATE SET timezone = EXCLUDED.timezone, dates = EXCLUDED.dates, ranges = EXCLUDED.ranges,
    rrules = EXCLUDED.rrules, updated_at = EXCLUDED.updated_at
RETURNING `+calendarColumns+`, (xmax = 0)`, owner, c.Name, c.Timezone, nonNil(c.Dates), ranges, nonNil(c.RRules), now), &created})
		if err != nil {
			return translate(err)
		}
		out = st
		if created {
			var n int
			if err := tx.QueryRow(ctx, `SELECT count(*) FROM (SELECT FROM calendars WHERE owner_id = $1 LIMIT $2) capped`, owner, calendar.MaxPerOwner+1).Scan(&n); err != nil {
				return translate(err)
			}
			if n > calendar.MaxPerOwner {
				return ErrTooManyCalendars
			}
		}
		return record(ctx, tx, a, now, TargetCalendar, owner, map[string]any{"name": c.Name, "timezone": c.Timezone,
			"dates": len(c.Dates), "ranges": len(c.Ranges), "rrules": len(c.RRules)})
	})
	if err != nil {
		return nil, false, fmt.Errorf("put calendar %q: %w", c.Name, err)
	}
	return out, created, nil
}

func nonNil[T any](xs []T) []T {
	if xs == nil {
		return []T{}
	}
	return xs
}

// GetCalendar returns one of owner's calendars; none is job.ErrNotFound.
func (s *Store) GetCalendar(ctx context.Context, owner uuid.UUID, name string) (*StoredCalendar, error) {
	c, err := scanCalendar(s.pool.QueryRow(ctx, `SELECT `+calendarColumns+` FROM calendars WHERE owner_id = $1 AND name = $2`, owner, name))
	if err != nil {
		return nil, fmt.Errorf("get calendar %q: %w", name, translate(err))
	}
	return c, nil
}

// ListCalendars returns owner's calendars in name order, up to limit after
// the name after ("" from the first).
func (s *Store) ListCalendars(ctx context.Context, owner uuid.UUID, after string, limit int) ([]*StoredCalendar, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+calendarColumns+` FROM calendars WHERE owner_id = $1 AND name > $2 ORDER BY name LIMIT $3`, owner, after, limit)
	if err != nil {
		return nil, fmt.Errorf("list calendars: %w", translate(err))
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (*StoredCalendar, error) { return scanCalendar(r) })
	if err != nil {
		return nil, fmt.Errorf("list calendars: %w", translate(err))
	}
	return out, nil
}

// CalendarInUseError refuses to delete a calendar that jobs which can
// still run name; it is a job.ErrConflict.
type CalendarInUseError struct{ Jobs int }

func (e *CalendarInUseError) Error() string {
	return fmt.Sprintf("%d of your jobs that can still run name it in skip_calendars", e.Jobs)
}

// Is makes a CalendarInUseError a job.ErrConflict.
func (e *CalendarInUseError) Is(target error) bool { return target == job.ErrConflict }

// DeleteCalendar removes one of owner's calendars (job.ErrNotFound when
// none has that name), unless a scheduled or paused job of owner's names
// it (*CalendarInUseError).
func (s *Store) DeleteCalendar(ctx context.Context, owner uuid.UUID, name string, now time.Time, a Audit) error {
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var n int
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM (SELECT FROM jobs WHERE owner_id = $1 AND $2 = ANY(skip_calendars)
    AND status IN ('scheduled', 'paused') LIMIT 1000) used`, owner, name).Scan(&n); err != nil {
			return translate(err)
		}
		if n > 0 {
			return &CalendarInUseError{Jobs: n}
		}
		tag, err := tx.Exec(ctx, `DELETE FROM calendars WHERE owner_id = $1 AND name = $2`, owner, name)
		if err != nil {
			return translate(err)
		}
		if tag.RowsAffected() == 0 {
			return job.ErrNotFound
		}
		return record(ctx, tx, a, now, TargetCalendar, owner, map[string]any{"name": name, "deleted": true})
	})
	if err != nil {
		return fmt.Errorf("delete calendar %q: %w", name, err)
	}
	return nil
}

// CalendarKey names one owner's calendar.
type CalendarKey struct {
	Owner uuid.UUID
	Name  string
}

// Calendars reads the calendars keys name, compiled; one that does not
// exist (deleted after a job named it) is missing from the answer.
func (s *Store) Calendars(ctx context.Context, keys []CalendarKey) (map[CalendarKey]*calendar.Calendar, error) {
	out := make(map[CalendarKey]*calendar.Calendar, len(keys))
	if len(keys) == 0 {
		return out, nil
	}
	owners, names := make([]uuid.UUID, len(keys)), make([]string, len(keys))
	for i, k := range keys {
		owners[i], names[i] = k.Owner, k.Name
	}
	rows, err := s.pool.Query(ctx, `SELECT `+calendarColumns+` FROM calendars c
WHERE (c.owner_id, c.name) IN (SELECT * FROM unnest($1::uuid[], $2::text[]))`, owners, names)
	if err != nil {
		return nil, fmt.Errorf("calendars: %w", translate(err))
	}
	cals, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (*StoredCalendar, error) { return scanCalendar(r) })
	if err != nil {
		return nil, fmt.Errorf("calendars: %w", translate(err))
	}
	for _, c := range cals {
		cal := c.Calendar
		if err := cal.Compile(); err != nil {
			return nil, fmt.Errorf("calendar %q: %w", c.Name, err)
		}
		out[CalendarKey{c.Owner, c.Name}] = &cal
	}
	return out, nil
}

// checkCalendars refuses jobs that name a calendar their owner does not
// have, with a *job.FieldError on skip_calendars: one query, only when a
// job names any.
func checkCalendars(ctx context.Context, tx pgx.Tx, jobs []*job.Job) error {
	var owners []uuid.UUID
	var names []string
	for _, j := range jobs {
		for _, n := range j.SkipCalendars {
			owners, names = append(owners, j.Owner), append(names, n)
		}
	}
	if len(names) == 0 {
		return nil
	}
	var missing string
	err := tx.QueryRow(ctx, `SELECT n FROM unnest($1::uuid[], $2::text[]) AS t(o, n)
WHERE NOT EXISTS (SELECT 1 FROM calendars c WHERE c.owner_id = t.o AND c.name = t.n) LIMIT 1`, owners, names).Scan(&missing)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return nil
	case err != nil:
		return fmt.Errorf("check calendars: %w", translate(err))
	}
	return &job.FieldError{Field: "skip_calendars", Message: fmt.Sprintf("you have no calendar named %q: PUT /api/v1/calendars/%s first", missing, missing)}
}

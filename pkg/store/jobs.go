package store

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/tockhq/tock/pkg/job"
	"github.com/tockhq/tock/pkg/jobspec"
)

// dueHour is the partition key for a due time: its UTC hour, or -1 for none.
func dueHour(t time.Time) int16 { return jobspec.DueHour(t) }

func nullTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

// claimer is the claimed_by of a job: the dashboard's number on a one-off
// job it stores claimed (no due_at: it adds the job to Redis itself), else
// none.
func claimer(j *job.Job, claimedBy int32) int32 {
	if claimedBy == 0 || j.Recurring() || !j.DueAt.IsZero() || j.RunAt.IsZero() {
		return 0
	}
	return claimedBy
}

// claimJobKeySQL gives each (owner, key) to its new job, unless the job that
// holds it can still run.
const claimJobKeySQL = `INSERT INTO job_keys (owner_id, key, job_id)
SELECT * FROM unnest($1::uuid[], $2::text[], $3::uuid[])
ON CONFLICT (owner_id, key) DO UPDATE SET job_id = EXCLUDED.job_id
WHERE NOT EXISTS (SELECT 1 FROM jobs j WHERE j.id = job_keys.job_id AND j.status IN ('scheduled', 'paused'))
RETURNING key`

// KeyTakenError refuses a job whose key another job of its owner that can
// still run holds.
type KeyTakenError struct{ Key string }

func (e *KeyTakenError) Error() string {
	return fmt.Sprintf("key %q is held by another job that can still run", e.Key)
}

// Is makes a KeyTakenError a job.ErrConflict.
func (e *KeyTakenError) Is(target error) bool { return target == job.ErrConflict }

// claimKeys takes the keys of the keyed jobs among jobs, or refuses them
// all with a *KeyTakenError.
func claimKeys(ctx context.Context, tx pgx.Tx, jobs []*job.Job) error {
	var owners, ids []uuid.UUID
	var keys []string
	seen := map[string]bool{}
	for _, j := range jobs {
		if j.Key == "" {
			continue
		}
		k := j.Owner.String() + "/" + j.Key
		if seen[k] {
			return &KeyTakenError{Key: j.Key}
		}
		seen[k] = true
		owners, keys, ids = append(owners, j.Owner), append(keys, j.Key), append(ids, j.ID)
	}
	if len(keys) == 0 {
		return nil
	}
	lost, err := claim(ctx, tx, claimJobKeySQL, keys, owners, keys, ids)
	if err != nil {
		return fmt.Errorf("claim keys: %w", err)
	}
	if lost != "" {
		return &KeyTakenError{Key: lost}
	}
	return nil
}

// claim runs a claim statement that returns the keys it took, and returns
// the first of keys it did not take ("" when it took them all).
func claim(ctx context.Context, tx pgx.Tx, sql string, keys []string, args ...any) (string, error) {
	rows, err := tx.Query(ctx, sql, args...)
	if err != nil {
		return "", translate(err)
	}
	claimed, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return "", translate(err)
	}
	if len(claimed) == len(keys) {
		return "", nil
	}
	got := map[string]bool{}
	for _, k := range claimed {
		got[k] = true
	}
	for _, k := range keys {
		if !got[k] {
			return k, nil
		}
	}
	return "", nil
}

// claimDebounceSQL gives each (owner, debounce key) to its new job, unless
// the job that holds it can still run and is not one the caller saw start
// ($4).
const claimDebounceSQL = `INSERT INTO debounces (owner_id, key, job_id)
SELECT * FROM unnest($1::uuid[], $2::text[], $3::uuid[])
ON CONFLICT (owner_id, key) DO UPDATE SET job_id = EXCLUDED.job_id
WHERE debounces.job_id = ANY($4::uuid[])
   OR NOT EXISTS (SELECT 1 FROM jobs j WHERE j.id = debounces.job_id AND j.status IN ('scheduled', 'paused'))
RETURNING key`

// lockDebouncesSQL serializes the creates of each (owner, debounce key),
// in one order, so that two requests never wait on each other.
const lockDebouncesSQL = `SELECT pg_advisory_xact_lock(h) FROM (
    SELECT DISTINCT hashtextextended('tock.debounce.' || o::text || '/' || k, 0) AS h
    FROM unnest($1::uuid[], $2::text[]) AS t(o, k) ORDER BY 1) locks`

// DebounceTakenError refuses a debounced job whose key a pending job holds
// (one created meanwhile): the caller folds it into that job instead.
type DebounceTakenError struct{ Key string }

func (e *DebounceTakenError) Error() string {
	return fmt.Sprintf("debounce key %q is held by a pending job", e.Key)
}

// Is makes a DebounceTakenError a job.ErrConflict.
func (e *DebounceTakenError) Is(target error) bool { return target == job.ErrConflict }

// claimDebounces takes the debounce keys of the debounced jobs among jobs,
// taking them over from a finished job or one of displace, or refuses them
// all with a *DebounceTakenError. Two jobs of one request with one key are
// refused too: the caller folds them one into the other.
func claimDebounces(ctx context.Context, tx pgx.Tx, jobs []*job.Job, displace []uuid.UUID) error {
	var owners, ids []uuid.UUID
	var keys []string
	seen := map[string]bool{}
	for _, j := range jobs {
		if j.Debounce == nil {
			continue
		}
		k := j.Owner.String() + "/" + j.Debounce.Key
		if seen[k] {
			return &DebounceTakenError{Key: j.Debounce.Key}
		}
		seen[k] = true
		owners, keys, ids = append(owners, j.Owner), append(keys, j.Debounce.Key), append(ids, j.ID)
	}
	if len(keys) == 0 {
		return nil
	}
	if displace == nil {
		displace = []uuid.UUID{}
	}
	// One create at a time per (owner, key), until it commits: the claim
	// below, a statement of its own, then sees the job of a create that
	// committed while it waited (the INSERT alone would judge that job by
	// a snapshot taken before it existed, and take the key from it).
	if _, err := tx.Exec(ctx, lockDebouncesSQL, owners, keys); err != nil {
		return fmt.Errorf("lock debounce keys: %w", translate(err))
	}
	lost, err := claim(ctx, tx, claimDebounceSQL, keys, owners, keys, ids, displace)
	if err != nil {
		return fmt.Errorf("claim debounce keys: %w", err)
	}
	if lost != "" {
		return &DebounceTakenError{Key: lost}
	}
	return nil
}

// moveDebounce follows an edit of a job's debounce key: the old key, if the
// job still holds it, is let go, and the new one taken (from the job itself
// too, should it hold it still from before).
func moveDebounce(ctx context.Context, tx pgx.Tx, before, after *job.Job) error {
	if k := before.DebounceKey(); k != "" {
		if _, err := tx.Exec(ctx, `DELETE FROM debounces WHERE owner_id = $1 AND key = $2 AND job_id = $3`, before.Owner, k, before.ID); err != nil {
			return fmt.Errorf("let go of debounce key: %w", translate(err))
		}
	}
	if after.DebounceKey() == "" {
		return nil
	}
	return claimDebounces(ctx, tx, []*job.Job{after}, []uuid.UUID{after.ID})
}

// JobByDebounceKey returns the job of owner's that last took debounce key
// key, finished or not; none is job.ErrNotFound.
func (s *Store) JobByDebounceKey(ctx context.Context, owner uuid.UUID, key string) (*job.Job, error) {
	var id uuid.UUID
	if err := s.pool.QueryRow(ctx, `SELECT job_id FROM debounces WHERE owner_id = $1 AND key = $2`, owner, key).Scan(&id); err != nil {
		return nil, fmt.Errorf("job by debounce key: %w", translate(err))
	}
	return s.GetJob(ctx, owner, id)
}

// jobByKeySQL finds the job that last took an owner's key.
const jobByKeySQL = `SELECT job_id FROM job_keys WHERE owner_id = $1 AND key = $2`

// JobByKey returns the job of owner's that holds key (the newest one that
// took it, finished or not); none is job.ErrNotFound.
func (s *Store) JobByKey(ctx context.Context, owner uuid.UUID, key string) (*job.Job, error) {
	var id uuid.UUID
	if err := s.pool.QueryRow(ctx, jobByKeySQL, owner, key).Scan(&id); err != nil {
		return nil, fmt.Errorf("job by key: %w", translate(err))
	}
	return s.GetJob(ctx, owner, id)
}

// addLabels writes the job_labels rows of the labelled jobs among jobs:
// one INSERT for a few, COPY for many; nothing for unlabelled jobs.
func addLabels(ctx context.Context, tx pgx.Tx, jobs []*job.Job) error {
	var rows [][]any
	for _, j := range jobs {
		for k, v := range j.Labels {
			rows = append(rows, []any{j.Owner, k, v, j.ID})
		}
	}
	if len(rows) == 0 {
		return nil
	}
	if _, err := tx.CopyFrom(ctx, pgx.Identifier{"job_labels"}, []string{"owner_id", "key", "value", "job_id"}, pgx.CopyFromRows(rows)); err != nil {
		return fmt.Errorf("copy labels: %w", translate(err))
	}
	return nil
}

// Create says who creates jobs, for the audit log, and how many active jobs
// their owner may have.
type Create struct {
	Audit Audit
	// MaxActive caps the jobs the owner may have that can still run
	// (scheduled or paused), the new ones included; 0 means no cap. With a
	// cap, every job must have the same owner, and creations for one owner
	// are serialized so that concurrent requests cannot pass it together.
	MaxActive int
	// Rates cap how often the owner's scheduled recurring jobs may fire
	// together in their busiest minute and second (job.Job.Load), the new
	// ones included. They are checked as MaxActive is.
	Rates Rates
	// ClaimedBy is the process number (ProcessNumber) of the dashboard that
	// stores one-off jobs claimed and adds them to the due set after the
	// commit; it is recorded on those jobs, so that the leader can re-add
	// them at once should that dashboard die in between (OrphanedClaims).
	// Zero records nothing.
	ClaimedBy int32
	// MaxFlowKeys bounds the flow keys an owner may hold (claimFlows); 0
	// for no bound.
	MaxFlowKeys int
	// Displace names jobs that hold a debounce key but have started, as
	// the caller found: a new job with the key takes it from them (see
	// claimDebounces).
	Displace []uuid.UUID
}

// QuotaError refuses jobs that would take their owner past Create.MaxActive.
//
// Active is counted no further than Max: an owner with a million active
// jobs and a cap of 1,000 costs a capped create 1,000 index entries, not a
// million, so an Active of Max means "Max or more".
type QuotaError struct {
	Active, Adding, Max int
}

func (e *QuotaError) Error() string {
	return fmt.Sprintf("%s active jobs and %d more would pass the cap of %d", e.Count(), e.Adding, e.Max)
}

// Count is Active as words: "12", or "at least 1000" when the count
// stopped at the cap.
func (e *QuotaError) Count() string {
	if e.Active >= e.Max {
		return "at least " + strconv.Itoa(e.Max)
	}
	return strconv.Itoa(e.Active)
}

const (
	countActiveSQL = `SELECT count(*) FROM jobs WHERE owner_id = $1 AND status IN ('scheduled', 'paused')`
	// countActiveUpToSQL counts no further than $2: the quota check's work
	// is bounded by the cap, not by how many jobs the owner holds.
	countActiveUpToSQL = `SELECT count(*) FROM (SELECT FROM jobs WHERE owner_id = $1 AND status IN ('scheduled', 'paused') LIMIT $2) capped`
	// lockOwnerSQL serializes the quota check and insert of one owner's jobs.
	lockOwnerSQL = `SELECT pg_advisory_xact_lock(hashtextextended('tock.jobs.' || $1::text, 0))`
)

// CreateJobs inserts jobs and their audit in one transaction: one INSERT and
// one entry for a single job, COPY and one entry for the whole batch
// (ActionJobCreateBatch). A job whose DueAt is zero is stored as
// already claimed: the caller puts its occurrence into Redis right after the
// commit. Passing the cap is a *QuotaError, passing a rate a *RateError,
// and either stores nothing. A commit left unanswered is ErrCommitUnsure.
func (s *Store) CreateJobs(ctx context.Context, jobs []*job.Job, c Create) error {
	if len(jobs) == 0 {
		return nil
	}
	if len(jobs) == 1 && plain(jobs[0], c) {
		return s.createPlain(ctx, jobs[0], c)
	}
	err := inTx(ctx, s.pool, func(tx pgx.Tx) error {
		if c.MaxActive > 0 || c.Rates.capped() {
			if err := checkQuota(ctx, tx, jobs, c.MaxActive, c.Rates); err != nil {
				return err
			}
		}
		if err := checkCalendars(ctx, tx, jobs); err != nil {
			return err
		}
		if err := claimKeys(ctx, tx, jobs); err != nil {
			return err
		}
		if err := claimFlows(ctx, tx, jobs, jobs[0].CreatedAt, c.MaxFlowKeys); err != nil {
			return err
		}
		if err := claimDebounces(ctx, tx, jobs, c.Displace); err != nil {
			return err
		}
		for _, j := range jobs {
			j.ClaimedBy = claimer(j, c.ClaimedBy)
		}
		if len(jobs) == 1 {
			if _, err := tx.Exec(ctx, insertJobSQL, jobRow(jobs[0])...); err != nil {
				return fmt.Errorf("insert job: %w", translate(err))
			}
			j := jobs[0]
			if err := addLabels(ctx, tx, jobs); err != nil {
				return err
			}
			return record(ctx, tx, c.Audit, j.CreatedAt, TargetJob, j.ID, jobspec.Created(j))
		}
		if err := s.copyJobs(ctx, tx, jobs); err != nil {
			return fmt.Errorf("copy jobs: %w", translate(err))
		}
		if err := addLabels(ctx, tx, jobs); err != nil {
			return err
		}
		// One entry for the whole request: a row per job would double the
		// rows a bulk create writes.
		ids := make([]uuid.UUID, len(jobs))
		for i, j := range jobs {
			ids[i] = j.ID
		}
		batch := Audit{Actor: c.Audit.Actor, Action: ActionJobCreateBatch}
		return record(ctx, tx, batch, jobs[0].CreatedAt, TargetBatch, job.NewID(), map[string]any{"count": len(jobs), "ids": ids})
	})
	if err != nil {
		return fmt.Errorf("create jobs: %w", err)
	}
	return nil
}

// plain says whether creating j under c takes only its own insert and its
// audit entry: no cap or rate to check (see checkQuota), no key, flow key,
// debounce key or label to claim or add.
func plain(j *job.Job, c Create) bool {
	return c.MaxActive <= 0 && (!c.Rates.capped() || j.Load == nil || j.Load.Empty()) &&
		j.Key == "" && j.Flow == nil && j.Debounce == nil && len(j.Labels) == 0 && len(j.SkipCalendars) == 0
}

// createPlain creates a plain job (see plain), the most common create, in
// one round trip: its insert and its audit entry go in one batch, which
// Postgres runs as one implicit transaction (one Sync), where BEGIN,
// each statement and COMMIT would each wait for their answer. A batch that
// failed without Postgres's answer may have committed: *CommitUnsureError,
// as for inTx.
func (s *Store) createPlain(ctx context.Context, j *job.Job, c Create) error {
	j.ClaimedBy = claimer(j, c.ClaimedBy)
	b := &pgx.Batch{}
	b.Queue(insertJobSQL, jobRow(j)...)
	if c.Audit.Recorded() {
		args, err := auditRow(c.Audit, j.CreatedAt, TargetJob, j.ID, jobspec.Created(j))
		if err != nil {
			return fmt.Errorf("create jobs: %w", err)
		}
		b.Queue(insertAuditSQL, args...)
	}
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("create jobs: %w", err)
	}
	defer conn.Release()
	pid := conn.Conn().PgConn().PID()
	if err := conn.SendBatch(ctx, b).Close(); err != nil {
		return fmt.Errorf("create jobs: %w", translate(commitErr(err, pid)))
	}
	return nil
}

func checkQuota(ctx context.Context, tx pgx.Tx, jobs []*job.Job, maxActive int, rates Rates) error {
	owner := jobs[0].Owner
	var adding []job.Load
	for _, j := range jobs {
		if j.Owner != owner {
			return fmt.Errorf("%w: a capped batch must have one owner", job.ErrInvalid)
		}
		if j.Status == job.StatusScheduled && j.Load != nil && !j.Load.Empty() {
			adding = append(adding, *j.Load)
		}
	}
	if maxActive <= 0 && len(adding) == 0 {
		return nil // nothing to check: one-off jobs under rates alone
	}
	if _, err := tx.Exec(ctx, lockOwnerSQL, owner); err != nil {
		return translate(err)
	}
	if maxActive > 0 {
		var active int
		if err := tx.QueryRow(ctx, countActiveUpToSQL, owner, maxActive).Scan(&active); err != nil {
			return translate(err)
		}
		if active+len(jobs) > maxActive {
			return &QuotaError{Active: active, Adding: len(jobs), Max: maxActive}
		}
	}
	if rates.capped() && len(adding) > 0 {
		return checkRates(ctx, tx, owner, uuid.Nil, adding, rates)
	}
	return nil
}

// CountActive counts owner's jobs that can still run (scheduled or
// paused), as the cap of Create.MaxActive counts them, without the lock
// that serializes the owner's creations: a moment later it may be off by
// the creations and finishes in between.
func (s *Store) CountActive(ctx context.Context, owner uuid.UUID) (int, error) {
	var n int
	if err := s.pool.QueryRow(ctx, countActiveSQL, owner).Scan(&n); err != nil {
		return 0, fmt.Errorf("count active jobs: %w", translate(err))
	}
	return n, nil
}

// AnyOwner passed as an owner lets an administrator's query see every owner's jobs.
var AnyOwner = uuid.Nil

// withLastRun selects the jobs of a query (which must select jobColumns and
// may order and limit) with each one's latest attempt, found through
// job_runs' primary key: one probe per job and partition, a page at a time.
func withLastRun(jobsQuery string) string {
	return `SELECT j.*, r.status, r.attempt, r.scheduled_for, r.due_at, r.started_at, r.finished_at, r.error
FROM (` + jobsQuery + `) j
LEFT JOIN LATERAL (SELECT status, attempt, scheduled_for, due_at, started_at, finished_at, error FROM job_runs
    WHERE job_runs.job_id = j.id ORDER BY scheduled_for DESC, attempt DESC LIMIT 1) r ON true`
}

// scanJobWithLastRun scans a row of a withLastRun query.
func scanJobWithLastRun(row pgx.Row) (*job.Job, error) {
	var (
		status                       *string
		attempt                      *int16
		scheduled, due, started, fin *time.Time
		errText                      *string
	)
	j, err := scanJob(row, &status, &attempt, &scheduled, &due, &started, &fin, &errText)
	if err != nil || status == nil {
		return j, err
	}
	r := &job.Run{JobID: j.ID, Owner: j.Owner, Status: job.RunStatus(*status), Attempt: int(*attempt),
		ScheduledFor: scheduled.UTC(), DueAt: due.UTC(), StartedAt: started.UTC()}
	if fin != nil {
		r.FinishedAt = fin.UTC()
	}
	if errText != nil {
		r.Error = *errText
	}
	j.LastRun = r
	return j, nil
}

var getJobSQL = withLastRun(`SELECT ` + jobColumns + ` FROM jobs WHERE id = $1 AND ($2 = '00000000-0000-0000-0000-000000000000'::uuid OR owner_id = $2)`)

// GetJob returns a job of owner (or of anyone, for AnyOwner); another owner's
// job is ErrNotFound, as if it did not exist.
func (s *Store) GetJob(ctx context.Context, owner, id uuid.UUID) (*job.Job, error) {
	j, err := scanJobWithLastRun(s.pool.QueryRow(ctx, getJobSQL, id, owner))
	if err != nil {
		return nil, fmt.Errorf("get job %s: %w", id, translate(err))
	}
	return j, nil
}

// JobFilter narrows ListJobs. Zero fields do not filter.
type JobFilter struct {
	Owner  uuid.UUID // AnyOwner for all
	Status job.Status
	Type   job.Type
	Before uuid.UUID // keyset cursor: ids older than this one
	Limit  int
	// ID, if set, selects only the job with this id.
	ID uuid.UUID
	// Name, if set, selects the jobs whose name contains it, ignoring case.
	Name string
	// Labels, if any, select the jobs that carry every one of them.
	Labels []Label
	// LabelWalk bounds a labelled listing's walk (see ListLabelledJobs);
	// 0 is DefaultLabelWalk.
	LabelWalk int
	// AtRisk selects only the jobs whose SLO is broken now (slo_states).
	AtRisk bool
}

// Label is one key and value of a job's labels.
type Label struct{ Key, Value string }

// labelledJobsSQL lists the jobs that carry every label asked for, driven
// by the first one's rows in job_labels, newest first through its index,
// each joined to its job and checked for the other labels and filters. The
// walk is bounded: at most $12 of the first label's rows are looked at, so
// a broad label with a filter that few of its jobs pass costs at most that
// many probes (see ListLabelledJobs). owner is the owner condition: an
// owner's filter walks the primary key, an administrator's (any owner)
// job_labels_any_owner.
func labelledJobsSQL(owner string) string {
	return withLastRun(`SELECT `+jobColumns+` FROM (
    SELECT j.* FROM (
        SELECT l.owner_id, l.job_id FROM job_labels l
        WHERE `+owner+` AND l.key = $8 AND l.value = $9
          AND ($4 = '00000000-0000-0000-0000-000000000000'::uuid OR l.job_id < $4)
        ORDER BY l.job_id DESC
        LIMIT $12) l
    JOIN jobs j ON j.id = l.job_id AND j.owner_id = l.owner_id
    WHERE NOT EXISTS (
          SELECT 1 FROM unnest($10::text[], $11::text[]) AS o(key, value)
          WHERE NOT EXISTS (SELECT 1 FROM job_labels x
                            WHERE x.owner_id = l.owner_id AND x.key = o.key AND x.value = o.value AND x.job_id = l.job_id))
      AND ($2 = '' OR j.status = $2::job_status)
      AND ($3 = '' OR j.type = $3)
      AND ($6 = '00000000-0000-0000-0000-000000000000'::uuid OR j.id = $6)
      AND ($7 = '' OR strpos(lower(j.name), lower($7)) > 0)
    ORDER BY l.job_id DESC
    LIMIT $5) jobs`) + `
ORDER BY j.id DESC`
}

// walkEdgeSQL finds the last of the first label's rows a bounded walk
// looked at, and the one after it if there is one: the page resumes below
// the first, and only if the second exists.
func walkEdgeSQL(owner string) string {
	return `SELECT l.job_id FROM job_labels l
WHERE ` + owner + ` AND l.key = $2 AND l.value = $3
  AND ($4 = '00000000-0000-0000-0000-000000000000'::uuid OR l.job_id < $4)
ORDER BY l.job_id DESC
OFFSET $5 - 1 LIMIT 2`
}

var (
	ownLabelledJobsSQL = labelledJobsSQL(`l.owner_id = $1`)
	anyLabelledJobsSQL = labelledJobsSQL(`$1::uuid = '00000000-0000-0000-0000-000000000000'::uuid`)
	ownWalkEdgeSQL     = walkEdgeSQL(`l.owner_id = $1`)
	anyWalkEdgeSQL     = walkEdgeSQL(`$1::uuid = '00000000-0000-0000-0000-000000000000'::uuid`)
)

var listJobsSQL = withLastRun(`SELECT `+jobColumns+` FROM jobs
WHERE ($1 = '00000000-0000-0000-0000-000000000000'::uuid OR owner_id = $1)
  AND ($2 = '' OR status = $2::job_status)
  AND ($3 = '' OR type = $3)
  AND ($4 = '00000000-0000-0000-0000-000000000000'::uuid OR id < $4)
  AND ($6 = '00000000-0000-0000-0000-000000000000'::uuid OR id = $6)
  AND ($7 = '' OR strpos(lower(name), lower($7)) > 0)
  AND (NOT $8 OR (slo_late_ms IS NOT NULL OR slo_silent_ms IS NOT NULL) AND id IN (SELECT job_id FROM slo_states s
      WHERE (s.late_since IS NOT NULL OR s.silent_since IS NOT NULL)
        AND ($1 = '00000000-0000-0000-0000-000000000000'::uuid OR s.owner_id = $1)))
ORDER BY id DESC
LIMIT $5`) + `
ORDER BY j.id DESC`

// DefaultLabelWalk bounds how many of the first label's jobs one labelled
// listing looks at.
const DefaultLabelWalk = 2_000

// ListLabelledJobs lists the jobs f selects (f.Labels must not be empty)
// newest first, at most f.Limit, looking at no more than f.LabelWalk
// (DefaultLabelWalk when 0) of the first label's jobs. When it stopped at
// that bound with fewer than f.Limit jobs, resume is where the next page
// goes on (a cursor, as JobFilter.Before); otherwise it is uuid.Nil and the
// jobs are all there is up to f.Limit.
func (s *Store) ListLabelledJobs(ctx context.Context, f JobFilter) (jobs []*job.Job, resume uuid.UUID, err error) {
	walk := f.LabelWalk
	if walk <= 0 {
		walk = DefaultLabelWalk
	}
	list, edge := ownLabelledJobsSQL, ownWalkEdgeSQL
	if f.Owner == AnyOwner {
		list, edge = anyLabelledJobsSQL, anyWalkEdgeSQL
	}
	keys, values := make([]string, 0, len(f.Labels)-1), make([]string, 0, len(f.Labels)-1)
	for _, l := range f.Labels[1:] {
		keys, values = append(keys, l.Key), append(values, l.Value)
	}
	rows, err := s.pool.Query(ctx, list, f.Owner, string(f.Status), string(f.Type), f.Before, f.Limit, f.ID, f.Name,
		f.Labels[0].Key, f.Labels[0].Value, keys, values, walk)
	if err != nil {
		return nil, uuid.Nil, fmt.Errorf("list jobs: %w", translate(err))
	}
	jobs, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (*job.Job, error) { return scanJobWithLastRun(r) })
	if err != nil {
		return nil, uuid.Nil, fmt.Errorf("list jobs: %w", translate(err))
	}
	if len(jobs) >= f.Limit {
		return jobs, uuid.Nil, nil
	}
	rows, err = s.pool.Query(ctx, edge, f.Owner, f.Labels[0].Key, f.Labels[0].Value, f.Before, walk)
	if err != nil {
		return nil, uuid.Nil, fmt.Errorf("list jobs: %w", translate(err))
	}
	edges, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
	if err != nil {
		return nil, uuid.Nil, fmt.Errorf("list jobs: %w", translate(err))
	}
	if len(edges) < 2 {
		return jobs, uuid.Nil, nil // the walk saw every row: nothing more
	}
	return jobs, edges[0], nil
}

// ListJobs returns jobs newest first, at most f.Limit of them.
func (s *Store) ListJobs(ctx context.Context, f JobFilter) ([]*job.Job, error) {
	if len(f.Labels) > 0 {
		jobs, _, err := s.ListLabelledJobs(ctx, f)
		return jobs, err
	}
	rows, err := s.pool.Query(ctx, listJobsSQL, f.Owner, string(f.Status), string(f.Type), f.Before, f.Limit, f.ID, f.Name, f.AtRisk)
	if err != nil {
		return nil, fmt.Errorf("list jobs: %w", translate(err))
	}
	jobs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (*job.Job, error) { return scanJobWithLastRun(r) })
	if err != nil {
		return nil, fmt.Errorf("list jobs: %w", translate(err))
	}
	return jobs, nil
}

// lockJobSQL locks a job of owner's (or of anyone's, for AnyOwner) for a
// change; readLockedJobSQL does the same and reads the whole job.
// cancelJobSQL cancels it: a one-off job only if no attempt of it has an
// outcome (one that runs is found in Redis: see Fencer).
var (
	lockJobSQL = `SELECT status, generation, schedule IS NOT NULL FROM jobs
WHERE id = $1 AND ($2 = '00000000-0000-0000-0000-000000000000'::uuid OR owner_id = $2) FOR UPDATE`
	readLockedJobSQL = `SELECT ` + jobColumns + ` FROM jobs
WHERE id = $1 AND ($2 = '00000000-0000-0000-0000-000000000000'::uuid OR owner_id = $2) FOR UPDATE`
	cancelJobSQL = `UPDATE jobs SET status = 'cancelled', due_at = NULL, due_hour = -1, updated_at = $2,
    generation = generation + 1
WHERE id = $1 AND status IN ('scheduled', 'paused')
  AND (schedule IS NOT NULL OR NOT EXISTS (SELECT 1 FROM job_runs WHERE job_id = $1))
RETURNING ` + jobColumns
)

// Fencer fences job id at generation gen in Redis before a change that
// moves the job to gen commits, and says whether an attempt of it runs
// (queue.Queue.Fence): the worker's start and the fence each see the
// other, so a change that refuses to meet a running attempt refuses
// rightly, and an entry of an older generation read before the change
// cannot start after it. Nil fences nothing (tests of the store alone).
type Fencer func(ctx context.Context, id uuid.UUID, gen int) (running bool, err error)

// CancelJob stops a job; it never runs afterwards. A one-off job that has
// started (an outcome in Postgres, or an attempt running, as fence says),
// or any job that is no longer scheduled or paused, is a *CancelRefused
// (job.ErrConflict); a recurring job can be cancelled at any time, which
// stops all its future occurrences (its generation moves on, so
// occurrences already in Redis are dropped by the worker). It returns the
// job as it was before and as it is after. The caller removes the job's
// members from Redis afterwards; a worker that still receives one finds
// the job cancelled, or fenced, and drops it.
func (s *Store) CancelJob(ctx context.Context, owner, id uuid.UUID, now time.Time, a Audit, fence Fencer) (before, after *job.Job, err error) {
	err = retrySerialization(ctx, func() error {
		before, after, err = s.cancelJob(ctx, owner, id, now, a, fence)
		return err
	})
	if err != nil {
		return nil, nil, fmt.Errorf("cancel job %s: %w", id, err)
	}
	return before, after, nil
}

// CancelRefused says why a job cannot be cancelled: its status, and for a
// one-off job that is still scheduled, that an attempt of it has started.
// It is job.ErrConflict.
type CancelRefused struct {
	Status  job.Status
	Started bool
}

func (e *CancelRefused) Error() string {
	if e.Started {
		return fmt.Sprintf("job is %s and has started", e.Status)
	}
	return fmt.Sprintf("job is %s", e.Status)
}

func (e *CancelRefused) Unwrap() error { return job.ErrConflict }

func (s *Store) cancelJob(ctx context.Context, owner, id uuid.UUID, now time.Time, a Audit, fence Fencer) (before, after *job.Job, err error) {
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		b, err := scanJob(tx.QueryRow(ctx, readLockedJobSQL, id, owner))
		if err != nil {
			return translate(err)
		}
		pending := b.Status == job.StatusScheduled || b.Status == job.StatusPaused
		if !pending {
			return &CancelRefused{Status: b.Status}
		}
		if fence != nil {
			running, err := fence(ctx, id, b.Generation+1)
			if err != nil {
				return err
			}
			if running && !b.Recurring() {
				return &CancelRefused{Status: b.Status, Started: true}
			}
		}
		j, err := scanJob(tx.QueryRow(ctx, cancelJobSQL, id, now))
		if err != nil {
			if err == pgx.ErrNoRows {
				// A one-off job with an outcome in Postgres.
				return &CancelRefused{Status: b.Status, Started: true}
			}
			return translate(err)
		}
		before, after = b, j
		return record(ctx, tx, a, now, TargetJob, id, map[string]any{"status": map[string]any{"from": b.Status, "to": j.Status}})
	})
	return before, after, err
}

const releaseClaimSQL = `UPDATE jobs SET due_at = run_at, due_hour = extract(hour FROM run_at AT TIME ZONE 'UTC')::smallint
WHERE id = ANY($1) AND due_hour = -1 AND status = 'scheduled' AND run_at IS NOT NULL`

// ReleaseClaim hands claimed one-off jobs back to the loader, in one
// statement, for when the caller could not put their occurrences into Redis
// after all.
func (s *Store) ReleaseClaim(ctx context.Context, ids ...uuid.UUID) error {
	if _, err := s.pool.Exec(ctx, releaseClaimSQL, ids); err != nil {
		return fmt.Errorf("release claims of %d jobs: %w", len(ids), translate(err))
	}
	return nil
}

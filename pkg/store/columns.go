package store

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/tockhq/tock/pkg/job"
	"github.com/tockhq/tock/pkg/jobspec"
)

// The jobs table's column lists, derived from jobspec.Fields, the one
// definition of a job's fields: the columns a job is read from (jobColumns,
// scanJob), inserted into (jobCopyColumns, insertJobSQL, jobRow; a bulk
// create's binary COPY in copy.go, each column encoded by its Postgres
// type) and updated by an edit (updateJobSQL, updateArgs).
var (
	allColumns  = jobspec.Columns()
	readColumns = filterColumns(func(c *jobspec.Column) bool { return c.Readable() })
	editColumns = filterColumns(func(c *jobspec.Column) bool { return !c.Fixed })

	jobColumns        = selectList(readColumns)
	jobCopyColumns    = columnNames(allColumns)
	jobCopyColumnList = strings.Join(jobCopyColumns, ", ")
	insertJobSQL      = `INSERT INTO jobs (` + jobCopyColumnList + `) VALUES (` + placeholders(1, len(allColumns)) + `)`
)

func filterColumns(keep func(c *jobspec.Column) bool) []*jobspec.Column {
	var out []*jobspec.Column
	for _, c := range allColumns {
		if keep(c) {
			out = append(out, c)
		}
	}
	return out
}

// selectList reads cols, each under its own name.
func selectList(cols []*jobspec.Column) string {
	parts := make([]string, len(cols))
	for i, c := range cols {
		parts[i] = c.Select()
		if c.Select() != c.Name {
			parts[i] += " AS " + c.Name
		}
	}
	return strings.Join(parts, ", ")
}

func columnNames(cols []*jobspec.Column) []string {
	out := make([]string, len(cols))
	for i, c := range cols {
		out[i] = c.Name
	}
	return out
}

// placeholders is "$from, ..., $(from+n-1)".
func placeholders(from, n int) string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = "$" + strconv.Itoa(from+i)
	}
	return strings.Join(parts, ", ")
}

// scanJob scans jobColumns, then any extra columns into extra.
func scanJob(row pgx.Row, extra ...any) (*job.Job, error) {
	j := &job.Job{}
	dest := make([]any, 0, len(readColumns)+len(extra))
	var then []func() error
	for _, c := range readColumns {
		d, t := c.Scan(j)
		dest = append(dest, d)
		if t != nil {
			then = append(then, t)
		}
	}
	if err := row.Scan(append(dest, extra...)...); err != nil {
		return nil, err
	}
	for _, t := range then {
		if err := t(); err != nil {
			return nil, fmt.Errorf("job %s: %w", j.ID, err)
		}
	}
	return j, nil
}

// jobRow is what j writes into jobCopyColumns.
func jobRow(j *job.Job) []any {
	out := make([]any, len(allColumns))
	for i, c := range allColumns {
		out[i] = c.Value(j)
	}
	return out
}

// updateJobSQL writes an edited job: $1 its id, $2 the due hour it had
// (the partition it is in), then editColumns. A move to a new generation
// also frees a buffer_one job's waiting place: the occurrence that held it
// belongs to the old generation and will never start.
var updateJobSQL = func() string {
	sets := make([]string, len(editColumns))
	gen := 0
	for i, c := range editColumns {
		sets[i] = c.Name + " = $" + strconv.Itoa(i+3)
		if c.Name == "generation" {
			gen = i + 3
		}
	}
	if gen == 0 {
		panic("store: the jobs columns have no generation")
	}
	g := "$" + strconv.Itoa(gen)
	return `UPDATE jobs SET ` + strings.Join(sets, ", ") + `,
    overlap_wait = CASE WHEN generation = ` + g + ` THEN overlap_wait END,
    overlap_wait_until = CASE WHEN generation = ` + g + ` THEN overlap_wait_until END
WHERE id = $1 AND due_hour = $2
RETURNING ` + jobColumns
}()

// updateArgs are updateJobSQL's arguments for j, which was in the
// partition of hour.
func updateArgs(j *job.Job, hour int16) []any {
	out := make([]any, 0, len(editColumns)+2)
	out = append(out, j.ID, hour)
	for _, c := range editColumns {
		out = append(out, c.Value(j))
	}
	return out
}

package store_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tockhq/tock/pkg/job"
)

// A batch where a column is set in one job only (a key, a priority) stores
// it for that job and NULL (or the zero value) for the others.
func TestCreateBatchWithSparseColumns(t *testing.T) {
	b := setup(t)
	at := b.now.Add(time.Hour)
	plain := newJob(ownerA, at)
	keyed := newJob(ownerA, at, func(j *job.Job) { j.Key, j.Priority = "only-one", 7 })
	b.create(t, plain, keyed, newJob(ownerA, at))

	got, err := b.st.GetJob(b.ctx, ownerA, keyed.ID)
	require.NoError(t, err)
	require.Equal(t, "only-one", got.Key)
	require.Equal(t, 7, int(got.Priority))
	got, err = b.st.GetJob(b.ctx, ownerA, plain.ID)
	require.NoError(t, err)
	require.Empty(t, got.Key)
	require.Zero(t, got.Priority)
	var keys int
	require.NoError(t, b.st.Pool().QueryRow(b.ctx, `SELECT count(*) FROM jobs WHERE key IS NOT NULL`).Scan(&keys))
	require.Equal(t, 1, keys)
}

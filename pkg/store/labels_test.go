package store_test

import (
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/tockhq/tock/pkg/job"
	"github.com/tockhq/tock/pkg/store"
)

// TestListLabelledJobsBoundsItsWalk: a label that many jobs carry, with a
// filter that only the oldest passes, is walked at most LabelWalk rows a
// call; the short pages say where to resume, and following them finds the
// job.
func TestListLabelledJobsBoundsItsWalk(t *testing.T) {
	t.Parallel()
	b := setup(t)
	jobs := make([]*job.Job, 30)
	for i := range jobs {
		jobs[i] = newJob(ownerA, b.now.Add(time.Hour+time.Duration(i)*time.Millisecond), func(j *job.Job) {
			j.Labels = map[string]string{"plan": "pro"}
			if i == 0 {
				j.Status, j.DueAt = job.StatusPaused, time.Time{}
			}
		})
	}
	b.create(t, jobs...)
	f := store.JobFilter{Owner: ownerA, Labels: []store.Label{{Key: "plan", Value: "pro"}}, Status: job.StatusPaused, Limit: 5, LabelWalk: 10}
	var found []uuid.UUID
	calls := 0
	for {
		calls++
		got, resume, err := b.st.ListLabelledJobs(b.ctx, f)
		require.NoError(t, err)
		for _, j := range got {
			found = append(found, j.ID)
		}
		if resume == uuid.Nil {
			break
		}
		require.Less(t, calls, 10, "the walk moves on")
		f.Before = resume
	}
	require.Equal(t, []uuid.UUID{jobs[0].ID}, found)
	require.Equal(t, 3, calls, "30 rows, 10 a call")

	// Unbounded in effect (the default), one call finds it and says it is all.
	f.Before, f.LabelWalk = uuid.Nil, 0
	got, resume, err := b.st.ListLabelledJobs(b.ctx, f)
	require.NoError(t, err)
	require.Len(t, got, 1)
	require.Equal(t, uuid.Nil, resume)
}

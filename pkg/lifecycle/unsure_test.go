package lifecycle_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap/zaptest"

	"github.com/tockhq/tock/pkg/job"
	"github.com/tockhq/tock/pkg/lifecycle"
	"github.com/tockhq/tock/pkg/store"
	"github.com/tockhq/tock/pkg/testenv"
)

func TestCreateWhoseCommitIsUnanswered(t *testing.T) {
	t.Parallel()

	// A plain job commits in one batch (its Sync); a labelled one in a
	// transaction of its own (COMMIT).
	for _, tc := range []struct {
		name      string
		committed bool
		labels    map[string]string
	}{
		{"CommittedIsFoundAndEnqueued", true, nil},
		{"RolledBackIsFoundAbsent", false, nil},
		{"CommittedInATransactionIsFoundAndEnqueued", true, map[string]string{"team": "a"}},
		{"RolledBackInATransactionIsFoundAbsent", false, map[string]string{"team": "a"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := live(t)
			jobs := lifecycle.New(testenv.CutCommit(t, b.st, tc.committed), b.ring, 10*time.Minute, time.Minute, zaptest.NewLogger(t))
			soon := testenv.Job(owner, b.now.Add(3*time.Second))
			soon.Labels = tc.labels
			err := jobs.Create(t.Context(), []*job.Job{soon}, b.now, store.Create{})
			require.ErrorIs(t, err, store.ErrCommitUnsure, "a commit without an answer is not a refusal")
			var u *lifecycle.UnsureError
			require.True(t, errors.As(err, &u))

			select {
			case <-u.Done():
			case <-time.After(20 * time.Second):
				t.Fatal("the create was not looked for within 20 s")
			}
			stored, known := u.Stored()
			require.True(t, known)
			require.Equal(t, tc.committed, stored)
			_, err = b.st.GetJob(t.Context(), owner, soon.ID)
			if !tc.committed {
				require.ErrorIs(t, err, job.ErrNotFound)
				require.False(t, b.queued(t, soon.Occurrence(soon.RunAt)))
				return
			}
			require.NoError(t, err)
			require.True(t, b.queued(t, soon.Occurrence(soon.RunAt)),
				"a job whose commit went unanswered is in the due set once found, not left to the reconciler")
		})
	}
}

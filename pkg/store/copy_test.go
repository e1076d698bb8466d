package store_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/tockhq/tock/pkg/job"
)

// A bulk create's binary COPY (copyJobs) must store every column exactly
// as a single create's INSERT, encoded by pgx, does: the same job, once
// alone and once in a batch, reads back the same but for its id and key.
func TestBulkCopyStoresWhatAnInsertStores(t *testing.T) {
	t.Parallel()
	b := setup(t)
	owner := uuid.New()
	runAt := b.now.Add(time.Hour).Add(123456 * time.Microsecond)
	kinds := map[string]func(key string) *job.Job{
		"recurring with every field": func(key string) *job.Job {
			return newJob(owner, runAt, func(j *job.Job) {
				j.Name = "every field ü"
				j.Priority, j.MaxRetries, j.Timeout = -7, 9, 1500*time.Millisecond
				j.Payload = json.RawMessage(`{"url":"https://example.com/x","headers":{"a":"b"}}`)
				j.Schedule = json.RawMessage(`{"cron":"*/5 * * * *"}`)
				j.Timezone = "Europe/Berlin"
				j.Generation, j.Occurrences, j.PerHour = 3, 41, 12
				j.LastAt = runAt.Add(-5 * time.Minute)
				j.Load = &job.Load{Hours: 1<<23 | 1, Minutes: 1<<59 | 3, Seconds: 1 << 58}
				j.Retention, j.History = 72*time.Hour, job.History("failures")
				j.Labels = map[string]string{"team": "a", "env": "prod"}
				j.Key = key
				j.ExpiresAfter = 90 * time.Second
				j.Overlap = job.Overlap("skip")
				j.Notify = &job.Notify{On: []job.NotifyEvent{"failure"}, Webhook: &job.NotifyWebhook{URL: "https://example.com/n"}}
				j.Flow = &job.Flow{Key: "customer-42", Concurrency: 3}
				j.Secrets = "sealed:abc"
				j.TraceParent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
				j.DueAt = runAt
			})
		},
		"one-off claimed": func(key string) *job.Job {
			return newJob(owner, runAt, func(j *job.Job) { j.DueAt = time.Time{} })
		},
	}
	for name, mk := range kinds {
		alone := mk("alone-" + name)
		b.create(t, alone)
		batch := []*job.Job{mk("batch-" + name), mk("")}
		batch[1].Key = ""
		b.create(t, batch...)
		// As text: a map would read the bigints as float64s.
		read := func(id uuid.UUID) string {
			var row string
			require.NoError(t, b.st.Pool().QueryRow(b.ctx,
				`SELECT (to_jsonb(j) - 'id' - 'key')::text FROM jobs j WHERE id = $1`, id).Scan(&row))
			return row
		}
		want := read(alone.ID)
		require.Equal(t, want, read(batch[0].ID), name)
	}
}

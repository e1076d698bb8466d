package store_test

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tockhq/tock/pkg/job"
	"github.com/tockhq/tock/pkg/jobspec"
	"github.com/tockhq/tock/pkg/secretbox"
	"github.com/tockhq/tock/pkg/store"
	"github.com/tockhq/tock/pkg/testenv"
)

// TestSealJobSecrets: a job stored before secrets were sealed, its
// credentials in clear in its payload and notify (secrets NULL), is sealed
// by the pass: fingerprints in their places, the values sealed in secrets,
// and they open back to the values (the worker's Fetch reveals them: see
// TestFetchRevealsSecrets). A second pass finds nothing; a rotation pass
// reseals under the new key without changing a fingerprint.
func TestSealJobSecrets(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	k1, k2 := bytes.Repeat([]byte{3}, 32), bytes.Repeat([]byte{5}, 32)
	box1, err := secretbox.New(k1)
	require.NoError(t, err)
	st := testenv.Store(t, store.Secrets(box1))
	now := time.Now().UTC().Truncate(time.Millisecond)
	id := job.NewID()
	payload := `{"url": "https://example.com/hook", "headers": {"Authorization": "Bearer legacy-1", "Accept": "text/plain"}}`
	notify := `{"on": ["failed"], "slack": {"webhook_url": "https://hooks.slack.com/services/T/B/legacy-2"}}`
	_, err = st.Pool().Exec(ctx, `INSERT INTO jobs (id, owner_id, due_hour, type, status, max_retries, timeout_ms, run_at, due_at,
    created_at, updated_at, name, payload, notify)
  VALUES ($1, $2, extract(hour FROM $3::timestamptz AT TIME ZONE 'UTC')::smallint, 'webhook', 'scheduled', 0, 5000, $3, $3, $4, $4, 'old', $5::jsonb, $6::jsonb)`,
		id, store.BootstrapAdmin, now.Add(time.Hour), now, payload, notify)
	require.NoError(t, err)

	j, err := st.GetJob(ctx, store.AnyOwner, id)
	require.NoError(t, err)
	require.True(t, j.SecretsUnsealed, "a row from before has no secrets column")

	n, skipped, err := st.SealJobSecrets(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	require.Zero(t, skipped)
	j, err = st.GetJob(ctx, store.AnyOwner, id)
	require.NoError(t, err)
	require.False(t, j.SecretsUnsealed)
	require.NotContains(t, string(j.Payload), "legacy-1")
	require.Contains(t, string(j.Payload), "text/plain", "a plain header stays shown")
	raw, err := json.Marshal(j.Notify)
	require.NoError(t, err)
	require.NotContains(t, string(raw), "legacy-2")
	require.Contains(t, j.Secrets, "enc:v1:")
	secrets, err := jobspec.OpenSecrets(box1, j)
	require.NoError(t, err)
	p, n2, err := jobspec.Reveal(j.Type, j.Payload, j.Notify, secrets)
	require.NoError(t, err)
	require.Contains(t, string(p), "Bearer legacy-1")
	require.Equal(t, "https://hooks.slack.com/services/T/B/legacy-2", n2.Slack.WebhookURL)

	n, _, err = st.SealJobSecrets(ctx)
	require.NoError(t, err)
	require.Zero(t, n, "nothing is left to seal")

	// The operator key rotates: the secrets are sealed again, under it.
	box2, err := secretbox.New(k2, k1)
	require.NoError(t, err)
	rotated, err := store.Open(ctx, testenv.URLOf(t, st), 2, store.Secrets(box2))
	require.NoError(t, err)
	t.Cleanup(rotated.Close)
	n, skipped, err = rotated.ResealJobSecrets(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	require.Zero(t, skipped)
	after, err := rotated.GetJob(ctx, store.AnyOwner, id)
	require.NoError(t, err)
	require.Equal(t, j.Payload, after.Payload, "fingerprints do not change")
	require.True(t, box2.Current(after.Secrets))
}

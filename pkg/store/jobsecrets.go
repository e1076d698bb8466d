package store

import (
	"context"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/tockhq/tock/pkg/job"
	"github.com/tockhq/tock/pkg/jobspec"
	"github.com/tockhq/tock/pkg/secretbox"
)

// SealBatch is how many jobs SealJobSecrets and ResealJobSecrets rewrite
// per statement.
const SealBatch = 500

// unsealedJobsSQL walks jobs_unsealed: jobs stored before secrets were
// sealed (secrets NULL), and jobs whose secrets a deployment without an
// operator key kept in clear.
var unsealedJobsSQL = `SELECT ` + jobColumns + ` FROM jobs
WHERE (secrets IS NULL OR (secrets <> '' AND secrets NOT LIKE 'enc:%')) AND id > $1
ORDER BY id LIMIT $2`

// sealJobsSQL writes jobs' sealed secrets with the payload and notify
// that now hold their fingerprints, each only if it is still what was
// read: a job edited meanwhile is left for the next pass.
const sealJobsSQL = `UPDATE jobs j SET payload = v.payload, notify = v.notify, secrets = v.secrets
FROM unnest($1::uuid[], $2::jsonb[], $3::jsonb[], $4::text[], $5::jsonb[], $6::jsonb[], $7::text[])
    AS v(id, payload, notify, secrets, old_payload, old_notify, old_secrets)
WHERE j.id = v.id AND j.payload = v.old_payload AND j.notify IS NOT DISTINCT FROM v.old_notify
  AND j.secrets IS NOT DISTINCT FROM v.old_secrets`

// SealJobSecrets seals the credentials of every job that holds them in
// clear: in its payload and notify (stored before this release), or in
// its secrets column (stored without an operator key). Each gets a
// fingerprint in its place and its values sealed under the current key;
// deliveries do not change. It runs at every dashboard's start, in batches
// of SealBatch; without an operator key it changes nothing (secrets then
// stay in clear, as the dashboard warns). It returns how many jobs it
// rewrote; one it cannot rewrite (its secrets column is sealed under a key
// no longer held) is counted in skipped.
func (s *Store) SealJobSecrets(ctx context.Context) (sealed, skipped int, err error) {
	if !s.secrets.Encrypts() {
		return 0, 0, nil
	}
	after := uuid.Nil
	for {
		rows, err := s.pool.Query(ctx, unsealedJobsSQL, after, SealBatch)
		if err != nil {
			return sealed, skipped, fmt.Errorf("seal job secrets: %w", translate(err))
		}
		batch, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (*job.Job, error) { return scanJob(r) })
		if err != nil {
			return sealed, skipped, fmt.Errorf("seal job secrets: %w", translate(err))
		}
		if len(batch) == 0 {
			return sealed, skipped, nil
		}
		var w sealWrite
		for _, j := range batch {
			if err := w.add(s.secrets, j); err != nil {
				skipped++
			}
		}
		n, err := w.exec(ctx, s)
		if err != nil {
			return sealed, skipped, err
		}
		sealed += n
		after = batch[len(batch)-1].ID
	}
}

// sealWrite collects a batch of sealJobsSQL.
type sealWrite struct {
	ids                            []uuid.UUID
	payloads, notifies, oldP, oldN [][]byte
	secrets, oldSecrets            []*string
}

func (w *sealWrite) add(box *secretbox.Box, j *job.Job) error {
	oldPayload, oldNotify := []byte(j.Payload), notifyJSON(j.Notify)
	var oldSecrets *string
	if !j.SecretsUnsealed {
		s := j.Secrets
		oldSecrets = &s
	}
	if err := jobspec.SealLegacy(box, j); err != nil {
		return err
	}
	sealed := j.Secrets
	w.ids = append(w.ids, j.ID)
	w.payloads, w.notifies = append(w.payloads, []byte(j.Payload)), append(w.notifies, notifyJSON(j.Notify))
	w.oldP, w.oldN = append(w.oldP, oldPayload), append(w.oldN, oldNotify)
	w.secrets, w.oldSecrets = append(w.secrets, &sealed), append(w.oldSecrets, oldSecrets)
	return nil
}

func (w *sealWrite) exec(ctx context.Context, s *Store) (int, error) {
	if len(w.ids) == 0 {
		return 0, nil
	}
	tag, err := s.pool.Exec(ctx, sealJobsSQL, w.ids, w.payloads, w.notifies, w.secrets, w.oldP, w.oldN, w.oldSecrets)
	if err != nil {
		return 0, fmt.Errorf("seal job secrets: %w", translate(err))
	}
	return int(tag.RowsAffected()), nil
}

// notifyJSON is the notify column's value for n.
func notifyJSON(n *job.Notify) []byte {
	c, _ := jobspec.Lookup("notify")
	for _, col := range c.Columns {
		if v, ok := col.Value(&job.Job{Notify: n}).([]byte); ok {
			return v
		}
	}
	return nil
}

// sealedUnderSQL walks the jobs whose secrets a key other than the current
// one sealed: a whole-table walk, made only while previous keys are held
// (an operator key's rotation).
const sealedUnderSQL = `SELECT id, owner_id, secrets FROM jobs
WHERE id > $1 AND secrets LIKE 'enc:%' AND secrets NOT LIKE $2
ORDER BY id LIMIT $3`

// ResealJobSecrets seals again, under the current operator key, the job
// secrets a previous key sealed, in batches of SealBatch: what rotating
// TOCK_SECRET_KEY asks of every dashboard at start while
// TOCK_SECRET_KEY_PREVIOUS is set (without previous keys it does nothing).
// Fingerprints do not change. A job whose secrets no held key opens is
// counted in skipped.
func (s *Store) ResealJobSecrets(ctx context.Context) (resealed, skipped int, err error) {
	if !s.secrets.Rotating() {
		return 0, 0, nil
	}
	current := s.secrets.CurrentKey()
	after := uuid.Nil
	for {
		rows, err := s.pool.Query(ctx, sealedUnderSQL, after, "enc:v1:"+current+":%", SealBatch)
		if err != nil {
			return resealed, skipped, fmt.Errorf("reseal job secrets: %w", translate(err))
		}
		type row struct {
			id, owner uuid.UUID
			secrets   string
		}
		batch, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (row, error) {
			var x row
			return x, r.Scan(&x.id, &x.owner, &x.secrets)
		})
		if err != nil {
			return resealed, skipped, fmt.Errorf("reseal job secrets: %w", translate(err))
		}
		if len(batch) == 0 {
			return resealed, skipped, nil
		}
		var ids []uuid.UUID
		var olds, news []string
		for _, x := range batch {
			plain, err := s.secrets.Open(x.secrets, x.owner[:])
			if err != nil {
				skipped++
				continue
			}
			fresh, err := s.secrets.Seal(plain, x.owner[:])
			if err != nil {
				return resealed, skipped, fmt.Errorf("reseal job secrets: %w", err)
			}
			ids, olds, news = append(ids, x.id), append(olds, x.secrets), append(news, fresh)
		}
		if len(ids) > 0 {
			tag, err := s.pool.Exec(ctx, `UPDATE jobs j SET secrets = v.new FROM unnest($1::uuid[], $2::text[], $3::text[]) AS v(id, old, new)
WHERE j.id = v.id AND j.secrets = v.old`, ids, olds, news)
			if err != nil {
				return resealed, skipped, fmt.Errorf("reseal job secrets: %w", translate(err))
			}
			resealed += int(tag.RowsAffected())
		}
		after = batch[len(batch)-1].id
	}
}

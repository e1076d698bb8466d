-- Write-only secrets (docs/architecture.md, "Secrets"): a job's payload and
-- notify hold a fingerprint in the place of each credential, and the
-- credentials themselves live here, sealed under the operator key as one
-- JSON object from fingerprint to value; '' when the job holds none.
--
-- Jobs stored before this migration have NULL: their payload and notify may
-- still hold credentials in clear. Views hide them all the same, the worker
-- delivers them as they are, and every dashboard seals them at start
-- (store.SealJobSecrets), walking the partial index below. It also holds
-- the jobs whose secrets were stored in clear by a deployment without an
-- operator key, sealed the same way once a key is set; sealed rows, and
-- rows without secrets, never enter it. Nullable without a default: adding
-- it rewrites nothing.
ALTER TABLE jobs ADD COLUMN secrets text;
CREATE INDEX jobs_unsealed ON jobs (id)
    WHERE secrets IS NULL OR (secrets <> '' AND secrets NOT LIKE 'enc:%');

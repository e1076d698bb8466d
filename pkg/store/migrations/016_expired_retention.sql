-- An expired job has finished like a completed one: retention's indexes
-- take it in. A migration of its own: a value added to an enum cannot be
-- used in the transaction that added it.
CREATE INDEX jobs_idle_finished_default_2 ON jobs_idle (updated_at)
    WHERE status IN ('completed', 'permanently_failed', 'cancelled', 'expired') AND retention_ms IS NULL;
DROP INDEX jobs_idle_finished_default;
ALTER INDEX jobs_idle_finished_default_2 RENAME TO jobs_idle_finished_default;
CREATE INDEX jobs_idle_purge_2 ON jobs_idle (tock_purge_at(updated_at, retention_ms))
    WHERE status IN ('completed', 'permanently_failed', 'cancelled', 'expired') AND retention_ms IS NOT NULL;
DROP INDEX jobs_idle_purge;
ALTER INDEX jobs_idle_purge_2 RENAME TO jobs_idle_purge;

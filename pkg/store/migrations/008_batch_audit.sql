-- A bulk create writes one audit entry for the whole request (its count and
-- job ids), targeting the batch, instead of one per job.
ALTER TABLE audit_log DROP CONSTRAINT audit_log_target_type_check;
ALTER TABLE audit_log ADD CONSTRAINT audit_log_target_type_check CHECK (target_type IN ('job', 'user', 'key', 'batch'));


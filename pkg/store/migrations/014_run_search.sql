-- Runs across jobs (GET /api/v1/runs): an owner's finished runs by status,
-- newest first, for listing and counting them. Only finished runs enter it,
-- once each, when the worker records the outcome (that update is already
-- not HOT: status is in partial index predicates); running runs are few and
-- come from job_runs_running. Created on the partitioned table, so every day
-- partition has it, those attached later included. Building it reads every
-- run once and holds writes to job_runs meanwhile.
CREATE INDEX job_runs_search ON job_runs (owner_id, status, scheduled_for DESC, attempt DESC)
    WHERE status <> 'running';

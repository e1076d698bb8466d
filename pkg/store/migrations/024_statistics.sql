-- No statistics for the columns no query filters, joins, sorts or groups
-- on: the payload and the other documents a job carries, its name (searched
-- only through strpos(lower(name), ...), which no statistics serve), and a
-- run's output and error (the same). An ANALYZE of a partition sorts its
-- 30,000-row sample once per column with statistics: for jobs_idle the
-- payload's alone was 40 % of a 230 ms ANALYZE. Nothing is rewritten; the
-- partitions, present and future, inherit the setting.
ALTER TABLE jobs
    ALTER COLUMN payload SET STATISTICS 0,
    ALTER COLUMN name SET STATISTICS 0,
    ALTER COLUMN notify SET STATISTICS 0,
    ALTER COLUMN labels SET STATISTICS 0,
    ALTER COLUMN trace_parent SET STATISTICS 0,
    ALTER COLUMN secrets SET STATISTICS 0;
ALTER TABLE job_runs
    ALTER COLUMN output SET STATISTICS 0,
    ALTER COLUMN error SET STATISTICS 0;

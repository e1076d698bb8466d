-- tock's first schema. Shipped migrations are never edited: add a new file.

CREATE TYPE job_type AS ENUM ('webhook', 'ping', 'slack', 'email');
CREATE TYPE job_status AS ENUM ('scheduled', 'paused', 'completed', 'permanently_failed', 'cancelled');
CREATE TYPE run_status AS ENUM ('running', 'completed', 'failed', 'permanently_failed');

CREATE TABLE users (
    id          uuid PRIMARY KEY,
    name        text NOT NULL,
    role        text NOT NULL CHECK (role IN ('admin', 'user')),
    created_at  timestamptz NOT NULL DEFAULT now(),
    disabled_at timestamptz
);

-- The bootstrap administrator: TOCK_ADMIN_TOKEN authenticates as this user.
INSERT INTO users (id, name, role) VALUES ('00000000-0000-0000-0000-000000000001', 'admin', 'admin');

-- jobs is partitioned by the UTC hour of day of due_at, the next occurrence that
-- still has to be handed to Redis: 24 partitions jobs_h00..jobs_h23, and
-- jobs_idle (due_hour = -1) for jobs with nothing left to load (claimed into
-- Redis, finished, cancelled). The loader's window of a few minutes touches one or
-- two hour partitions, finished jobs never weigh on it, and no partition has to be
-- created ahead or split: a job due in 15 days sits in its hour's partition and is
-- found through the due_at index.
CREATE TABLE jobs (
    id          uuid NOT NULL,
    owner_id    uuid NOT NULL,
    due_hour    smallint NOT NULL,
    type        job_type NOT NULL,
    status      job_status NOT NULL DEFAULT 'scheduled',
    priority    smallint NOT NULL DEFAULT 0,
    max_retries smallint NOT NULL,
    timeout_ms  integer NOT NULL,
    run_at      timestamptz,
    due_at      timestamptz,
    created_at  timestamptz NOT NULL,
    updated_at  timestamptz NOT NULL,
    name        text NOT NULL,
    payload     jsonb NOT NULL,
    PRIMARY KEY (id, due_hour),
    CONSTRAINT jobs_due_hour_matches CHECK (
        due_hour = coalesce(extract(hour FROM due_at AT TIME ZONE 'UTC')::smallint, -1))
) PARTITION BY LIST (due_hour);

CREATE TABLE jobs_idle PARTITION OF jobs FOR VALUES IN (-1);
DO $$
BEGIN
    FOR h IN 0..23 LOOP
        EXECUTE format('CREATE TABLE jobs_h%s PARTITION OF jobs FOR VALUES IN (%s)', lpad(h::text, 2, '0'), h);
        -- Only hour partitions hold loadable jobs, so only they carry the loader's index.
        EXECUTE format('CREATE INDEX jobs_h%s_due ON jobs_h%s (due_at) WHERE status = ''scheduled''',
                       lpad(h::text, 2, '0'), lpad(h::text, 2, '0'));
    END LOOP;
END $$;

-- Listing a user's jobs newest first; ids are UUIDv7, so id order is creation order.
CREATE INDEX jobs_owner ON jobs (owner_id, id);
-- The reconciler's look for claimed one-off jobs that never reached a worker.
CREATE INDEX jobs_idle_claimed ON jobs_idle (run_at) WHERE status = 'scheduled';

-- job_runs holds one row per attempt, partitioned by the UTC day of scheduled_for.
-- The scheduler creates day partitions ahead and drops expired ones; the default
-- partition only catches a day nobody created, and upkeep moves its rows out.
CREATE TABLE job_runs (
    job_id        uuid NOT NULL,
    scheduled_for timestamptz NOT NULL,
    attempt       smallint NOT NULL,
    status        run_status NOT NULL,
    id            uuid NOT NULL,
    owner_id      uuid NOT NULL,
    due_at        timestamptz NOT NULL,
    started_at    timestamptz NOT NULL,
    lease_until   timestamptz NOT NULL,
    finished_at   timestamptz,
    output        text,
    error         text,
    PRIMARY KEY (job_id, scheduled_for, attempt)
) PARTITION BY RANGE (scheduled_for);

CREATE TABLE job_runs_default PARTITION OF job_runs DEFAULT;
-- The reconciler's look for attempts whose worker vanished.
CREATE INDEX job_runs_running ON job_runs (lease_until) WHERE status = 'running';

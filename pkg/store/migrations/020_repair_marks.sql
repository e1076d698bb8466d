-- Two marks that let the scheduler's leader repair within seconds what
-- Redis lost or a dashboard left half done.
--
-- tock_marks.load counts the loader's claims: each claim that hands
-- occurrences to Redis raises it in its transaction and writes the new value
-- to every shard's marker in the same pipeline as its ZADDs, before the
-- commit. A shard whose marker is below the committed count lost writes (a
-- failover to a replica that had not received them): the leader rebuilds.
CREATE TABLE tock_marks (
    name text PRIMARY KEY,
    seq  bigint NOT NULL
);
INSERT INTO tock_marks (name, seq) VALUES ('load', 0);

-- A dashboard takes a number at start; a one-off job it stores claimed, to
-- be added to the due set right after the commit, records that number in
-- claimed_by. When that dashboard stops beating in Redis, the leader re-adds
-- its claims that never reached the due set. Nullable without a default:
-- adding it rewrites nothing, and jobs the loader claims leave it NULL.
CREATE SEQUENCE tock_process_seq AS integer CYCLE;
ALTER TABLE jobs ADD COLUMN claimed_by integer;

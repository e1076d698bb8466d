"""The routes under /api/v1/jobs."""

from __future__ import annotations

import builtins
from collections.abc import Iterable, Iterator
from dataclasses import replace
from datetime import datetime

from ._transport import Query, Transport, path
from .filters import JobFilter
from .pages import iterate
from .types_gen import (Aborted, Backfill, BackfillList, BackfillRequest, BatchCreated, BatchRequest, BulkRequest,
                        BulkResult, DryRun, Job, JobCounts, JobList, JobPatch, JobSpec, Retried, RetryRequest, Run,
                        RunList, SkippedUpcoming, Triggered, Upcoming, UpcomingList)

# The overlap policies of a recurring job (JobSpec.overlap) and of a
# backfill (Jobs.backfill's overlap).
OVERLAP_ALLOW = "allow"
OVERLAP_SKIP = "skip"
OVERLAP_BUFFER_ONE = "buffer_one"

# The actions of bulk (BulkRequest.action).
BULK_PAUSE = "pause"
BULK_RESUME = "resume"
BULK_CANCEL = "cancel"
BULK_TRIGGER = "trigger"
BULK_RETRY = "retry"

# The actions of a DryRun: what a create, put or update would do.
DRY_RUN_CREATE = "create"
DRY_RUN_UPDATE = "update"
DRY_RUN_UNCHANGED = "unchanged"

_JOBS = "/api/v1/jobs"
_BY_KEY = "/api/v1/jobs/by-key"
_DRY_RUN = Query(dry_run=True)


class Occurrences(builtins.list[Upcoming]):
    """What Jobs.next and Client.preview return: the occurrences that will
    run, earliest first, as the list they always were; and skipped, those
    among them that the calendars (skip_calendars) leave out, each with its
    reason (empty when none)."""

    skipped: builtins.list[SkippedUpcoming]

    def __init__(self, items: Iterable[Upcoming] = (), skipped: Iterable[SkippedUpcoming] = ()):
        super().__init__(items)
        self.skipped = builtins.list(skipped)

    def __repr__(self) -> str:
        return f"Occurrences({builtins.list.__repr__(self)}, skipped={self.skipped!r})"

    @classmethod
    def of(cls, answer: UpcomingList) -> Occurrences:
        """The occurrences of an answer of GET /api/v1/jobs/{id}/next or POST
        /api/v1/schedules/preview."""
        return cls(answer.next, answer.skipped or ())


class Jobs:
    """The routes under /api/v1/jobs. Every write takes idempotency_key: a
    repeat of the same request with the same key within 24 hours gets the
    first answer back and changes nothing. Creates (create, batch, put,
    bulk, backfill) get a random key when none is given, the same on every
    retry."""

    def __init__(self, t: Transport):
        self._t = t

    def create(self, spec: JobSpec, *, idempotency_key: str | None = None) -> Job:
        """Creates a job (POST /api/v1/jobs). A one-off job with a debounce
        whose key a job of the owner's that has not started holds creates
        nothing: the answer is that job, which took the spec's payload and
        timing."""
        return self._t.call("POST", _JOBS, Job, body=spec, create=True, idempotency_key=idempotency_key)

    def create_dry_run(self, spec: JobSpec) -> DryRun:
        """What create would do, doing nothing; a request create would refuse
        is refused the same way."""
        return self._t.call("POST", _JOBS, DryRun, query=_DRY_RUN, body=spec, read_only=True)

    def batch(self, req: BatchRequest, *, idempotency_key: str | None = None) -> BatchCreated:
        """Creates up to 10,000 jobs in one transaction (POST
        /api/v1/jobs:batch); any invalid job refuses them all with an
        InvalidError whose items say which."""
        return self._t.call("POST", _JOBS + ":batch", BatchCreated, body=req, create=True,
                            idempotency_key=idempotency_key)

    def get(self, id: str) -> Job:
        """One job."""
        return self._t.call("GET", path(_JOBS, id), Job)

    def list(self, f: JobFilter | None = None) -> JobList:
        """One page of jobs, newest first."""
        return self._t.call("GET", _JOBS, JobList, query=(f or JobFilter()).query())

    def all(self, f: JobFilter | None = None) -> Iterator[Job]:
        """Every job f matches, page after page, from f.cursor on."""
        f = f or JobFilter()

        def page(cursor: str | None) -> tuple[list[Job], str]:
            p = self.list(replace(f, cursor=cursor))
            return p.jobs, p.next_cursor

        return iterate(page, f.cursor)

    def update(self, id: str, patch: JobPatch, *, idempotency_key: str | None = None) -> Job:
        """Changes the fields patch sets, keeping the job's id (PATCH); a
        field given empty ("", {}) returns to its default."""
        return self._t.call("PATCH", path(_JOBS, id), Job, body=patch, idempotency_key=idempotency_key)

    def update_dry_run(self, id: str, patch: JobPatch) -> DryRun:
        """What update would change, changing nothing."""
        return self._t.call("PATCH", path(_JOBS, id), DryRun, query=_DRY_RUN, body=patch, read_only=True)

    def cancel(self, id: str, *, idempotency_key: str | None = None) -> None:
        """Cancels a job (DELETE): a one-off job that has not started, a
        recurring job at any time."""
        self._t.call("DELETE", path(_JOBS, id), idempotency_key=idempotency_key)

    def purge(self, id: str, *, idempotency_key: str | None = None) -> None:
        """Removes a finished job now, with its runs and labels
        (DELETE ?purge=true); a job that can still run is a conflict."""
        self._t.call("DELETE", path(_JOBS, id), query=Query(purge=True), idempotency_key=idempotency_key)

    def pause(self, id: str, *, idempotency_key: str | None = None) -> Job:
        """Stops a job from running until resume."""
        return self._t.call("POST", path(_JOBS, id, "pause"), Job, idempotency_key=idempotency_key)

    def resume(self, id: str, *, idempotency_key: str | None = None) -> Job:
        """Lets a paused job run again."""
        return self._t.call("POST", path(_JOBS, id, "resume"), Job, idempotency_key=idempotency_key)

    def trigger(self, id: str, *, idempotency_key: str | None = None) -> Triggered:
        """Runs the job once now, besides its schedule."""
        return self._t.call("POST", path(_JOBS, id, "trigger"), Triggered, idempotency_key=idempotency_key)

    def retry(self, id: str, scheduled_for: datetime | None = None, *,
              idempotency_key: str | None = None) -> Retried:
        """Queues one more attempt, now, of a permanently failed occurrence:
        the one due at scheduled_for, or the latest."""
        return self._t.call("POST", path(_JOBS, id, "retry"), Retried,
                            body=RetryRequest(scheduled_for=scheduled_for), idempotency_key=idempotency_key)

    def abort(self, id: str, *, idempotency_key: str | None = None) -> Aborted:
        """Stops the job's running attempts, recorded aborted and never
        retried; a one-off job is cancelled with them."""
        return self._t.call("POST", path(_JOBS, id, "abort"), Aborted, idempotency_key=idempotency_key)

    def backfill(self, id: str, from_: datetime, to: datetime, *, overlap: str | None = None,
                 idempotency_key: str | None = None) -> Backfill:
        """Runs the occurrences of a scheduled recurring job whose nominal
        times fall in the past range [from_, to) and that never ran (POST
        /api/v1/jobs/{id}/backfill); the scheduler queues them a few at a
        time. It returns at once with the backfill running: follow it with
        client.backfills.get, stop it with client.backfills.cancel. overlap
        (OVERLAP_ALLOW, OVERLAP_SKIP, OVERLAP_BUFFER_ONE; None: the job's
        own) says how its occurrences run beside each other and the job's.
        It carries an Idempotency-Key like a create, so a retried call
        starts one backfill."""
        return self._t.call("POST", path(_JOBS, id, "backfill"), Backfill,
                            body=BackfillRequest(from_=from_, to=to, overlap=overlap), create=True,
                            idempotency_key=idempotency_key)

    def backfills(self, id: str) -> builtins.list[Backfill]:
        """The job's backfills, newest first (one bounded list, not pages)."""
        return self._t.call("GET", path(_JOBS, id, "backfills"), BackfillList).backfills

    def next(self, id: str, n: int | None = None) -> Occurrences:
        """Up to n (1 to 100; default 10) coming occurrences of the job, a
        list; its skipped lists those before the last that the job's
        calendars (skip_calendars) leave out, and why."""
        return Occurrences.of(self._t.call("GET", path(_JOBS, id, "next"), UpcomingList, query=Query(n=n)))

    def runs(self, id: str, *, limit: int | None = None, cursor: str | None = None) -> RunList:
        """One page of the job's attempts, newest first."""
        return self._t.call("GET", path(_JOBS, id, "runs"), RunList, query=Query(limit=limit, cursor=cursor))

    def all_runs(self, id: str) -> Iterator[Run]:
        """Every attempt of the job, newest first."""

        def page(cursor: str | None) -> tuple[list[Run], str]:
            p = self.runs(id, cursor=cursor)
            return p.runs, p.next_cursor

        return iterate(page)

    def put(self, key: str, spec: JobSpec, *, idempotency_key: str | None = None) -> tuple[Job, bool]:
        """Creates the job spec describes under key (created is True), or
        replaces the definition of the live job that holds the key in place,
        keeping its id (PUT /api/v1/jobs/by-key/{key}). spec.key may be None
        or must equal key. Returns the job and created."""
        status, job = self._t.request("PUT", path(_BY_KEY, key), Job, body=spec, create=True,
                                      idempotency_key=idempotency_key)
        return job, status == 201

    def put_dry_run(self, key: str, spec: JobSpec) -> DryRun:
        """What put would do, doing nothing: create, update (with the fields
        that would change, a secret as its fingerprint) or unchanged."""
        return self._t.call("PUT", path(_BY_KEY, key), DryRun, query=_DRY_RUN, body=spec, read_only=True)

    def get_by_key(self, key: str, *, owner: str | None = None) -> Job:
        """The newest job that took key, finished or not; owner
        (administrators) looks among another user's jobs."""
        return self._t.call("GET", path(_BY_KEY, key), Job, query=Query(owner=owner))

    def cancel_by_key(self, key: str, *, owner: str | None = None, idempotency_key: str | None = None) -> None:
        """Cancels the live job that holds key."""
        self._t.call("DELETE", path(_BY_KEY, key), query=Query(owner=owner), idempotency_key=idempotency_key)

    def bulk(self, req: BulkRequest, *, idempotency_key: str | None = None) -> BulkResult:
        """Applies one action to many jobs (POST /api/v1/jobs:bulk); with
        dry_run it only counts and lists them. It carries an Idempotency-Key
        like a create, so a retried bulk changes nothing twice."""
        return self._t.call("POST", _JOBS + ":bulk", BulkResult, body=req, create=True,
                            idempotency_key=idempotency_key)

    def counts(self, *, owner: str | None = None) -> JobCounts:
        """The caller's jobs counted by status (GET /api/v1/jobs:counts);
        owner (administrators) counts one user's."""
        return self._t.call("GET", _JOBS + ":counts", JobCounts, query=Query(owner=owner))

"""The routes over backfills: the progress of a past range of a recurring
job's schedule that Jobs.backfill started, and its cancellation."""

from __future__ import annotations

from ._transport import Transport, path
from .types_gen import Backfill

# The statuses of a backfill (Backfill.status): running until every
# occurrence of its range was queued and ended, or it was cancelled.
BACKFILL_RUNNING = "running"
BACKFILL_COMPLETED = "completed"
BACKFILL_CANCELLED = "cancelled"

_BACKFILLS = "/api/v1/backfills"
_JOBS = "/api/v1/jobs"


class Backfills:
    """Backfills, each named by its own id, whichever job it backfills.
    job, where a method takes it, asks under that job's route instead
    (/api/v1/jobs/{job}/backfills/{id}), which answers 404 unless the
    backfill is the job's."""

    def __init__(self, t: Transport):
        self._t = t

    def get(self, id: str, *, job: str | None = None) -> Backfill:
        """One backfill with its progress."""
        return self._t.call("GET", self._path(id, job), Backfill)

    def cancel(self, id: str, *, job: str | None = None, idempotency_key: str | None = None) -> Backfill:
        """Stops a running backfill: nothing more of it is queued and none of
        its occurrences starts afterwards (one running ends as it would).
        Returns the backfill, cancelled; one cancelled already comes back as
        it is, and one that completed is a ConflictError."""
        return self._t.call("DELETE", self._path(id, job), Backfill, idempotency_key=idempotency_key)

    @staticmethod
    def _path(id: str, job: str | None) -> str:
        return path(_BACKFILLS, id) if job is None else path(_JOBS, job, "backfills", id)

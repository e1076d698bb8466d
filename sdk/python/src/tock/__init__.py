"""tock: the Python client of tock's HTTP API (/api/v1).

Typed requests and answers for every route (dataclasses generated from the
API's OpenAPI document), errors as TockError and its subclasses, generators
over pages, and retries that are safe: a 429 or 503 is tried again after a
capped backoff (or the server's Retry-After), and every create carries an
Idempotency-Key that stays the same across the retries of one call, so a
retried create never creates twice. The standard library only.

    client = tock.Client("https://tock.example.com", os.environ["TOCK_TOKEN"])
    job = client.jobs.create(tock.JobSpec(name="report", type="ping",
        schedule=tock.Schedule(cron="0 9 * * 1", timezone="Europe/Berlin"),
        payload=tock.PingPayload(url="https://example.com/health")))
"""

from .backfills import BACKFILL_CANCELLED, BACKFILL_COMPLETED, BACKFILL_RUNNING
from .client import Client
from .errors import (ConflictError, ForbiddenError, InvalidError, NotFoundError, RateLimitedError, TockError,
                     TransportError, UnauthorizedError)
from .filters import JobFilter, RunFilter
from .jobs import (BULK_CANCEL, BULK_PAUSE, BULK_RESUME, BULK_RETRY, BULK_TRIGGER, DRY_RUN_CREATE,
                   DRY_RUN_UNCHANGED, DRY_RUN_UPDATE, OVERLAP_ALLOW, OVERLAP_BUFFER_ONE, OVERLAP_SKIP, Occurrences)
from .retry import Retries
from .types_gen import *  # noqa: F403 (the generated types, listed in its __all__)
from .types_gen import __all__ as _types
from .users import SCOPE_ADMIN, SCOPE_JOBS_READ, SCOPE_JOBS_WRITE, SCOPE_RUNS_READ

__all__ = [
    "Client", "Retries", "JobFilter", "RunFilter", "Occurrences",
    "TockError", "InvalidError", "UnauthorizedError", "ForbiddenError", "NotFoundError", "ConflictError",
    "RateLimitedError", "TransportError",
    "OVERLAP_ALLOW", "OVERLAP_SKIP", "OVERLAP_BUFFER_ONE",
    "BULK_PAUSE", "BULK_RESUME", "BULK_CANCEL", "BULK_TRIGGER", "BULK_RETRY",
    "DRY_RUN_CREATE", "DRY_RUN_UPDATE", "DRY_RUN_UNCHANGED",
    "BACKFILL_RUNNING", "BACKFILL_COMPLETED", "BACKFILL_CANCELLED",
    "SCOPE_JOBS_READ", "SCOPE_JOBS_WRITE", "SCOPE_RUNS_READ", "SCOPE_ADMIN",
    *_types,
]

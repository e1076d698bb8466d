"""The client: one dashboard, one caller, the routes grouped by what they act
on, and the routes about the caller and the server."""

from __future__ import annotations

import urllib.request
from datetime import datetime, timedelta
from typing import Any

from ._transport import Query, Transport
from .backfills import Backfills
from .calendars import Calendars
from .dead_letters import DeadLetters
from .flows import Flows
from .jobs import Jobs, Occurrences
from .retry import Retries
from .runs import Runs
from .types_gen import (AuditList, JobType, JobTypeList, PreviewRequest, Readiness, SigningSecret,
                        SigningSecretRotation, System, UpcomingList, User)
from .users import Keys, Users

# What stands for a secret in an answer the server replays under an
# Idempotency-Key ("secret:sha256:<32 hex digits>").
_SECRET_FINGERPRINT = "secret:sha256:"


class Client:
    """A client of the tock dashboard at base_url (such as
    "https://tock.example.com") that authenticates with token: the admin
    token or an API key. It is safe to share between threads.

    timeout bounds each try, in seconds; retries says how 429 and 503
    answers are retried; opener, a urllib OpenerDirector, replaces the
    default one for proxies, TLS settings or tracing.
    """

    def __init__(self, base_url: str, token: str, *, timeout: float = 30.0, user_agent: str = "tock-python",
                 retries: Retries = Retries(), opener: urllib.request.OpenerDirector | None = None):
        self._t = Transport(base_url, token, timeout=timeout, user_agent=user_agent, retries=retries,
                            opener=opener)
        self.jobs = Jobs(self._t)
        self.runs = Runs(self._t)
        self.dead_letters = DeadLetters(self._t)
        self.flows = Flows(self._t)
        self.backfills = Backfills(self._t)
        self.calendars = Calendars(self._t)
        self.users = Users(self._t)
        self.keys = Keys(self._t)

    def me(self) -> User:
        """The caller, with the limits that hold for them and their scopes."""
        return self._t.call("GET", "/api/v1/me", User)

    def signing_secret(self) -> SigningSecret:
        """The caller's webhook signing secret."""
        return self._t.call("GET", "/api/v1/signing-secret", SigningSecret)

    def rotate_signing_secret(self, grace: timedelta | None = None) -> SigningSecret:
        """Replaces the caller's signing secret; the previous one keeps
        signing for grace (None: the server's default, 24 hours). Retried
        safely: it carries an Idempotency-Key."""
        body = SigningSecretRotation(grace=None if grace is None else f"{grace // timedelta(milliseconds=1)}ms")
        s = self._t.call("POST", "/api/v1/signing-secret:rotate", SigningSecret, body=body, create=True)
        if s.secret.startswith(_SECRET_FINGERPRINT):
            # A retry whose first try rotated but lost its answer gets that
            # answer replayed, which never repeats the secret: read it.
            return self.signing_secret()
        return s

    def job_types(self) -> list[JobType]:
        """The job types the server runs, each with an example payload."""
        return self._t.call("GET", "/api/v1/job-types", JobTypeList).job_types

    def preview(self, req: PreviewRequest) -> Occurrences:
        """The next occurrences of a timing, creating nothing, a list; its
        skipped lists those before the last that the calendars named in
        req.skip_calendars leave out, and why."""
        return Occurrences.of(self._t.call("POST", "/api/v1/schedules/preview", UpcomingList, body=req,
                                           read_only=True))

    def audit(self, *, actor: str | None = None, job: str | None = None, target: str | None = None,
              action: str | None = None, since: datetime | None = None, until: datetime | None = None, limit: int | None = None,
              cursor: str | None = None) -> AuditList:
        """One page of the audit log, newest first (administrators). job
        keeps the changes to one job, target those to one job, user or key;
        action is such as job.create."""
        q = Query(actor=actor, job=job, target=target, action=action, since=since, until=until, limit=limit,
                  cursor=cursor)
        return self._t.call("GET", "/api/v1/audit", AuditList, query=q)

    def system(self) -> System:
        """The system page's figures (administrators)."""
        return self._t.call("GET", "/api/v1/system", System)

    def health(self) -> None:
        """Returns when the dashboard is alive (GET /healthz), raises otherwise."""
        self._t.call("GET", "/healthz")

    def ready(self) -> Readiness:
        """Whether the dashboard's Postgres and Redis answer (GET /readyz); a
        503 is retried like any other, then raised."""
        return self._t.call("GET", "/readyz", Readiness)

    def openapi(self) -> dict[str, Any]:
        """The API's OpenAPI 3 document."""
        return self._t.call("GET", "/api/v1/openapi.json", dict)

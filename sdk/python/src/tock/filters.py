"""The filters of the list routes that several services share."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from ._transport import Query


@dataclass(kw_only=True)
class JobFilter:
    """Chooses the jobs of a listing; fields left None do not filter."""

    status: str | None = None
    """scheduled, paused, completed, permanently_failed, cancelled or expired."""
    type: str | None = None
    labels: dict[str, str] | None = None
    """Keeps the jobs that carry every one of these labels."""
    q: str | None = None
    """A job id, or part of a name (ignoring case)."""
    owner: str | None = None
    """Administrators: one user's jobs (a user may name only themself)."""
    limit: int | None = None
    """The page size, 1 to 500 (default 50)."""
    cursor: str | None = None
    """The next_cursor of the previous page."""
    at_risk: bool | None = None
    """Keeps the jobs whose SLO is broken now (not with labels)."""

    def query(self, cursor: str | None = None) -> Query:
        """The query string, at cursor when given."""
        return Query(status=self.status, type=self.type, q=self.q, owner=self.owner,
                     limit=self.limit, cursor=cursor or self.cursor,
                     at_risk="true" if self.at_risk else None).labels(self.labels)


@dataclass(kw_only=True)
class RunFilter:
    """Chooses the runs (or dead letters) of a search; fields left None do
    not filter."""

    owner: str | None = None
    status: str | None = None
    """Runs only: completed, failed, permanently_failed, aborted..."""
    type: str | None = None
    job: str | None = None
    """Keeps one job's runs."""
    labels: dict[str, str] | None = None
    since: datetime | None = None
    """With until, bounds the runs' scheduled times: [since, until)."""
    until: datetime | None = None
    q: str | None = None
    """Finds text in the run's error, ignoring case."""
    limit: int | None = None
    cursor: str | None = None

    def query(self, cursor: str | None = None) -> Query:
        """The query string, at cursor when given."""
        return Query(owner=self.owner, status=self.status, type=self.type, job=self.job,
                     since=self.since, until=self.until, q=self.q, limit=self.limit,
                     cursor=cursor or self.cursor).labels(self.labels)

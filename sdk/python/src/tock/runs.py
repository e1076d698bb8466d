"""The routes over runs across jobs: /api/v1/runs and /api/v1/runs:stats."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from datetime import datetime

from ._transport import Query, Transport
from .filters import RunFilter
from .pages import iterate
from .types_gen import Run, RunList, RunStats


class Runs:
    """Runs across the caller's jobs (an administrator's: everyone's)."""

    def __init__(self, t: Transport):
        self._t = t

    def list(self, f: RunFilter | None = None) -> RunList:
        """One page of the runs f matches, newest first. A page may be short
        and still have a next_cursor."""
        return self._t.call("GET", "/api/v1/runs", RunList, query=(f or RunFilter()).query())

    def all(self, f: RunFilter | None = None) -> Iterator[Run]:
        """Every run f matches, page after page, from f.cursor on."""
        f = f or RunFilter()

        def page(cursor: str | None) -> tuple[list[Run], str]:
            p = self.list(replace(f, cursor=cursor))
            return p.runs, p.next_cursor

        return iterate(page, f.cursor)

    def stats(self, *, owner: str | None = None, since: datetime | None = None, until: datetime | None = None,
              group_by: str | None = None) -> RunStats:
        """Runs counted (GET /api/v1/runs:stats) in [since, until), by
        default the last 24 hours and at most 31 days, grouped by status (the
        default), type or job."""
        q = Query(owner=owner, since=since, until=until, group_by=group_by)
        return self._t.call("GET", "/api/v1/runs:stats", RunStats, query=q)

"""The routes over dead letters: occurrences whose last attempt ended
permanently_failed that nobody replayed or purged since, each named by that
attempt's run id."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

from ._transport import Transport, path
from .filters import RunFilter
from .pages import iterate
from .types_gen import DeadLetterList, DeadLetterRequest, DeadLetterResult, Retried, Run

_DEAD_LETTERS = "/api/v1/dead-letters"


class DeadLetters:
    """Dead letters of the caller's jobs (an administrator's: everyone's)."""

    def __init__(self, t: Transport):
        self._t = t

    def list(self, f: RunFilter | None = None) -> DeadLetterList:
        """One page of the dead letters f matches (its status is not used),
        newest first. A page may be short and still have a next_cursor."""
        f = replace(f or RunFilter(), status=None)
        return self._t.call("GET", _DEAD_LETTERS, DeadLetterList, query=f.query())

    def all(self, f: RunFilter | None = None) -> Iterator[Run]:
        """Every dead letter f matches, page after page, from f.cursor on."""
        f = f or RunFilter()

        def page(cursor: str | None) -> tuple[list[Run], str]:
            p = self.list(replace(f, cursor=cursor))
            return p.dead_letters, p.next_cursor

        return iterate(page, f.cursor)

    def get(self, id: str) -> Run:
        """One dead letter: the attempt that ended its occurrence."""
        return self._t.call("GET", path(_DEAD_LETTERS, id), Run)

    def replay(self, id: str, *, idempotency_key: str | None = None) -> Retried:
        """Gives the occurrence one more attempt, now, under its own
        idempotency key, as Jobs.retry does."""
        return self._t.call("POST", path(_DEAD_LETTERS, id, "replay"), Retried, idempotency_key=idempotency_key)

    def purge(self, id: str, *, idempotency_key: str | None = None) -> None:
        """Takes the dead letter out of the list; its run stays in its job's
        history until run retention drops it."""
        self._t.call("DELETE", path(_DEAD_LETTERS, id), idempotency_key=idempotency_key)

    def replay_many(self, req: DeadLetterRequest, *, idempotency_key: str | None = None) -> DeadLetterResult:
        """Replays the dead letters req names or selects, up to 10,000; with
        dry_run it only counts and lists them. It carries an Idempotency-Key
        like a create, so a retried call replays nothing twice."""
        return self._many("replay", req, idempotency_key)

    def purge_many(self, req: DeadLetterRequest, *, idempotency_key: str | None = None) -> DeadLetterResult:
        """Purges the dead letters req names or selects, up to 10,000; with
        dry_run it only counts and lists them."""
        return self._many("purge", req, idempotency_key)

    def _many(self, action: str, req: DeadLetterRequest, idempotency_key: str | None) -> DeadLetterResult:
        return self._t.call("POST", f"{_DEAD_LETTERS}:{action}", DeadLetterResult, body=req, create=True,
                            idempotency_key=idempotency_key)

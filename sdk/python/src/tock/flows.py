"""The routes over flow keys: an owner's own limits on attempts in flight and
starts per period, shared by every job whose flow names the key."""

from __future__ import annotations

from collections.abc import Iterator

from ._transport import Query, Transport, path
from .pages import iterate
from .types_gen import Flow, FlowList, FlowRequest

_FLOWS = "/api/v1/flows"


class Flows:
    """Flow keys, with pause and resume. owner (administrators) acts on
    another user's keys."""

    def __init__(self, t: Transport):
        self._t = t

    def list(self, *, limit: int | None = None, cursor: str | None = None, owner: str | None = None) -> FlowList:
        """One page of flow keys in key order, each with what it has in
        flight and waiting now."""
        return self._t.call("GET", _FLOWS, FlowList, query=Query(limit=limit, cursor=cursor, owner=owner))

    def all(self, *, owner: str | None = None) -> Iterator[Flow]:
        """Every flow key, page after page."""

        def page(cursor: str | None) -> tuple[list[Flow], str]:
            p = self.list(cursor=cursor, owner=owner)
            return p.flows, p.next_cursor

        return iterate(page)

    def get(self, key: str, *, owner: str | None = None) -> Flow:
        """One flow key."""
        return self._t.call("GET", path(_FLOWS, key), Flow, query=Query(owner=owner))

    def put(self, key: str, req: FlowRequest, *, owner: str | None = None,
            idempotency_key: str | None = None) -> Flow:
        """Sets a key's limits and pause as a whole (a limit left None is
        none), creating the key if new."""
        return self._t.call("PUT", path(_FLOWS, key), Flow, query=Query(owner=owner), body=req,
                            idempotency_key=idempotency_key)

    def pause(self, key: str, *, owner: str | None = None, idempotency_key: str | None = None) -> Flow:
        """Holds back everything of the key that comes due; attempts already
        running go on."""
        return self._action(key, "pause", owner, idempotency_key)

    def resume(self, key: str, *, owner: str | None = None, idempotency_key: str | None = None) -> Flow:
        """Lets the key's waiting occurrences out, in priority and due order."""
        return self._action(key, "resume", owner, idempotency_key)

    def _action(self, key: str, action: str, owner: str | None, idempotency_key: str | None) -> Flow:
        return self._t.call("POST", path(_FLOWS, key, action), Flow, query=Query(owner=owner),
                            idempotency_key=idempotency_key)

    def delete(self, key: str, *, owner: str | None = None, idempotency_key: str | None = None) -> None:
        """Drops a key's limits: its jobs run without them, and what waits
        comes out at once."""
        self._t.call("DELETE", path(_FLOWS, key), query=Query(owner=owner), idempotency_key=idempotency_key)

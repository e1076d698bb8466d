"""The routes over calendars: an owner's named sets of dates, time ranges
and RRULEs whose days the recurring jobs that name them in skip_calendars do
not run on."""

from __future__ import annotations

from collections.abc import Iterator

from ._transport import Query, Transport, path
from .pages import iterate
from .types_gen import Calendar, CalendarList, CalendarRequest

_CALENDARS = "/api/v1/calendars"


class Calendars:
    """Calendars, each named by the owner (1 to 63 of a-z, 0-9, _, . and -).
    An occurrence of a job whose nominal time falls on one of its calendars'
    days is recorded skipped, and previews list it in skipped. owner
    (administrators) acts on another user's calendars."""

    def __init__(self, t: Transport):
        self._t = t

    def list(self, *, limit: int | None = None, cursor: str | None = None, owner: str | None = None) -> CalendarList:
        """One page of calendars in name order."""
        return self._t.call("GET", _CALENDARS, CalendarList, query=Query(limit=limit, cursor=cursor, owner=owner))

    def all(self, *, owner: str | None = None) -> Iterator[Calendar]:
        """Every calendar, page after page."""

        def page(cursor: str | None) -> tuple[list[Calendar], str]:
            p = self.list(cursor=cursor, owner=owner)
            return p.calendars, p.next_cursor

        return iterate(page)

    def get(self, name: str, *, owner: str | None = None) -> Calendar:
        """One calendar."""
        return self._t.call("GET", path(_CALENDARS, name), Calendar, query=Query(owner=owner))

    def put(self, name: str, req: CalendarRequest, *, owner: str | None = None,
            idempotency_key: str | None = None) -> Calendar:
        """Sets a calendar as a whole (a list left None is empty), creating it
        if new: its timezone (default UTC), whole dates (YYYY-MM-DD), ranges
        of instants [from_, to) and rrules (RRULE bodies whose days it skips).
        A bad entry is an InvalidError whose field names it (dates[1],
        ranges[0].to, rrules[0], timezone); a 1,001st calendar is a
        ConflictError. It holds from the next occurrence a worker starts."""
        return self._t.call("PUT", path(_CALENDARS, name), Calendar, query=Query(owner=owner), body=req,
                            idempotency_key=idempotency_key)

    def delete(self, name: str, *, owner: str | None = None, idempotency_key: str | None = None) -> None:
        """Deletes a calendar; while a job that can still run names it in
        skip_calendars, a ConflictError."""
        self._t.call("DELETE", path(_CALENDARS, name), query=Query(owner=owner), idempotency_key=idempotency_key)

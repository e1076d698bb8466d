"""Iteration over the pages of a list route."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TypeVar

T = TypeVar("T")


def iterate(fetch: Callable[[str | None], tuple[list[T], str]], cursor: str | None = None) -> Iterator[T]:
    """Yields every item of every page fetch returns, from cursor on; fetch
    takes a cursor and returns one page's items and its next_cursor. The
    next page is asked for only when the loop gets there, so a break stops
    asking; an error is raised where the loop is."""
    while True:
        items, next_cursor = fetch(cursor)
        yield from items
        # An empty cursor ends the list; the same cursor again would loop.
        if not next_cursor or next_cursor == cursor:
            return
        cursor = next_cursor

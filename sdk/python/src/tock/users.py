"""The routes under /api/v1/users and on API keys; all but a user's own
keys, and reading themself, need an administrator."""

from __future__ import annotations

import builtins
from collections.abc import Iterator

from ._transport import Query, Transport, path
from .filters import JobFilter
from .pages import iterate
from .types_gen import Erased, JobList, Key, KeyList, KeyOptions, User, UserCreate, UserList, UserUpdate

# The scopes a key may carry (KeyOptions.scopes); a read-only key is
# [SCOPE_JOBS_READ, SCOPE_RUNS_READ].
SCOPE_JOBS_READ = "jobs:read"
SCOPE_JOBS_WRITE = "jobs:write"
SCOPE_RUNS_READ = "runs:read"
SCOPE_ADMIN = "admin"

_USERS = "/api/v1/users"


class Users:
    """Users (administrators)."""

    def __init__(self, t: Transport):
        self._t = t

    def create(self, u: UserCreate) -> User:
        """Adds a user."""
        return self._t.call("POST", _USERS, User, body=u)

    def list(self, *, limit: int | None = None, cursor: str | None = None) -> UserList:
        """One page of users."""
        return self._t.call("GET", _USERS, UserList, query=Query(limit=limit, cursor=cursor))

    def all(self) -> Iterator[User]:
        """Every user, page after page."""

        def page(cursor: str | None) -> tuple[list[User], str]:
            p = self.list(cursor=cursor)
            return p.users, p.next_cursor

        return iterate(page)

    def get(self, id: str) -> User:
        """One user (a user may read themself)."""
        return self._t.call("GET", path(_USERS, id), User)

    def update(self, id: str, u: UserUpdate) -> User:
        """Renames a user or sets their limits."""
        return self._t.call("PATCH", path(_USERS, id), User, body=u)

    def disable(self, id: str) -> User:
        """Stops a user's keys, pauses their scheduled jobs and aborts their
        running attempts."""
        return self._t.call("POST", path(_USERS, id, "disable"), User)

    def enable(self, id: str) -> User:
        """Lets a disabled user back in; their jobs stay paused."""
        return self._t.call("POST", path(_USERS, id, "enable"), User)

    def erase(self, id: str) -> Erased:
        """Deletes a user's jobs, runs, labels and keys, disables and renames
        them, and reduces the audit entries about them."""
        return self._t.call("POST", path(_USERS, id, "erase"), Erased)

    def jobs(self, id: str, f: JobFilter | None = None) -> JobList:
        """One page of a user's whole job history."""
        return self._t.call("GET", path(_USERS, id, "jobs"), JobList, query=(f or JobFilter()).query())


class Keys:
    """API keys: an administrator's, or a user's own."""

    def __init__(self, t: Transport):
        self._t = t

    def create(self, user_id: str, options: KeyOptions) -> Key:
        """A new key for the user; its secret is in key, shown only this
        once. Without scopes it has every scope the user's role allows."""
        return self._t.call("POST", path(_USERS, user_id, "keys"), Key, body=options)

    def list(self, user_id: str) -> builtins.list[Key]:
        """The user's keys, with their scopes and expiry."""
        return self._t.call("GET", path(_USERS, user_id, "keys"), KeyList).keys

    def revoke(self, id: str) -> None:
        """Stops a key at once."""
        self._t.call("DELETE", path("/api/v1/keys", id))

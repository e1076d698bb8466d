"""The errors the client raises.

An answer of the API that is not a success is a TockError, or the subclass
for its status, so callers catch what they can act on (NotFoundError,
InvalidError with its field...) and let the rest through. A failure to reach
the dashboard, or to read its answer, is a TransportError.
"""

from __future__ import annotations

import http
import json
from typing import Any

from ._wire import from_json
from .types_gen import ItemError


class TockError(Exception):
    """An answer of the API that is not a 2xx: its HTTP status and the body's
    {"error": {"code", "message", "field"}}.

    field names the offending input of a 400 (schedule.cron, payload.url);
    items lists each invalid job of a refused batch; retry_after is the
    answer's Retry-After in seconds, when it has one (a 429 that outlasted
    the retries).
    """

    def __init__(self, status: int, code: str = "", message: str = "", field: str = "",
                 items: list[ItemError] | None = None, retry_after: float | None = None):
        self.status = status
        self.code = code
        self.message = message
        self.field = field
        self.items = items or []
        self.retry_after = retry_after
        super().__init__(str(self))

    def __str__(self) -> str:
        s = f"tock: {self.status}"
        if self.code:
            s += f" {self.code}"
        if self.message:
            s += f": {self.message}"
        if self.field:
            s += f" (field {self.field})"
        return s


class InvalidError(TockError):
    """400: the request was refused as it is; field names the input at fault."""


class UnauthorizedError(TockError):
    """401: the token is missing, unknown, expired or revoked."""


class ForbiddenError(TockError):
    """403: the route needs an administrator, or a scope the key lacks."""


class NotFoundError(TockError):
    """404: no such job, run, user or key, or one of another user."""


class ConflictError(TockError):
    """409: the job's state does not allow the action, or a live job already
    holds the key."""


class RateLimitedError(TockError):
    """429 that outlasted the client's retries, or a quota (code
    "quota_exceeded"), which no retry helps."""


class TransportError(OSError):
    """The dashboard could not be reached, or its answer not read: a refused
    connection, a timeout, a body that is not the JSON the route answers."""


_BY_STATUS: dict[int, type[TockError]] = {
    400: InvalidError,
    401: UnauthorizedError,
    403: ForbiddenError,
    404: NotFoundError,
    409: ConflictError,
    429: RateLimitedError,
}


def error_from_answer(status: int, body: bytes, retry_after: float | None = None) -> TockError:
    """The error an answer of that status and body stands for. A body that is
    not the API's error shape (a proxy's page, say) leaves code empty and its
    start in message."""
    cls = _BY_STATUS.get(status, TockError)
    doc = _json_object(body)
    detail = doc.get("error")
    if isinstance(detail, dict) and detail.get("code"):
        # A refused batch's body (BatchInvalid) is every error body with the
        # invalid jobs added, so one reading serves both.
        items = [from_json(ItemError, e) for e in doc.get("errors") or []]
        return cls(status, detail["code"], detail.get("message", ""), detail.get("field", ""), items, retry_after)
    message = body.decode("utf-8", "replace").strip()
    if len(message) > 200:
        message = message[:200] + "…"
    return cls(status, message=message or _reason(status), retry_after=retry_after)


def _json_object(body: bytes) -> dict[str, Any]:
    try:
        doc = json.loads(body)
    except ValueError:
        return {}
    return doc if isinstance(doc, dict) else {}


def _reason(status: int) -> str:
    try:
        return http.HTTPStatus(status).phrase
    except ValueError:
        return ""

"""One API call: the request, its retries, and the answer as a type or an
error. Every route of the client goes through Transport.exchange."""

from __future__ import annotations

import http.client
import json
import secrets
import time
import urllib.error
import urllib.parse
import urllib.request
from datetime import datetime
from email.message import Message
from typing import Any, TypeVar, overload

from ._wire import from_json, to_json
from .errors import TransportError, error_from_answer
from .retry import Retries, parse_retry_after

# The methods whose repeat does what the first did: a 503 on them is retried.
_REPEATABLE = frozenset({"GET", "PUT", "DELETE"})

T = TypeVar("T")


class Transport:
    """Sends calls to one dashboard as one caller. It keeps no state between
    calls, so a client is safe to share between threads."""

    def __init__(self, base_url: str, token: str, *, timeout: float, user_agent: str,
                 retries: Retries, opener: urllib.request.OpenerDirector | None):
        self.base = base_url.rstrip("/")
        self.token = token
        self.timeout = timeout
        self.user_agent = user_agent
        self.retries = retries
        self.opener = opener or urllib.request.build_opener()

    @overload
    def call(self, method: str, path: str, out: None = None, **kw: Any) -> None: ...

    @overload
    def call(self, method: str, path: str, out: type[T], **kw: Any) -> T: ...

    def call(self, method: str, path: str, out: type[T] | None = None, **kw: Any) -> T | None:
        """Sends the call (see exchange, which takes kw) and returns its
        answer as out, or None when out is None."""
        _, raw = self.exchange(method, path, **kw)
        return None if out is None else self.decode(out, method, path, raw)

    def request(self, method: str, path: str, out: type[T], **kw: Any) -> tuple[int, T]:
        """call, with the final answer's status: PUT by key says by 201
        that it created."""
        status, raw = self.exchange(method, path, **kw)
        return status, self.decode(out, method, path, raw)

    def exchange(self, method: str, path: str, *, query: Query | None = None, body: Any = None,
                 create: bool = False, idempotency_key: str | None = None,
                 read_only: bool = False) -> tuple[int, bytes]:
        """Sends the call, retrying as the client's Retries allow, and returns
        the final answer's status and body. An answer that is not a 2xx
        raises its TockError.

        create marks a call that makes something: it gets an Idempotency-Key
        of its own unless the caller gave one, the same on every retry, so a
        retried create never creates twice. read_only marks a POST that
        changes nothing (a preview), safe to repeat.
        """
        if create and not idempotency_key:
            idempotency_key = new_idempotency_key()
        data = None if body is None else json.dumps(to_json(body)).encode()
        url = self.base + path + (f"?{query}" if query else "")
        safe = method in _REPEATABLE or read_only or bool(idempotency_key)
        attempt = 1
        while True:
            status, headers, raw = self._send(method, path, url, data, idempotency_key)
            delay = self.retries.next_delay(attempt, status, headers.get("Retry-After"), safe)
            if delay is None:
                break
            time.sleep(delay)
            attempt += 1
        if not 200 <= status <= 299:
            raise error_from_answer(status, raw, parse_retry_after(headers.get("Retry-After")))
        return status, raw

    @staticmethod
    def decode(out: type[T], method: str, path: str, raw: bytes) -> T:
        """A 2xx answer's body as out."""
        try:
            value: T = from_json(out, json.loads(raw))
            return value
        except (ValueError, TypeError, KeyError, AttributeError) as e:
            raise TransportError(f"tock: {method} {path}: decode answer: {e}") from e

    def _send(self, method: str, path: str, url: str, data: bytes | None,
              idempotency_key: str | None) -> tuple[int, Message, bytes]:
        headers = {"Accept": "application/json", "User-Agent": self.user_agent}
        if self.token:
            headers["Authorization"] = "Bearer " + self.token
        if data is not None:
            headers["Content-Type"] = "application/json"
        if idempotency_key:
            headers["Idempotency-Key"] = idempotency_key
        req = urllib.request.Request(url, data=data, headers=headers, method=method)
        try:
            with self.opener.open(req, timeout=self.timeout) as resp:
                return resp.status, resp.headers, resp.read()
        except urllib.error.HTTPError as e:
            with e:
                return e.code, e.headers, e.read()
        except (OSError, http.client.HTTPException) as e:
            # Say the dashboard's address, which tells which one did not
            # answer; never the token.
            reason = getattr(e, "reason", None) or e
            raise TransportError(f"tock: {method} {self.base}{path}: {reason}") from e


class Query:
    """A query string that leaves out what is not given (None or "")."""

    def __init__(self, **params: Any):
        self.pairs: list[tuple[str, str]] = []
        for key, value in params.items():
            if value is None or value == "":
                continue
            if isinstance(value, bool):
                value = "true" if value else "false"
            elif isinstance(value, datetime):
                value = to_json(value)
            self.pairs.append((key, str(value)))

    def labels(self, labels: dict[str, str] | None) -> Query:
        """One label=key=value per entry, in key order: jobs or runs carrying
        every one."""
        for k, v in sorted((labels or {}).items()):
            self.pairs.append(("label", f"{k}={v}"))
        return self

    def __bool__(self) -> bool:
        return bool(self.pairs)

    def __str__(self) -> str:
        return urllib.parse.urlencode(self.pairs)


def path(route: str, *segments: str) -> str:
    """route with escaped segments joined on: path("/api/v1/jobs", id)."""
    return route + "".join("/" + urllib.parse.quote(s, safe="") for s in segments)


def new_idempotency_key() -> str:
    """128 random bits in hex, prefixed so that the server's records show
    where the key came from."""
    return "tock-py-" + secrets.token_hex(16)

"""When an answer is worth asking for again, and after how long.

A 429 (rate limited: nothing was done) is always retried. A 503 is retried
only when the request is safe to repeat: the server keeps no 5xx answer, so a
repeat runs again, which only a request that does the same every time can
afford (a read, a PUT or DELETE, a preview, anything carrying an
Idempotency-Key). A 409 with Retry-After is the server saying that an earlier
try with the same Idempotency-Key is still being answered: this one did not
run, and is retried. The wait is the server's Retry-After when it sends one,
otherwise a doubling backoff with jitter, never more than the maximum.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import datetime, timezone
from email.utils import parsedate_to_datetime


@dataclass(frozen=True)
class Retries:
    """How a client retries: at most attempts tries in all (1 turns retrying
    off), waiting base, 2×base, 4×base... seconds between them, never more
    than max_delay (a longer Retry-After is cut to max_delay)."""

    attempts: int = 5
    base: float = 0.25
    max_delay: float = 10.0

    def next_delay(self, attempt: int, status: int, retry_after: str | None, safe: bool) -> float | None:
        """The seconds to wait before trying again after the answer status
        (with its Retry-After header) to try number attempt; None to stop."""
        if attempt >= self.attempts:
            return None
        if not (status == 429 or status == 503 and safe or status == 409 and retry_after):
            return None
        after = parse_retry_after(retry_after)
        if after is not None:
            return min(after, self.max_delay)
        return self.backoff(attempt)

    def backoff(self, attempt: int) -> float:
        """base doubled for each earlier try, capped at max_delay, with up to a
        quarter of it added at random, so that clients refused together do
        not come back together."""
        d = min(self.base * (1 << min(attempt - 1, 32)), self.max_delay)
        return d + random.uniform(0, d / 4)


def parse_retry_after(value: str | None, now: datetime | None = None) -> float | None:
    """A Retry-After header in seconds: a count of seconds, or an HTTP date
    (a date already past is 0). None when absent or unreadable."""
    if not value:
        return None
    value = value.strip()
    if value.isascii() and value.isdigit():
        return float(value)
    try:
        at = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if at.tzinfo is None:
        # An HTTP date is in GMT, and says so.
        at = at.replace(tzinfo=timezone.utc)
    now = now or datetime.now(timezone.utc)
    return max((at - now).total_seconds(), 0.0)

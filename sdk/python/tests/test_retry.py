"""When the client retries, and how long it waits: no server needed."""

import unittest
from datetime import datetime, timedelta, timezone
from email.utils import format_datetime

from tock.retry import Retries, parse_retry_after


class ParseRetryAfter(unittest.TestCase):
    now = datetime(2030, 1, 2, 3, 4, 5, tzinfo=timezone.utc)

    def test_seconds(self):
        self.assertEqual(parse_retry_after("0"), 0)
        self.assertEqual(parse_retry_after("7"), 7)
        self.assertEqual(parse_retry_after(" 120 "), 120)

    def test_http_date(self):
        later = format_datetime(self.now + timedelta(seconds=30), usegmt=True)
        self.assertEqual(parse_retry_after(later, self.now), 30)
        # The obsolete forms HTTP still allows: RFC 850 and asctime.
        self.assertEqual(parse_retry_after("Wednesday, 02-Jan-30 03:04:15 GMT", self.now), 10)
        self.assertEqual(parse_retry_after("Wed Jan  2 03:04:20 2030", self.now), 15)

    def test_a_date_past_is_now(self):
        self.assertEqual(parse_retry_after(format_datetime(self.now - timedelta(hours=1), usegmt=True), self.now), 0)

    def test_absent_or_unreadable(self):
        for v in (None, "", "soon", "-1", "1.5", "٣"):
            with self.subTest(v=v):
                self.assertIsNone(parse_retry_after(v))


class NextDelay(unittest.TestCase):
    r = Retries(attempts=3, base=1, max_delay=10)

    def test_429_always(self):
        self.assertIsNotNone(self.r.next_delay(1, 429, None, safe=False))

    def test_503_only_when_safe(self):
        self.assertIsNotNone(self.r.next_delay(1, 503, None, safe=True))
        self.assertIsNone(self.r.next_delay(1, 503, None, safe=False))

    def test_409_only_with_retry_after(self):
        # The same Idempotency-Key's first request is still being answered.
        self.assertEqual(self.r.next_delay(1, 409, "1", safe=True), 1)
        self.assertIsNone(self.r.next_delay(1, 409, None, safe=True))

    def test_others_never(self):
        for status in (200, 201, 400, 401, 403, 404, 422, 500, 502):
            with self.subTest(status=status):
                self.assertIsNone(self.r.next_delay(1, status, "1", safe=True))

    def test_attempts_bound_the_tries(self):
        self.assertIsNotNone(self.r.next_delay(2, 429, None, safe=True))
        self.assertIsNone(self.r.next_delay(3, 429, None, safe=True))
        self.assertIsNone(Retries(attempts=1).next_delay(1, 429, None, safe=True))

    def test_retry_after_is_honoured_and_capped(self):
        self.assertEqual(self.r.next_delay(1, 429, "4", safe=True), 4)
        self.assertEqual(self.r.next_delay(1, 429, "3600", safe=True), 10)

    def test_backoff_doubles_with_jitter_up_to_the_cap(self):
        for attempt, base in ((1, 1), (2, 2), (3, 4), (4, 8), (5, 10), (60, 10)):
            with self.subTest(attempt=attempt):
                d = self.r.backoff(attempt)
                self.assertGreaterEqual(d, base)
                self.assertLessEqual(d, base * 1.25)


if __name__ == "__main__":
    unittest.main()

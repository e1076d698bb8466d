"""How an answer that is not a success becomes a typed error."""

import json
import unittest

import tock
from tock.errors import error_from_answer


def body(code, message="", field="", **extra):
    return json.dumps({"error": {"code": code, "message": message, "field": field}, **extra}).encode()


class ErrorFromAnswer(unittest.TestCase):
    def test_status_picks_the_class(self):
        for status, cls in ((400, tock.InvalidError), (401, tock.UnauthorizedError), (403, tock.ForbiddenError),
                            (404, tock.NotFoundError), (409, tock.ConflictError), (429, tock.RateLimitedError),
                            (413, tock.TockError), (422, tock.TockError), (503, tock.TockError)):
            with self.subTest(status=status):
                e = error_from_answer(status, body("some_code"))
                self.assertIs(type(e), cls)
                self.assertIsInstance(e, tock.TockError)
                self.assertEqual(e.status, status)

    def test_code_message_field(self):
        e = error_from_answer(400, body("invalid", "has 3 fields: want 5", "schedule.cron"))
        self.assertEqual((e.code, e.message, e.field), ("invalid", "has 3 fields: want 5", "schedule.cron"))
        self.assertEqual(str(e), "tock: 400 invalid: has 3 fields: want 5 (field schedule.cron)")

    def test_batch_items(self):
        e = error_from_answer(400, body("invalid", "1 job is invalid",
                                        errors=[{"index": 1, "field": "payload", "message": "is required"}]))
        self.assertEqual(len(e.items), 1)
        self.assertEqual((e.items[0].index, e.items[0].field), (1, "payload"))

    def test_retry_after(self):
        e = error_from_answer(429, body("quota_exceeded"), retry_after=3.0)
        self.assertEqual(e.retry_after, 3.0)

    def test_a_body_not_of_the_api(self):
        e = error_from_answer(502, b"<html>bad gateway</html>")
        self.assertEqual((e.code, e.message), ("", "<html>bad gateway</html>"))
        self.assertEqual(error_from_answer(503, b"").message, "Service Unavailable")
        self.assertEqual(len(error_from_answer(500, b"x" * 1000).message), 201)


if __name__ == "__main__":
    unittest.main()

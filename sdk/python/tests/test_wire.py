"""JSON to and from the generated dataclasses."""

import unittest
from datetime import datetime, timezone

import tock
from tock._wire import from_json, to_json


class ToJSON(unittest.TestCase):
    def test_none_is_left_out_and_nesting_kept(self):
        spec = tock.JobSpec(name="n", type="ping", payload=tock.PingPayload(url="https://example.com"),
                            schedule=tock.Schedule(cron="0 9 * * 1", timezone="Europe/Berlin"), labels={"a": "1"},
                            max_retries=0)
        self.assertEqual(to_json(spec), {
            "labels": {"a": "1"}, "max_retries": 0, "name": "n", "payload": {"url": "https://example.com"},
            "schedule": {"cron": "0 9 * * 1", "timezone": "Europe/Berlin"}, "type": "ping"})

    def test_times_are_rfc3339(self):
        at = datetime(2035, 3, 1, 9, 0, tzinfo=timezone.utc)
        self.assertEqual(to_json(tock.RetryRequest(scheduled_for=at)), {"scheduled_for": "2035-03-01T09:00:00+00:00"})
        with self.assertRaisesRegex(ValueError, "time zone"):
            to_json(tock.RetryRequest(scheduled_for=datetime(2035, 3, 1)))

    def test_a_keyword_field_is_sent_by_its_json_name(self):
        at = datetime(2035, 3, 1, 9, 0, tzinfo=timezone.utc)
        self.assertEqual(to_json(tock.BackfillRequest(from_=at, to=at)),
                         {"from": "2035-03-01T09:00:00+00:00", "to": "2035-03-01T09:00:00+00:00"})


class FromJSON(unittest.TestCase):
    def test_nested_optional_and_unknown(self):
        run = {"id": "r", "job_id": "j", "scheduled_for": "2035-03-01T09:00:00.123456789Z", "attempt": 1,
               "status": "completed", "started_at": "2035-03-01T09:00:00Z", "finished_at": None, "output": "",
               "error": "", "lateness_ms": 2, "job_name": "n", "job_type": "ping", "added_later": True}
        page = from_json(tock.RunList, {"runs": [run], "next_cursor": "c"})
        self.assertEqual(page.next_cursor, "c")
        r = page.runs[0]
        self.assertIsInstance(r, tock.Run)
        self.assertEqual(r.scheduled_for, datetime(2035, 3, 1, 9, 0, 0, 123456, tzinfo=timezone.utc))
        self.assertIsNone(r.finished_at)
        self.assertIsNone(r.throttled_ms, "a property the answer leaves out is None")

    def test_maps_and_free_form(self):
        counts = from_json(tock.JobCounts, {"counts": {"scheduled": 2}, "total": 2})
        self.assertEqual(counts.counts, {"scheduled": 2})
        change = from_json(tock.FieldChange, {"field": "payload", "old": {"url": "a"}, "new": None})
        self.assertEqual((change.old, change.new), ({"url": "a"}, None))

    def test_a_keyword_field_is_read_from_its_json_name(self):
        counts = dict.fromkeys(("total", "existing", "queued", "running", "completed", "failed", "skipped",
                                "remaining"), 0)
        b = from_json(tock.Backfill, {"id": "b", "job_id": "j", "from": "2035-03-01T00:00:00.000Z",
                                      "to": "2035-03-01T03:00:00.000Z", "overlap": "allow", "status": "running",
                                      "created_at": "2035-03-01T04:00:00.000Z", "finished_at": None, **counts})
        self.assertEqual(b.from_, datetime(2035, 3, 1, tzinfo=timezone.utc))
        self.assertEqual(to_json(b)["from"], "2035-03-01T00:00:00+00:00")
        with self.assertRaises(TypeError, msg="from_ on the wire is not from"):
            from_json(tock.BackfillRequest, {"from_": "2035-03-01T00:00:00Z", "to": "2035-03-01T03:00:00Z"})

    def test_a_missing_required_field_is_an_error(self):
        with self.assertRaises(TypeError):
            from_json(tock.RunList, {"runs": []})


if __name__ == "__main__":
    unittest.main()

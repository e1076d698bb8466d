"""The client against a fake dashboard on loopback: retries, the
Idempotency-Key kept across them, typed errors, pages, and every route of
the API's document reached by a method."""

import json
import re
import threading
import unittest
from datetime import datetime, timedelta, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from unittest import mock

import tock

OPENAPI = Path(__file__).resolve().parents[2] / "go" / "openapi.json"
JOB = {"id": "j1", "name": "n", "type": "ping", "status": "scheduled", "payload": {"url": "https://example.com"},
       "priority": 0, "max_retries": 3, "timeout": "30s", "run_at": None, "timezone": "UTC", "next_run_at": None,
       "history": "all", "labels": {}, "created_at": "2035-03-01T09:00:00Z", "updated_at": "2035-03-01T09:00:00Z",
       "owner": "u1", "last_run": None}
BACKFILL = {"id": "b1", "job_id": "j1", "from": "2035-03-01T00:00:00.000Z", "to": "2035-03-01T03:00:00.000Z",
            "overlap": "allow", "status": "running", "total": 3, "existing": 0, "queued": 0, "running": 0,
            "completed": 0, "failed": 0, "skipped": 0, "remaining": 3, "created_at": "2035-03-01T04:00:00.000Z",
            "finished_at": None}
CALENDAR = {"name": "de-holidays", "timezone": "Europe/Berlin", "dates": ["2026-12-25"],
            "ranges": [{"from": "2026-12-24T00:00:00.000Z", "to": "2026-12-27T00:00:00.000Z"}], "rrules": [],
            "created_at": "2026-11-28T10:00:00.000Z", "updated_at": "2026-11-28T10:00:00.000Z"}


class Fake:
    """A dashboard that answers from a script: each answer is (status,
    headers, body), served in order, the last one again once the script runs
    out. It records every request it receives."""

    def __init__(self, *answers):
        self.answers = list(answers)
        self.requests = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do(self):
                n = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(n)) if n else None
                fake.requests.append((self.command, self.path, dict(self.headers), body))
                status, headers, answer = fake.answers.pop(0) if len(fake.answers) > 1 else fake.answers[0]
                data = answer if isinstance(answer, bytes) else json.dumps(answer).encode()
                self.send_response(status)
                for k, v in headers.items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        # A short poll, so that close (shutdown) does not wait half a second.
        threading.Thread(target=self.server.serve_forever, args=(0.01,), daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_port}"

    def close(self):
        self.server.shutdown()
        self.server.server_close()


class ClientTest(unittest.TestCase):
    def fake(self, *answers):
        f = Fake(*answers)
        self.addCleanup(f.close)
        return f

    def client(self, fake, **kw):
        return tock.Client(fake.url, "secret-token", retries=tock.Retries(attempts=3, base=0.001, max_delay=0.01), **kw)

    def spec(self):
        return tock.JobSpec(name="n", type="ping", delay="1h", payload=tock.PingPayload(url="https://example.com"))


class Retrying(ClientTest):
    def test_a_create_keeps_its_idempotency_key_across_retries(self):
        f = self.fake((503, {}, b""), (201, {}, JOB))
        job = self.client(f).jobs.create(self.spec())
        self.assertEqual(job.id, "j1")
        keys = [r[2].get("Idempotency-Key") for r in f.requests]
        self.assertEqual(len(keys), 2)
        self.assertRegex(keys[0], r"^tock-py-[0-9a-f]{32}$")
        self.assertEqual(keys[0], keys[1])
        self.assertEqual(f.requests[0][2]["Authorization"], "Bearer secret-token")
        self.assertEqual(f.requests[0][3]["payload"], {"url": "https://example.com"})

    def test_each_call_gets_a_key_of_its_own_or_the_callers(self):
        f = self.fake((201, {}, JOB))
        c = self.client(f)
        c.jobs.create(self.spec())
        c.jobs.create(self.spec())
        c.jobs.create(self.spec(), idempotency_key="order-1234")
        keys = [r[2]["Idempotency-Key"] for r in f.requests]
        self.assertNotEqual(keys[0], keys[1])
        self.assertEqual(keys[2], "order-1234")

    def test_a_503_on_a_write_without_a_key_is_not_repeated(self):
        f = self.fake((503, {}, b""), (200, {}, JOB))
        with self.assertRaises(tock.TockError) as cm:
            self.client(f).jobs.pause("j1")
        self.assertEqual(cm.exception.status, 503)
        self.assertEqual(len(f.requests), 1)
        self.assertNotIn("Idempotency-Key", f.requests[0][2])

    def test_retry_after_is_waited(self):
        f = self.fake((429, {"Retry-After": "2"}, {"error": {"code": "rate_limited"}}), (200, {}, JOB))
        c = tock.Client(f.url, "t", retries=tock.Retries(attempts=2, base=0.001, max_delay=5))
        with mock.patch("tock._transport.time.sleep") as sleep:
            c.jobs.get("j1")
        sleep.assert_called_once_with(2.0)

    def test_a_409_with_retry_after_is_retried(self):
        f = self.fake((409, {"Retry-After": "0"}, {"error": {"code": "conflict"}}), (201, {}, JOB))
        self.client(f).jobs.create(self.spec())
        self.assertEqual(len(f.requests), 2)

    def test_the_last_answer_is_raised_once_the_tries_run_out(self):
        f = self.fake((429, {"Retry-After": "0"}, {"error": {"code": "rate_limited", "message": "slow down"}}))
        with self.assertRaises(tock.RateLimitedError) as cm:
            self.client(f).jobs.list()
        self.assertEqual(len(f.requests), 3)
        self.assertEqual((cm.exception.code, cm.exception.retry_after), ("rate_limited", 0))


class Answers(ClientTest):
    def test_put_says_whether_it_created(self):
        f = self.fake((201, {}, JOB), (200, {}, JOB))
        c = self.client(f)
        self.assertTrue(c.jobs.put("k", self.spec())[1])
        self.assertFalse(c.jobs.put("k", self.spec())[1])
        self.assertEqual(f.requests[0][:2], ("PUT", "/api/v1/jobs/by-key/k"))

    def test_path_segments_and_query_are_escaped(self):
        f = self.fake((200, {}, JOB))
        self.client(f).jobs.get_by_key("a/b c", owner="u 1")
        self.assertEqual(f.requests[0][1], "/api/v1/jobs/by-key/a%2Fb%20c?owner=u+1")

    def test_labels_are_one_parameter_each(self):
        f = self.fake((200, {}, {"jobs": [], "next_cursor": ""}))
        self.client(f).jobs.list(tock.JobFilter(labels={"team": "a", "env": "prod"}, limit=3))
        self.assertEqual(f.requests[0][1], "/api/v1/jobs?limit=3&label=env%3Dprod&label=team%3Da")

    def test_an_error_is_typed(self):
        f = self.fake((400, {}, {"error": {"code": "invalid", "message": "bad", "field": "schedule.cron"}}))
        with self.assertRaises(tock.InvalidError) as cm:
            self.client(f).jobs.create(self.spec())
        self.assertEqual(cm.exception.field, "schedule.cron")
        self.assertNotIn("secret-token", str(cm.exception))

    def test_an_unreachable_dashboard_is_a_transport_error(self):
        f = self.fake((200, {}, {}))
        f.close()
        with self.assertRaises(tock.TransportError) as cm:
            self.client(f).me()
        self.assertIn(f.url, str(cm.exception))

    def test_an_answer_not_of_its_type_is_a_transport_error(self):
        f = self.fake((200, {}, {"unexpected": True}))
        with self.assertRaisesRegex(tock.TransportError, "decode answer"):
            self.client(f).jobs.get("j1")

    def test_a_backfill_sends_from_and_reads_it_back_as_from_(self):
        f = self.fake((503, {}, b""), (202, {"Location": "/api/v1/backfills/b1"}, BACKFILL),
                      (200, {}, {"backfills": [BACKFILL]}))
        c = self.client(f)
        start = datetime(2035, 3, 1, tzinfo=timezone.utc)
        b = c.jobs.backfill("j1", start, start + timedelta(hours=3), overlap=tock.OVERLAP_SKIP)
        self.assertIsInstance(b, tock.Backfill)
        self.assertEqual((b.id, b.from_, b.to, b.status, b.finished_at),
                         ("b1", start, start + timedelta(hours=3), tock.BACKFILL_RUNNING, None))
        self.assertEqual(f.requests[0][:2], ("POST", "/api/v1/jobs/j1/backfill"))
        self.assertEqual(f.requests[0][3], {"from": "2035-03-01T00:00:00+00:00", "to": "2035-03-01T03:00:00+00:00",
                                            "overlap": "skip"})
        keys = [r[2].get("Idempotency-Key") for r in f.requests[:2]]
        self.assertRegex(keys[0], r"^tock-py-", "a backfill carries a key like a create")
        self.assertEqual(keys[0], keys[1], "the same on its retry")
        self.assertEqual([b.from_ for b in c.jobs.backfills("j1")], [start])
        self.assertEqual(f.requests[2][:2], ("GET", "/api/v1/jobs/j1/backfills"))

    def test_a_backfill_is_named_by_its_id_or_under_its_job(self):
        f = self.fake((200, {}, {**BACKFILL, "status": "cancelled", "finished_at": "2035-03-01T04:01:00.000Z"}))
        c = self.client(f)
        self.assertEqual(c.backfills.get("b1").status, tock.BACKFILL_CANCELLED)
        c.backfills.cancel("b1", idempotency_key="stop-1")
        c.backfills.get("b1", job="j1")
        c.backfills.cancel("b1", job="j1")
        self.assertEqual([r[:2] for r in f.requests], [
            ("GET", "/api/v1/backfills/b1"), ("DELETE", "/api/v1/backfills/b1"),
            ("GET", "/api/v1/jobs/j1/backfills/b1"), ("DELETE", "/api/v1/jobs/j1/backfills/b1")])
        self.assertEqual(f.requests[1][2].get("Idempotency-Key"), "stop-1")

    def test_a_calendar_is_put_as_a_whole_and_its_range_sends_from(self):
        f = self.fake((503, {}, b""), (201, {}, CALENDAR))
        c = self.client(f)
        start = datetime(2026, 12, 24, tzinfo=timezone.utc)
        req = tock.CalendarRequest(timezone="Europe/Berlin", dates=["2026-12-25"],
                                   ranges=[tock.CalendarRequestRanges(from_=start, to=start + timedelta(days=3))])
        cal = c.calendars.put("de-holidays", req)
        self.assertIsInstance(cal, tock.Calendar)
        self.assertEqual((cal.name, cal.dates, cal.ranges[0].from_, cal.ranges[0].to),
                         ("de-holidays", ["2026-12-25"], start, start + timedelta(days=3)))
        self.assertEqual(len(f.requests), 2, "a PUT is retried after a 503: repeating it is safe")
        self.assertEqual(f.requests[1][:2], ("PUT", "/api/v1/calendars/de-holidays"))
        self.assertEqual(f.requests[1][3], {"timezone": "Europe/Berlin", "dates": ["2026-12-25"], "ranges": [
            {"from": "2026-12-24T00:00:00+00:00", "to": "2026-12-27T00:00:00+00:00"}]})
        self.assertNotIn("Idempotency-Key", f.requests[1][2], "no key unless given, as flows' put")
        c.calendars.put("de-holidays", tock.CalendarRequest(), owner="u2", idempotency_key="cal-1")
        self.assertEqual(f.requests[2][:2], ("PUT", "/api/v1/calendars/de-holidays?owner=u2"))
        self.assertEqual(f.requests[2][3], {})
        self.assertEqual(f.requests[2][2].get("Idempotency-Key"), "cal-1")

    def test_calendars_are_read_listed_and_deleted_by_name_and_owner(self):
        page = {"calendars": [CALENDAR], "next_cursor": ""}
        f = self.fake((200, {}, CALENDAR), (200, {}, CALENDAR), (200, {}, {**page, "next_cursor": "a"}),
                      (200, {}, page), (204, {}, b""), (200, {}, page), (204, {}, b""))
        c = self.client(f)
        self.assertEqual(c.calendars.get("a b").timezone, "Europe/Berlin")
        c.calendars.get("de-holidays", owner="u2")
        self.assertEqual([x.name for x in c.calendars.all(owner="u2")], ["de-holidays", "de-holidays"])
        self.assertIsNone(c.calendars.delete("de-holidays", idempotency_key="del-1"))
        c.calendars.list(limit=5, cursor="a", owner="u2")
        c.calendars.delete("de-holidays", owner="u2")
        self.assertEqual([r[:2] for r in f.requests], [
            ("GET", "/api/v1/calendars/a%20b"), ("GET", "/api/v1/calendars/de-holidays?owner=u2"),
            ("GET", "/api/v1/calendars?owner=u2"), ("GET", "/api/v1/calendars?cursor=a&owner=u2"),
            ("DELETE", "/api/v1/calendars/de-holidays"), ("GET", "/api/v1/calendars?limit=5&cursor=a&owner=u2"),
            ("DELETE", "/api/v1/calendars/de-holidays?owner=u2")])
        self.assertEqual(f.requests[4][2].get("Idempotency-Key"), "del-1")

    def test_a_calendar_refusal_is_typed(self):
        f = self.fake((400, {}, {"error": {"code": "invalid", "message": "is not a date", "field": "dates[1]"}}),
                      (409, {}, {"error": {"code": "conflict", "message": "in use", "field": "name"}}))
        c = self.client(f)
        with self.assertRaises(tock.InvalidError) as cm:
            c.calendars.put("x", tock.CalendarRequest(dates=["2026-12-25", "25.12.2026"]))
        self.assertEqual(cm.exception.field, "dates[1]")
        with self.assertRaises(tock.ConflictError):
            c.calendars.delete("x")
        self.assertEqual(len(f.requests), 2)

    def test_next_and_preview_are_lists_that_carry_what_calendars_leave_out(self):
        up = {"at": "2035-03-02T09:00:00+01:00", "utc": "2035-03-02T08:00:00Z"}
        off = {"at": "2035-03-01T09:00:00+01:00", "utc": "2035-03-01T08:00:00Z", "reason": "calendar off: date 2035-03-01"}
        f = self.fake((200, {}, {"next": [up], "skipped": [off]}), (200, {}, {"next": [up]}))
        c = self.client(f)
        got = c.jobs.next("j1", 1)
        self.assertIsInstance(got, list)
        self.assertIsInstance(got, tock.Occurrences)
        self.assertEqual(got, [tock.Upcoming(at=datetime(2035, 3, 2, 8, tzinfo=timezone.utc),
                                             utc=datetime(2035, 3, 2, 8, tzinfo=timezone.utc))])
        self.assertEqual(got.skipped, [tock.SkippedUpcoming(at=datetime(2035, 3, 1, 8, tzinfo=timezone.utc),
                                                            utc=datetime(2035, 3, 1, 8, tzinfo=timezone.utc),
                                                            reason="calendar off: date 2035-03-01")])
        preview = c.preview(tock.PreviewRequest(schedule=tock.Schedule(cron="0 9 * * *"), skip_calendars=["off"]))
        self.assertEqual((len(preview), preview.skipped), (1, []), "none left out: an empty list, not None")
        self.assertEqual(f.requests[1][3]["skip_calendars"], ["off"])

    def test_a_replayed_rotation_reads_the_secret(self):
        secret = {"secret": "s2", "header": "X-Tock-Signature", "scheme": "v1", "previous_valid_until": None}
        f = self.fake((200, {}, {**secret, "secret": "secret:sha256:" + "0" * 32}), (200, {}, secret))
        self.assertEqual(self.client(f).rotate_signing_secret(timedelta(minutes=90)).secret, "s2")
        self.assertEqual(f.requests[0][3], {"grace": "5400000ms"})
        self.assertEqual(f.requests[1][:2], ("GET", "/api/v1/signing-secret"))


class Pages(ClientTest):
    def page(self, ids, cursor):
        return 200, {}, {"jobs": [{**JOB, "id": i} for i in ids], "next_cursor": cursor}

    def test_all_follows_the_cursors(self):
        f = self.fake(self.page(["a", "b"], "c1"), self.page(["c", "d"], "c2"), self.page(["e"], ""))
        ids = [j.id for j in self.client(f).jobs.all(tock.JobFilter(limit=2))]
        self.assertEqual(ids, ["a", "b", "c", "d", "e"])
        self.assertEqual([r[1] for r in f.requests],
                         ["/api/v1/jobs?limit=2", "/api/v1/jobs?limit=2&cursor=c1", "/api/v1/jobs?limit=2&cursor=c2"])

    def test_a_break_stops_asking(self):
        f = self.fake(self.page(["a", "b"], "c1"), self.page(["c", "d"], "c2"))
        for n, _ in enumerate(self.client(f).jobs.all(), 1):
            if n == 2:
                break
        self.assertEqual(len(f.requests), 1)

    def test_the_same_cursor_again_ends_the_walk(self):
        f = self.fake(self.page(["a"], "c1"))
        self.assertEqual(len(list(self.client(f).jobs.all())), 2)


class EveryRoute(ClientTest):
    def test_every_route_of_the_document_has_a_method(self):
        """Calls every method once against a dashboard that answers 404 to
        everything, and checks that the requests cover every operation of
        openapi.json, each with the method and path it names."""
        f = self.fake((404, {}, {"error": {"code": "not_found"}}))
        c = self.client(f)
        s, fl, dl = self.spec(), tock.JobFilter(), tock.RunFilter()
        at = datetime(2035, 3, 1, tzinfo=timezone.utc)
        calls = [
            lambda: c.jobs.create(s), lambda: c.jobs.batch(tock.BatchRequest(jobs=[s])), lambda: c.jobs.get("i"),
            lambda: c.jobs.list(fl), lambda: c.jobs.update("i", tock.JobPatch(name="m")),
            lambda: c.jobs.cancel("i"), lambda: c.jobs.pause("i"), lambda: c.jobs.resume("i"),
            lambda: c.jobs.trigger("i"), lambda: c.jobs.retry("i"), lambda: c.jobs.abort("i"),
            lambda: c.jobs.next("i"), lambda: c.jobs.runs("i"), lambda: c.jobs.put("k", s),
            lambda: c.jobs.get_by_key("k"), lambda: c.jobs.cancel_by_key("k"),
            lambda: c.jobs.bulk(tock.BulkRequest(action=tock.BULK_PAUSE, ids=["i"])), lambda: c.jobs.counts(),
            lambda: c.jobs.backfill("i", at, at + timedelta(hours=1)), lambda: c.jobs.backfills("i"),
            lambda: c.backfills.get("b"), lambda: c.backfills.cancel("b"),
            lambda: c.backfills.get("b", job="i"), lambda: c.backfills.cancel("b", job="i"),
            lambda: c.runs.list(dl), lambda: c.runs.stats(),
            lambda: c.calendars.list(), lambda: next(c.calendars.all()), lambda: c.calendars.get("k"),
            lambda: c.calendars.put("k", tock.CalendarRequest()), lambda: c.calendars.delete("k"),
            lambda: c.flows.list(), lambda: c.flows.get("k"), lambda: c.flows.put("k", tock.FlowRequest()),
            lambda: c.flows.pause("k"), lambda: c.flows.resume("k"), lambda: c.flows.delete("k"),
            lambda: c.dead_letters.list(dl), lambda: c.dead_letters.get("i"), lambda: c.dead_letters.replay("i"),
            lambda: c.dead_letters.purge("i"), lambda: c.dead_letters.replay_many(tock.DeadLetterRequest()),
            lambda: c.dead_letters.purge_many(tock.DeadLetterRequest()),
            lambda: c.users.create(tock.UserCreate(name="u", role="user")), lambda: c.users.list(),
            lambda: c.users.get("i"), lambda: c.users.update("i", tock.UserUpdate(name="v")),
            lambda: c.users.disable("i"), lambda: c.users.enable("i"), lambda: c.users.erase("i"),
            lambda: c.users.jobs("i"), lambda: c.keys.create("i", tock.KeyOptions(name="k")),
            lambda: c.keys.list("i"), lambda: c.keys.revoke("i"),
            c.me, c.signing_secret, c.rotate_signing_secret, c.job_types,
            lambda: c.preview(tock.PreviewRequest(delay="1h")), c.audit, c.system, c.health, c.ready, c.openapi,
        ]
        for call in calls:
            with self.assertRaises(tock.NotFoundError):
                call()
        doc = json.loads(OPENAPI.read_text())
        routes = {(m.upper(), p) for p, ops in doc["paths"].items() for m in ops
                  if m in ("get", "put", "post", "patch", "delete")}
        patterns = {r: re.compile("^" + re.sub(r"\\\{\w+\\\}", "[^/]+", re.escape(r[1])) + "$") for r in routes}
        reached = set()
        for method, target, _, _ in f.requests:
            path = target.split("?")[0]
            matched = [r for r, rx in patterns.items() if r[0] == method and rx.match(path)]
            self.assertEqual(len(matched), 1, f"{method} {path} is not one route of the document")
            reached.add(matched[0])
        self.assertEqual(sorted(routes - reached), [], "routes no method reaches")


if __name__ == "__main__":
    unittest.main()

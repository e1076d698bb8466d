"""The paths users depend on, against the real services. e2e/python_test.go
starts them (dashboard, scheduler, worker) and runs these tests with TOCK_URL
and TOCK_TOKEN (the admin token), and TOCK_LOSSY_URL, a proxy in front of the
dashboard that answers 503 in place of its first answer to POST /api/v1/jobs.
Each test labels its jobs with a suffix of this run's own, so the tests can
run again against the same dashboard."""

import os
import secrets
import time
import unittest
from dataclasses import replace
from datetime import datetime, timedelta, timezone

import tock

URL, TOKEN, LOSSY_URL = (os.environ.get(k) for k in ("TOCK_URL", "TOCK_TOKEN", "TOCK_LOSSY_URL"))
RUN = secrets.token_hex(3)
UNKNOWN_ID = "0190c0de-0000-7000-8000-000000000000"


@unittest.skipUnless(URL and TOKEN, "TOCK_URL and TOCK_TOKEN are unset: `go test -run TestPython ./e2e/` sets them")
class AgainstTheRealServices(unittest.TestCase):
    def setUp(self):
        self.tock = tock.Client(URL, TOKEN)

    def ping(self, name, case=None, **timing):
        """A ping job due in an hour unless timing says otherwise; the
        dashboard's own health check stands in for the caller's endpoint."""
        labels = {"case": f"{case}-{RUN}"} if case else None
        return tock.JobSpec(name=name, type="ping", payload=tock.PingPayload(url=f"{URL}/healthz"), labels=labels,
                            **(timing or {"delay": "1h"}))

    def test_create_the_job_runs_and_its_run_is_listed_and_counted(self):
        job = self.tock.jobs.create(self.ping("runs now", "py-run", delay="0s"))
        self.assertIsInstance(job, tock.Job)
        self.assertEqual(job.status, "scheduled")
        runs = []
        deadline = time.monotonic() + 30
        while not runs and time.monotonic() < deadline:
            runs = self.tock.runs.list(tock.RunFilter(job=job.id, status="completed")).runs
            time.sleep(0.1)
        self.assertEqual(len(runs), 1, "the job's run completes within 30 s")
        self.assertEqual((runs[0].job_id, runs[0].job_name, runs[0].attempt), (job.id, "runs now", 1))
        self.assertEqual([r.id for r in self.tock.jobs.all_runs(job.id)], [runs[0].id])
        across = list(self.tock.runs.all(tock.RunFilter(labels=job.labels, status="completed")))
        self.assertEqual([r.id for r in across], [runs[0].id], "runs across jobs, by label")
        stats = self.tock.runs.stats(group_by="status")
        self.assertEqual(stats.group_by, "status")
        completed = [g.count for g in stats.groups if g.key == "completed"]
        self.assertTrue(completed and completed[0] >= 1, stats.groups)

    def test_put_by_key_creates_then_replaces_in_place(self):
        key = f"py-nightly-{RUN}"
        spec = self.ping("nightly", schedule=tock.Schedule(cron="0 3 * * *", timezone="Europe/Berlin"))
        first, created = self.tock.jobs.put(key, spec)
        self.assertTrue(created)
        spec.schedule.cron = "0 4 * * *"
        second, created = self.tock.jobs.put(key, spec)
        self.assertFalse(created)
        self.assertEqual(second.id, first.id)
        self.assertEqual(second.schedule.cron, "0 4 * * *")
        self.assertEqual(self.tock.jobs.put_dry_run(key, spec).action, tock.DRY_RUN_UNCHANGED)
        self.assertEqual(self.tock.jobs.get_by_key(key).id, first.id)
        self.tock.jobs.cancel_by_key(key)
        self.assertEqual(self.tock.jobs.get_by_key(key).status, "cancelled")

    def test_list_by_label_page_after_page(self):
        specs = [self.ping(f"paged {i}", "py-paged") for i in range(7)]
        created = self.tock.jobs.batch(tock.BatchRequest(jobs=specs))
        self.assertEqual(created.created, 7)
        f = tock.JobFilter(labels=specs[0].labels, limit=3)
        first = self.tock.jobs.list(f)
        self.assertEqual(len(first.jobs), 3)
        self.assertNotEqual(first.next_cursor, "", "more than one page")
        ids = [j.id for j in self.tock.jobs.all(f)]
        self.assertEqual(sorted(ids), sorted(created.ids), "three pages of at most 3, each job once")

    def test_a_bulk_dry_run_counts_and_changes_nothing(self):
        specs = [self.ping(f"bulk {i}", "py-bulk") for i in range(3)]
        self.tock.jobs.batch(tock.BatchRequest(jobs=specs))
        label = [f"case={specs[0].labels['case']}"]
        res = self.tock.jobs.bulk(tock.BulkRequest(action=tock.BULK_PAUSE, dry_run=True,
                                                   filter=tock.BulkFilter(label=label)))
        self.assertTrue(res.dry_run)
        self.assertEqual((res.matched, res.changed, len(res.ids)), (3, 0, 3))
        statuses = {j.status for j in self.tock.jobs.all(tock.JobFilter(labels=specs[0].labels))}
        self.assertEqual(statuses, {"scheduled"})

    def test_a_backfill_runs_a_past_range_and_is_cancelled(self):
        job = self.tock.jobs.create(self.ping("hourly", "py-backfill", schedule=tock.Schedule(cron="0 * * * *")))
        start = datetime.now(timezone.utc).replace(minute=0, second=0, microsecond=0) - timedelta(hours=4)
        end = start + timedelta(hours=3)
        b = self.tock.jobs.backfill(job.id, start, end)
        self.assertIsInstance(b, tock.Backfill)
        self.assertEqual((b.job_id, b.from_, b.to, b.total, b.status), (job.id, start, end, 3, tock.BACKFILL_RUNNING))
        self.assertIsNone(b.finished_at)
        got = self.tock.backfills.get(b.id)
        self.assertEqual((got.id, got.from_, got.total), (b.id, start, 3))
        self.assertEqual(self.tock.backfills.get(b.id, job=job.id).id, b.id)
        self.assertEqual([x.id for x in self.tock.jobs.backfills(job.id)], [b.id])
        try:
            cancelled = self.tock.backfills.cancel(b.id)
        except tock.ConflictError:
            # Its three pings may all have ended before the cancel: it completed.
            self.assertEqual(self.tock.backfills.get(b.id).status, tock.BACKFILL_COMPLETED)
        else:
            self.assertEqual(cancelled.status, tock.BACKFILL_CANCELLED)
            self.assertIsNotNone(cancelled.finished_at)
        with self.assertRaises(tock.InvalidError) as cm:
            self.tock.jobs.backfill(job.id, end, start)
        self.assertEqual((cm.exception.status, cm.exception.code, cm.exception.field), (400, "invalid", "to"))
        with self.assertRaises(tock.NotFoundError):
            self.tock.backfills.get(UNKNOWN_ID)

    def test_calendars_put_get_list_previews_and_a_delete_refused_while_a_job_names_one(self):
        holidays = f"py-holidays-{RUN}"
        start = datetime(2035, 12, 24, tzinfo=timezone.utc)
        ranges = [tock.CalendarRequestRanges(from_=start, to=start + timedelta(days=3))]
        put = self.tock.calendars.put(holidays, tock.CalendarRequest(timezone="Europe/Berlin", dates=["2035-12-31"],
                                                                     ranges=ranges))
        self.assertIsInstance(put, tock.Calendar)
        self.assertEqual((put.name, put.timezone, put.dates, put.rrules), (holidays, "Europe/Berlin", ["2035-12-31"], []))
        self.assertEqual(put.ranges, [tock.CalendarRange(from_=start, to=start + timedelta(days=3))])
        self.assertEqual(self.tock.calendars.get(holidays), put)
        names = [c.name for c in self.tock.calendars.all()]
        self.assertIn(holidays, names)
        self.assertEqual(names, sorted(names), "in name order")
        page = self.tock.calendars.list(limit=1)
        self.assertEqual(len(page.calendars), 1)
        with self.assertRaises(tock.InvalidError) as cm:
            self.tock.calendars.put(holidays, tock.CalendarRequest(dates=["25.12.2026"]))
        self.assertEqual((cm.exception.status, cm.exception.code, cm.exception.field), (400, "invalid", "dates[0]"))
        self.assertEqual(self.tock.calendars.get(holidays).dates, ["2035-12-31"], "a refused PUT changes nothing")

        # Every Saturday and Sunday off: six daily occurrences always span a weekend.
        weekends, rule = f"py-weekends-{RUN}", "FREQ=WEEKLY;BYDAY=SA,SU"
        self.assertEqual(self.tock.calendars.put(weekends, tock.CalendarRequest(rrules=[rule])).rrules, [rule])
        schedule = tock.Schedule(cron="0 9 * * *")
        job = self.tock.jobs.create(self.ping("weekdays", "py-calendar", schedule=schedule,
                                              skip_calendars=[weekends, holidays]))
        self.assertEqual(job.skip_calendars, [weekends, holidays])
        preview = self.tock.preview(tock.PreviewRequest(schedule=schedule, skip_calendars=[weekends], n=6))
        for occurrences in (preview, self.tock.jobs.next(job.id, 6)):
            self.assertEqual(len(occurrences), 6)
            self.assertEqual([u.utc.weekday() < 5 for u in occurrences], [True] * 6, occurrences)
            self.assertGreaterEqual(len(occurrences.skipped), 2, occurrences.skipped)
            for s in occurrences.skipped:
                day = s.utc
                self.assertGreaterEqual(day.weekday(), 5, s)
                self.assertEqual(s.reason, f'calendar {weekends}: rule "{rule}" on {day.date().isoformat()}')
        self.assertEqual(self.tock.preview(tock.PreviewRequest(schedule=schedule, n=6)).skipped, [])

        with self.assertRaises(tock.ConflictError) as cm:
            self.tock.calendars.delete(weekends)
        self.assertEqual((cm.exception.status, cm.exception.code), (409, "conflict"))
        self.tock.jobs.cancel(job.id)
        self.tock.calendars.delete(weekends)
        self.tock.calendars.delete(holidays)
        with self.assertRaises(tock.NotFoundError):
            self.tock.calendars.get(weekends)

    def test_a_refusal_is_an_invalid_error_naming_the_field(self):
        with self.assertRaises(tock.InvalidError) as cm:
            self.tock.jobs.create(self.ping("bad cron", schedule=tock.Schedule(cron="61 * * * *")))
        e = cm.exception
        self.assertEqual((e.status, e.code, e.field), (400, "invalid", "schedule.cron"))
        self.assertTrue(e.message)
        no_payload = replace(self.ping("no payload"), payload=None)
        with self.assertRaises(tock.InvalidError) as cm:
            self.tock.jobs.batch(tock.BatchRequest(jobs=[self.ping("ok"), no_payload]))
        self.assertEqual(cm.exception.items[0].index, 1)
        with self.assertRaises(tock.NotFoundError) as cm:
            self.tock.jobs.get(UNKNOWN_ID)
        self.assertEqual(cm.exception.code, "not_found")

    def test_a_read_only_key_reads_and_its_write_is_forbidden(self):
        me = self.tock.me()
        scopes = [tock.SCOPE_JOBS_READ, tock.SCOPE_RUNS_READ]
        ro = self.tock.keys.create(me.id, tock.KeyOptions(name=f"py wall screen {RUN}", scopes=scopes))
        self.assertEqual(ro.scopes, scopes)
        reader = tock.Client(URL, ro.key)
        reader.jobs.list(tock.JobFilter(limit=1))
        with self.assertRaises(tock.ForbiddenError) as cm:
            reader.jobs.create(self.ping("read-only"))
        self.assertEqual((cm.exception.status, cm.exception.code), (403, "forbidden"))
        self.assertIn("jobs:write", cm.exception.message)
        self.tock.keys.revoke(ro.id)
        with self.assertRaises(tock.UnauthorizedError):
            reader.me()

    @unittest.skipUnless(LOSSY_URL, "TOCK_LOSSY_URL is unset")
    def test_a_create_whose_answer_is_lost_is_retried_to_exactly_one_job(self):
        lossy = tock.Client(LOSSY_URL, TOKEN, retries=tock.Retries(attempts=3, base=0.01, max_delay=0.1))
        spec = self.ping("lost answer", "py-lost-answer")
        job = lossy.jobs.create(spec)
        # e2e/python_test.go checks that the proxy saw the same Idempotency-Key twice.
        jobs = list(self.tock.jobs.all(tock.JobFilter(labels=spec.labels)))
        self.assertEqual([j.id for j in jobs], [job.id], "one job, not two")


if __name__ == "__main__":
    unittest.main()

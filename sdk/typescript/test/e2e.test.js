// The paths users depend on, against the real services. e2e/typescript_test.go
// starts them (dashboard, scheduler, worker) and runs these tests with
// TOCK_URL and TOCK_TOKEN (the admin token), and TOCK_LOSSY_URL, a proxy in
// front of the dashboard that answers 503 in place of its first answer to
// POST /api/v1/jobs.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { setTimeout as delay } from "node:timers/promises";

import { ConflictError, ForbiddenError, InvalidError, NotFoundError, Tock, UnauthorizedError } from "@tockhq/tock";

const { TOCK_URL, TOCK_TOKEN, TOCK_LOSSY_URL } = process.env;
const skip = !TOCK_URL || !TOCK_TOKEN ? "TOCK_URL and TOCK_TOKEN are unset: `go test -run TestTypeScript ./e2e/` sets them" : false;

describe("against the real services", { skip }, () => {
  const tock = new Tock({ baseUrl: TOCK_URL, token: TOCK_TOKEN });
  // The dashboard's own health check stands in for the caller's endpoint.
  const ping = (name, labels) => ({ name, type: "ping", delay: "1h", payload: { url: `${TOCK_URL}/healthz` }, labels });

  async function collect(iterable) {
    const out = [];
    for await (const item of iterable) out.push(item);
    return out;
  }

  test("create: the job runs, and its run is listed", async () => {
    const job = await tock.jobs.create({ ...ping("runs now", { case: "ts-run" }), delay: "0s" });
    assert.equal(job.status, "scheduled");
    let runs = [];
    for (const deadline = Date.now() + 30_000; runs.length === 0 && Date.now() < deadline; await delay(100)) {
      runs = (await tock.runs.list({ job: job.id, status: "completed" })).runs;
    }
    assert.equal(runs.length, 1, "the job's run completes within 30 s");
    assert.equal(runs[0].job_id, job.id);
    assert.equal(runs[0].job_name, "runs now");
    assert.equal(runs[0].attempt, 1);
    const own = await collect(tock.jobs.allRuns(job.id));
    assert.deepEqual(own.map((r) => r.id), [runs[0].id]);
  });

  test("runs across jobs and their stats", async () => {
    const runs = await collect(tock.runs.all({ label: ["case=ts-run"], status: "completed" }));
    assert.equal(runs.length, 1);
    const stats = await tock.runs.stats({ group_by: "status" });
    assert.equal(stats.group_by, "status");
    const completed = stats.groups.find((g) => g.key === "completed");
    assert.ok(completed && completed.count >= 1, JSON.stringify(stats.groups));
  });

  test("put by key creates, then replaces in place", async () => {
    const spec = { ...ping("nightly"), delay: undefined, schedule: { cron: "0 3 * * *", timezone: "Europe/Berlin" } };
    const first = await tock.jobs.put("ts-nightly", spec);
    assert.equal(first.created, true);
    const second = await tock.jobs.put("ts-nightly", { ...spec, schedule: { ...spec.schedule, cron: "0 4 * * *" } });
    assert.equal(second.created, false);
    assert.equal(second.job.id, first.job.id);
    assert.equal(second.job.schedule.cron, "0 4 * * *");
    const dry = await tock.jobs.putDryRun("ts-nightly", { ...spec, schedule: { ...spec.schedule, cron: "0 4 * * *" } });
    assert.equal(dry.action, "unchanged");
    assert.equal((await tock.jobs.getByKey("ts-nightly")).id, first.job.id);
    await tock.jobs.cancelByKey("ts-nightly");
    assert.equal((await tock.jobs.getByKey("ts-nightly")).status, "cancelled");
  });

  test("list by label, page after page", async () => {
    const specs = Array.from({ length: 7 }, (_, i) => ping(`paged ${i}`, { case: "ts-paged" }));
    const created = await tock.jobs.batch({ jobs: specs });
    assert.equal(created.created, 7);
    const first = await tock.jobs.list({ label: ["case=ts-paged"], limit: 3 });
    assert.equal(first.jobs.length, 3);
    assert.notEqual(first.next_cursor, "");
    const all = await collect(tock.jobs.all({ label: ["case=ts-paged"], limit: 3 }));
    assert.deepEqual(all.map((j) => j.id).sort(), [...created.ids].sort(), "three pages of at most 3, each job once");
  });

  test("a bulk dry run counts and changes nothing", async () => {
    const res = await tock.jobs.bulk({ action: "pause", dry_run: true, filter: { label: ["case=ts-paged"] } });
    assert.equal(res.dry_run, true);
    assert.equal(res.matched, 7);
    assert.equal(res.changed, 0);
    for await (const job of tock.jobs.all({ label: ["case=ts-paged"] })) assert.equal(job.status, "scheduled");
  });

  test("a backfill runs a past range, is listed, and is cancelled", async () => {
    const job = await tock.jobs.create({ ...ping("hourly", { case: "ts-backfill" }), delay: undefined, schedule: { cron: "0 * * * *" } });
    const hour = 3_600_000;
    const start = Math.floor(Date.now() / hour) * hour - 4 * hour;
    const from = new Date(start).toISOString();
    const to = new Date(start + 3 * hour).toISOString();
    const b = await tock.jobs.backfill(job.id, { from, to });
    assert.deepEqual([b.job_id, b.from, b.to, b.total, b.status, b.finished_at], [job.id, from, to, 3, "running", null]);
    const got = await tock.backfills.get(b.id);
    assert.deepEqual([got.id, got.from, got.total], [b.id, from, 3]);
    assert.equal((await tock.backfills.get(b.id, { job: job.id })).id, b.id);
    assert.deepEqual((await tock.jobs.backfills(job.id)).map((x) => x.id), [b.id]);
    try {
      const cancelled = await tock.backfills.cancel(b.id);
      assert.equal(cancelled.status, "cancelled");
      assert.notEqual(cancelled.finished_at, null);
    } catch (e) {
      // Its three pings may all have ended before the cancel: it completed.
      assert.ok(e instanceof ConflictError, String(e));
      assert.equal((await tock.backfills.get(b.id)).status, "completed");
    }
    await assert.rejects(tock.jobs.backfill(job.id, { from: to, to: from }), (e) => {
      assert.ok(e instanceof InvalidError, String(e));
      assert.deepEqual([e.status, e.code, e.field], [400, "invalid", "to"]);
      return true;
    });
    await assert.rejects(tock.backfills.get("0190c0de-0000-7000-8000-000000000000"), NotFoundError);
  });

  test("calendars: put, get, list, a typed 400, skipped in previews, and a delete refused while a job names it", async () => {
    const suffix = Math.random().toString(16).slice(2, 8);
    const holidays = `ts-holidays-${suffix}`;
    const range = { from: "2035-12-24T00:00:00.000Z", to: "2035-12-27T00:00:00.000Z" };
    const put = await tock.calendars.put(holidays, { timezone: "Europe/Berlin", dates: ["2035-12-31"], ranges: [range] });
    assert.deepEqual([put.name, put.timezone, put.dates, put.ranges, put.rrules], [holidays, "Europe/Berlin", ["2035-12-31"], [range], []]);
    const got = await tock.calendars.get(holidays);
    assert.deepEqual(got, put);
    const listed = await collect(tock.calendars.all({ limit: 1 }));
    assert.ok(listed.some((c) => c.name === holidays), JSON.stringify(listed.map((c) => c.name)));
    assert.deepEqual(listed.map((c) => c.name), listed.map((c) => c.name).sort(), "in name order");
    await assert.rejects(tock.calendars.put(holidays, { dates: ["25.12.2026"] }), (e) => {
      assert.ok(e instanceof InvalidError, String(e));
      assert.deepEqual([e.status, e.code, e.field], [400, "invalid", "dates[0]"]);
      return true;
    });
    assert.deepEqual((await tock.calendars.get(holidays)).dates, ["2035-12-31"], "a refused PUT changes nothing");

    // Every Saturday and Sunday off: six daily occurrences always span a weekend.
    const weekends = `ts-weekends-${suffix}`;
    const rule = "FREQ=WEEKLY;BYDAY=SA,SU";
    assert.deepEqual((await tock.calendars.put(weekends, { rrules: [rule] })).rrules, [rule]);
    const schedule = { cron: "0 9 * * *" };
    const job = await tock.jobs.create({ ...ping("weekdays", { case: "ts-calendar" }), delay: undefined, schedule, skip_calendars: [weekends, holidays] });
    assert.deepEqual(job.skip_calendars, [weekends, holidays]);
    const weekend = (u) => [0, 6].includes(new Date(u.utc).getUTCDay());
    for (const next of [await tock.preview({ schedule, skip_calendars: [weekends], n: 6 }), await tock.jobs.next(job.id, 6)]) {
      assert.equal(next.length, 6);
      assert.ok(!next.some(weekend), JSON.stringify(next));
      assert.ok(next.skipped.length >= 2, JSON.stringify(next.skipped));
      for (const s of next.skipped) {
        assert.ok(weekend(s), JSON.stringify(s));
        assert.equal(s.reason, `calendar ${weekends}: rule "${rule}" on ${s.utc.slice(0, 10)}`);
      }
    }
    assert.deepEqual((await tock.preview({ schedule, n: 6 })).skipped, [], "no calendars, none skipped");

    await assert.rejects(tock.calendars.delete(weekends), (e) => {
      assert.ok(e instanceof ConflictError, String(e));
      assert.deepEqual([e.status, e.code], [409, "conflict"]);
      return true;
    });
    await tock.jobs.cancel(job.id);
    await tock.calendars.delete(weekends);
    await tock.calendars.delete(holidays);
    await assert.rejects(tock.calendars.get(weekends), NotFoundError);
  });

  test("a refusal is an InvalidError naming the field", async () => {
    const bad = { ...ping("bad cron"), delay: undefined, schedule: { cron: "61 * * * *" } };
    await assert.rejects(tock.jobs.create(bad), (e) => {
      assert.ok(e instanceof InvalidError, String(e));
      assert.equal(e.status, 400);
      assert.equal(e.code, "invalid");
      assert.equal(e.field, "schedule.cron");
      assert.ok(e.message);
      return true;
    });
    const noPayload = { name: "no payload", type: "ping", delay: "1h" };
    await assert.rejects(tock.jobs.batch({ jobs: [ping("ok"), noPayload] }), (e) => e instanceof InvalidError && e.items[0].index === 1);
    await assert.rejects(tock.jobs.get("0190c0de-0000-7000-8000-000000000000"), (e) => e instanceof NotFoundError && e.code === "not_found");
  });

  test("a read-only key reads, and its write is a ForbiddenError", async () => {
    const me = await tock.me();
    const ro = await tock.keys.create(me.id, { name: "ts wall screen", scopes: ["jobs:read", "runs:read"] });
    assert.deepEqual(ro.scopes, ["jobs:read", "runs:read"]);
    const reader = new Tock({ baseUrl: TOCK_URL, token: ro.key });
    await reader.jobs.list({ limit: 1 });
    await assert.rejects(reader.jobs.create(ping("read-only")), (e) => {
      assert.ok(e instanceof ForbiddenError, String(e));
      assert.equal(e.status, 403);
      assert.equal(e.code, "forbidden");
      assert.match(e.message, /jobs:write/);
      return true;
    });
    await tock.keys.revoke(ro.id);
    await assert.rejects(reader.me(), UnauthorizedError);
  });

  test("a create whose answer is lost behind a 503 is retried to exactly one job", { skip: !TOCK_LOSSY_URL && "TOCK_LOSSY_URL is unset" }, async () => {
    const lossy = new Tock({ baseUrl: TOCK_LOSSY_URL, token: TOCK_TOKEN, retries: { attempts: 3, baseMs: 10, maxMs: 100 } });
    const job = await lossy.jobs.create(ping("lost answer", { case: "ts-lost-answer" }));
    // e2e/typescript_test.go checks that the proxy saw the same Idempotency-Key twice.
    const jobs = await collect(tock.jobs.all({ label: ["case=ts-lost-answer"] }));
    assert.deepEqual(jobs.map((j) => j.id), [job.id], "one job, not two");
  });
});

// The client's behaviour against a fake dashboard on a local port: retries and
// Retry-After, the Idempotency-Key kept across retries, typed errors, pages
// and aborts. e2e.test.js drives the real services.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { createServer } from "node:http";
import { after, test } from "node:test";

import { ConflictError, InvalidError, NotFoundError, Tock, TockError } from "@tockhq/tock";

/**
 * Starts a fake dashboard whose answers are the handler's, in order of the
 * requests; it records each request's method, URL, headers and body.
 */
async function fake(handler) {
  const requests = [];
  const server = createServer((req, res) => {
    let body = "";
    req.on("data", (c) => (body += c));
    req.on("end", () => {
      const r = { method: req.method, url: req.url, headers: req.headers, body };
      requests.push(r);
      handler(r, res, requests.length);
    });
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  after(() => server.close());
  const url = `http://127.0.0.1:${server.address().port}`;
  return { url, requests };
}

function answer(res, status, body, headers = {}) {
  res.writeHead(status, { "Content-Type": "application/json", ...headers });
  res.end(body === undefined ? "" : JSON.stringify(body));
}

const unavailable = { error: { code: "unavailable", message: "try again" } };
const fast = { attempts: 3, baseMs: 5, maxMs: 50 };
const client = (url, retries = fast) => new Tock({ baseUrl: url, token: "secret-token", retries });
const spec = { name: "n", type: "ping", delay: "1h", payload: { url: "https://example.com" } };

test("a create retried after a 503 carries the same Idempotency-Key", async () => {
  const f = await fake((r, res, n) => (n === 1 ? answer(res, 503, unavailable) : answer(res, 201, { id: "j1" })));
  const job = await client(f.url).jobs.create(spec);
  assert.equal(job.id, "j1");
  assert.equal(f.requests.length, 2);
  const [first, second] = f.requests.map((r) => r.headers["idempotency-key"]);
  assert.match(first, /^tock-ts-[0-9a-f]{32}$/);
  assert.equal(second, first);
  assert.equal(f.requests[0].headers.authorization, "Bearer secret-token");
  assert.deepEqual(JSON.parse(f.requests[1].body), spec);
});

test("each create gets a key of its own; a caller's key is sent as given", async () => {
  const f = await fake((r, res) => answer(res, 201, { id: "j" }));
  const c = client(f.url);
  await c.jobs.create(spec);
  await c.jobs.create(spec);
  await c.jobs.create(spec, { idempotencyKey: "order-1234-reminder" });
  const keys = f.requests.map((r) => r.headers["idempotency-key"]);
  assert.notEqual(keys[0], keys[1]);
  assert.equal(keys[2], "order-1234-reminder");
});

test("a 503 to a POST that is not safe to repeat is not retried", async () => {
  const f = await fake((r, res) => answer(res, 503, unavailable));
  await assert.rejects(client(f.url).users.create({ name: "u", role: "user" }), (e) => {
    assert.ok(e instanceof TockError);
    assert.equal(e.status, 503);
    assert.equal(e.code, "unavailable");
    return true;
  });
  assert.equal(f.requests.length, 1);
  assert.equal(f.requests[0].headers["idempotency-key"], undefined);
});

test("a 429 is retried after its Retry-After, in seconds or as a date, cut to the longest wait", async () => {
  const past = new Date(Date.now() - 60_000).toUTCString();
  const retryAfter = ["30", past];
  const f = await fake((r, res, n) =>
    n <= 2 ? answer(res, 429, { error: { code: "rate_limited", message: "slow down" } }, { "Retry-After": retryAfter[n - 1] }) : answer(res, 200, { id: "j" }),
  );
  const started = Date.now();
  await client(f.url).jobs.get("j");
  assert.equal(f.requests.length, 3);
  assert.ok(Date.now() - started < 1000, "30 s of Retry-After was cut to maxMs");
});

test("a 409 with Retry-After (the key still held by an earlier try) is retried; one without is a ConflictError", async () => {
  const f = await fake((r, res, n) => {
    if (n === 1) return answer(res, 409, { error: { code: "conflict", message: "in progress" } }, { "Retry-After": "0" });
    if (n === 2) return answer(res, 201, { id: "j" });
    answer(res, 409, { error: { code: "conflict", message: "key held" } });
  });
  const c = client(f.url);
  assert.equal((await c.jobs.create(spec)).id, "j");
  await assert.rejects(c.jobs.create(spec), ConflictError);
  assert.equal(f.requests.length, 3);
});

test("retries are bounded by attempts", async () => {
  const f = await fake((r, res) => answer(res, 503, unavailable));
  await assert.rejects(client(f.url).jobs.list(), (e) => e.status === 503);
  assert.equal(f.requests.length, 3);
});

test("a read without an answer is retried; an unsafe write is not, and the error names the dashboard, not the token", async () => {
  const f = await fake((r, res, n) => (n === 1 ? res.socket.destroy() : answer(res, 200, { jobs: [], next_cursor: "" })));
  const c = client(f.url);
  await c.jobs.list();
  assert.equal(f.requests.length, 2);

  const g = await fake((r, res) => res.socket.destroy());
  await assert.rejects(client(g.url).users.create({ name: "u", role: "user" }), (e) => {
    assert.ok(!(e instanceof TockError));
    assert.ok(e.message.startsWith(`tock: POST ${g.url}/api/v1/users: `), e.message);
    assert.ok(!e.message.includes("secret-token"));
    return true;
  });
  assert.equal(g.requests.length, 1);
});

test("a try that outlasts timeoutMs counts as unanswered", async () => {
  const f = await fake(() => {}); // never answers
  const c = new Tock({ baseUrl: f.url, timeoutMs: 50, retries: { attempts: 2, baseMs: 5 } });
  await assert.rejects(c.jobs.get("j"), /no answer within 50 ms/);
  assert.equal(f.requests.length, 2);
});

test("an abort ends the wait between tries", async () => {
  const f = await fake((r, res) => answer(res, 429, { error: { code: "rate_limited", message: "x" } }, { "Retry-After": "30" }));
  const c = client(f.url, { attempts: 5, maxMs: 60_000 });
  const ac = new AbortController();
  setTimeout(() => ac.abort(), 50);
  await assert.rejects(c.jobs.list({}, { signal: ac.signal }), { name: "AbortError" });
  assert.equal(f.requests.length, 1);
});

test("errors are typed, with code, field and a batch's items", async () => {
  const f = await fake((r, res) => {
    if (r.url === "/api/v1/jobs") return answer(res, 400, { error: { code: "invalid", message: "bad cron", field: "schedule.cron" } });
    if (r.url === "/api/v1/jobs:batch")
      return answer(res, 400, { error: { code: "invalid", message: "1 job is invalid" }, errors: [{ index: 1, field: "payload", message: "required" }] });
    if (r.url.startsWith("/api/v1/jobs/")) return answer(res, 404, { error: { code: "not_found", message: "no such job" } });
    res.writeHead(502, { "Content-Type": "text/html" });
    res.end("<html>Bad Gateway</html>");
  });
  const c = client(f.url, { attempts: 1 });
  await assert.rejects(c.jobs.create(spec), (e) => {
    assert.ok(e instanceof InvalidError && e instanceof TockError && e instanceof Error);
    assert.deepEqual([e.status, e.code, e.field, e.message], [400, "invalid", "schedule.cron", "bad cron"]);
    assert.equal(String(e), "tock: 400 invalid: bad cron (field schedule.cron)");
    return true;
  });
  await assert.rejects(c.jobs.batch({ jobs: [spec, spec] }), (e) => e.items[0].index === 1 && e.items[0].field === "payload");
  await assert.rejects(c.jobs.get("nope"), NotFoundError);
  await assert.rejects(c.me(), (e) => e.status === 502 && e.code === "" && e.message === "<html>Bad Gateway</html>");
});

test("all() follows next_cursor and stops asking on break", async () => {
  const pages = { "": ["a", "b"], c1: [], c2: ["c"] }; // a short page may still have a next cursor
  const next = { "": "c1", c1: "c2", c2: "" };
  const f = await fake((r, res) => {
    const cursor = new URL(r.url, "http://x").searchParams.get("cursor") ?? "";
    answer(res, 200, { jobs: pages[cursor].map((id) => ({ id })), next_cursor: next[cursor] });
  });
  const c = client(f.url);
  const ids = [];
  for await (const job of c.jobs.all({ label: ["team=ops", "tier=1"], limit: 2 })) ids.push(job.id);
  assert.deepEqual(ids, ["a", "b", "c"]);
  assert.equal(f.requests.length, 3);
  assert.equal(f.requests[0].url, "/api/v1/jobs?label=team%3Dops&label=tier%3D1&limit=2");

  for await (const job of c.jobs.all()) {
    assert.equal(job.id, "a");
    break;
  }
  assert.equal(f.requests.length, 4);
});

test("put says whether it created, and escapes the key", async () => {
  const f = await fake((r, res, n) => answer(res, n === 1 ? 201 : 200, { id: "j" }));
  const c = client(f.url);
  assert.equal((await c.jobs.put("nightly report", spec)).created, true);
  assert.equal((await c.jobs.put("nightly report", spec)).created, false);
  assert.equal(f.requests[0].url, "/api/v1/jobs/by-key/nightly%20report");
  assert.match(f.requests[0].headers["idempotency-key"], /^tock-ts-/);
});

test("a backfill carries an Idempotency-Key across its retry; a backfill is named by its id or under its job", async () => {
  const backfill = { id: "b1", job_id: "j1", from: "2035-03-01T00:00:00.000Z", to: "2035-03-01T03:00:00.000Z", status: "running", total: 3 };
  const f = await fake((r, res, n) => {
    if (n === 1) return answer(res, 503, unavailable);
    if (r.url === "/api/v1/jobs/j1/backfills") return answer(res, 200, { backfills: [backfill] });
    answer(res, r.method === "POST" ? 202 : 200, backfill, { Location: "/api/v1/backfills/b1" });
  });
  const c = client(f.url);
  const req = { from: "2035-03-01T00:00:00Z", to: "2035-03-01T03:00:00Z", overlap: "skip" };
  const b = await c.jobs.backfill("j1", req);
  assert.deepEqual([b.id, b.from, b.total], ["b1", "2035-03-01T00:00:00.000Z", 3]);
  const [first, second] = f.requests.map((r) => r.headers["idempotency-key"]);
  assert.match(first, /^tock-ts-[0-9a-f]{32}$/);
  assert.equal(second, first);
  assert.deepEqual(JSON.parse(f.requests[1].body), req);
  assert.deepEqual((await c.jobs.backfills("j1")).map((x) => x.id), ["b1"]);
  await c.backfills.get("b1");
  await c.backfills.cancel("b1", { idempotencyKey: "stop-1" });
  await c.backfills.get("b1", { job: "j1" });
  await c.backfills.cancel("b1", { job: "j1" });
  assert.deepEqual(
    f.requests.slice(1).map((r) => `${r.method} ${r.url}`),
    [
      "POST /api/v1/jobs/j1/backfill",
      "GET /api/v1/jobs/j1/backfills",
      "GET /api/v1/backfills/b1",
      "DELETE /api/v1/backfills/b1",
      "GET /api/v1/jobs/j1/backfills/b1",
      "DELETE /api/v1/jobs/j1/backfills/b1",
    ],
  );
  assert.equal(f.requests[4].headers["idempotency-key"], "stop-1");
});

test("calendars: put replaces as a whole and is retried after a 503 as any PUT; owner and names ride as given", async () => {
  const calendar = {
    name: "de-holidays", timezone: "Europe/Berlin", dates: ["2026-12-25"], ranges: [{ from: "2026-12-24T00:00:00.000Z", to: "2026-12-27T00:00:00.000Z" }],
    rrules: [], created_at: "2026-11-28T10:00:00.000Z", updated_at: "2026-11-28T10:00:00.000Z",
  };
  const f = await fake((r, res, n) => {
    if (n === 1) return answer(res, 503, unavailable);
    if (r.method === "DELETE") return answer(res, 204);
    if (r.url.startsWith("/api/v1/calendars?")) {
      const last = r.url.includes("cursor=c1");
      return answer(res, 200, { calendars: [{ ...calendar, name: last ? "b" : "a" }], next_cursor: last ? "" : "c1" });
    }
    answer(res, n === 2 ? 201 : 200, calendar);
  });
  const c = client(f.url);
  const req = { timezone: "Europe/Berlin", dates: ["2026-12-25"], ranges: [{ from: "2026-12-24T00:00:00+01:00", to: "2026-12-27T00:00:00+01:00" }] };
  const got = await c.calendars.put("de-holidays", req);
  assert.deepEqual([got.name, got.dates, got.ranges[0].to], ["de-holidays", ["2026-12-25"], "2026-12-27T00:00:00.000Z"]);
  assert.deepEqual(JSON.parse(f.requests[1].body), req);
  assert.equal(f.requests[1].headers["idempotency-key"], undefined, "a PUT is safe to repeat: no key unless given");
  await c.calendars.put("de-holidays", req, { owner: "u2", idempotencyKey: "cal-1" });
  assert.equal(f.requests[2].headers["idempotency-key"], "cal-1");
  assert.equal((await c.calendars.get("a b")).name, "de-holidays");
  await c.calendars.get("de-holidays", { owner: "u2" });
  assert.equal((await c.calendars.list({ limit: 1, owner: "u2" })).next_cursor, "c1");
  const names = [];
  for await (const cal of c.calendars.all({ limit: 1 })) names.push(cal.name);
  assert.deepEqual(names, ["a", "b"]);
  assert.equal(await c.calendars.delete("de-holidays"), undefined);
  await c.calendars.delete("de-holidays", { owner: "u2" });
  assert.deepEqual(
    f.requests.map((r) => `${r.method} ${r.url}`),
    [
      "PUT /api/v1/calendars/de-holidays",
      "PUT /api/v1/calendars/de-holidays",
      "PUT /api/v1/calendars/de-holidays?owner=u2",
      "GET /api/v1/calendars/a%20b",
      "GET /api/v1/calendars/de-holidays?owner=u2",
      "GET /api/v1/calendars?limit=1&owner=u2",
      "GET /api/v1/calendars?limit=1",
      "GET /api/v1/calendars?limit=1&cursor=c1",
      "DELETE /api/v1/calendars/de-holidays",
      "DELETE /api/v1/calendars/de-holidays?owner=u2",
    ],
  );
});

test("a calendar's refusals are typed: a 400 names the entry, a delete in use is a ConflictError", async () => {
  const f = await fake((r, res) =>
    r.method === "PUT"
      ? answer(res, 400, { error: { code: "invalid", message: "is not a date such as 2026-12-25", field: "dates[1]" } })
      : answer(res, 409, { error: { code: "conflict", message: "calendar in use by 1 job", field: "name" } }),
  );
  const c = client(f.url);
  await assert.rejects(c.calendars.put("x", { dates: ["2026-12-25", "25.12.2026"] }), (e) => e instanceof InvalidError && e.field === "dates[1]");
  await assert.rejects(c.calendars.delete("x"), (e) => e instanceof ConflictError && e.status === 409);
  assert.equal(f.requests.length, 2, "neither is retried");
});

test("next and preview carry the calendars' skipped occurrences on the array they return", async () => {
  const next = [{ at: "2035-03-02T09:00:00+01:00", utc: "2035-03-02T08:00:00Z" }];
  const skipped = [{ at: "2035-03-01T09:00:00+01:00", utc: "2035-03-01T08:00:00Z", reason: "calendar off: date 2035-03-01" }];
  const f = await fake((r, res) => answer(res, 200, r.url.startsWith("/api/v1/jobs/") ? { next, skipped } : { next }));
  const c = client(f.url);
  const got = await c.jobs.next("j1", 1);
  assert.ok(Array.isArray(got));
  assert.deepEqual(got, next, "compares as the plain array it was");
  assert.deepEqual(got.skipped, skipped);
  assert.deepEqual(Object.keys(got), ["0"], "skipped is not enumerable");
  assert.equal(JSON.stringify(got), JSON.stringify(next));
  const preview = await c.preview({ schedule: { cron: "0 9 * * *" }, skip_calendars: ["off"] });
  assert.deepEqual([preview, preview.skipped], [next, []], "none skipped: an empty list, not undefined");
  assert.deepEqual(JSON.parse(f.requests[1].body).skip_calendars, ["off"]);
});

test("every route of the OpenAPI document has a method", async () => {
  const doc = JSON.parse(readFileSync(new URL("../../go/openapi.json", import.meta.url), "utf8"));
  // One answer fits every route's reader.
  const body = { secret: "s", next: [], keys: [], job_types: [], next_cursor: "" };
  for (const list of ["jobs", "runs", "flows", "users", "entries", "dead_letters", "backfills", "calendars"]) body[list] = [];
  const f = await fake((r, res) => answer(res, 200, body));
  const c = client(f.url);
  const first = (iterator) => iterator.next();
  const calls = [
    c.jobs.create(spec), c.jobs.createDryRun(spec), c.jobs.batch({ jobs: [spec] }), c.jobs.get("j1"), c.jobs.list(), first(c.jobs.all()),
    c.jobs.update("j1", {}), c.jobs.updateDryRun("j1", {}), c.jobs.cancel("j1"), c.jobs.purge("j1"), c.jobs.pause("j1"), c.jobs.resume("j1"),
    c.jobs.trigger("j1"), c.jobs.retry("j1"), c.jobs.abort("j1"), c.jobs.next("j1", 3), c.jobs.runs("j1"), first(c.jobs.allRuns("j1")),
    c.jobs.put("k1", spec), c.jobs.putDryRun("k1", spec), c.jobs.getByKey("k1"), c.jobs.cancelByKey("k1"),
    c.jobs.bulk({ action: "pause", ids: ["j1"] }), c.jobs.counts(),
    c.jobs.backfill("j1", { from: "2035-03-01T00:00:00Z", to: "2035-03-01T03:00:00Z" }), c.jobs.backfills("j1"),
    c.backfills.get("b1"), c.backfills.cancel("b1"), c.backfills.get("b1", { job: "j1" }), c.backfills.cancel("b1", { job: "j1" }),
    c.runs.list(), first(c.runs.all()), c.runs.stats(),
    c.deadLetters.list(), first(c.deadLetters.all()), c.deadLetters.get("d1"), c.deadLetters.replay("d1"), c.deadLetters.purge("d1"),
    c.deadLetters.replayMany({ ids: ["d1"] }), c.deadLetters.purgeMany({ ids: ["d1"] }),
    c.calendars.list(), first(c.calendars.all()), c.calendars.get("c1"), c.calendars.put("c1", {}), c.calendars.delete("c1"),
    c.flows.list(), first(c.flows.all()), c.flows.get("f1"), c.flows.put("f1", {}), c.flows.pause("f1"), c.flows.resume("f1"), c.flows.delete("f1"),
    c.users.create({ name: "u", role: "user" }), c.users.list(), first(c.users.all()), c.users.get("u1"), c.users.update("u1", {}),
    c.users.disable("u1"), c.users.enable("u1"), c.users.erase("u1"), c.users.jobs("u1"), first(c.users.allJobs("u1")),
    c.keys.create("u1", { name: "k" }), c.keys.list("u1"), c.keys.revoke("k1"),
    c.audit.list(), first(c.audit.all()),
    c.me(), c.signingSecret(), c.rotateSigningSecret(), c.jobTypes(), c.preview({ delay: "1h" }), c.system(), c.health(), c.ready(), c.openapi(),
  ];
  await Promise.all(calls);

  const routes = Object.entries(doc.paths).flatMap(([template, ops]) =>
    Object.keys(ops)
      .filter((m) => ["get", "post", "put", "patch", "delete"].includes(m))
      .map((m) => ({ route: `${m.toUpperCase()} ${template}`, re: new RegExp(`^${m.toUpperCase()} ${template.replace(/\{[^}]+\}/g, "[^/]+")}$`) })),
  );
  const called = new Set(f.requests.map((r) => `${r.method} ${new URL(r.url, f.url).pathname}`));
  const missing = routes.filter(({ re }) => ![...called].some((c) => re.test(c))).map(({ route }) => route);
  assert.deepEqual(missing, [], "routes that no method calls: add a method to the client, and a call to this test");
});

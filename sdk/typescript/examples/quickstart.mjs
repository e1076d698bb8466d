import { Tock, TockError } from "@tockhq/tock";

const tock = new Tock({ baseUrl: process.env.TOCK_URL, token: process.env.TOCK_TOKEN });
const ping = { type: "ping", payload: { url: "https://example.com/health" }, labels: { app: "quickstart" } };
await tock.jobs.create({ ...ping, name: "hello", delay: "1h" }); // retried safely: never two jobs
await tock.jobs.put("nightly", { ...ping, name: "nightly", schedule: { cron: "0 3 * * *" } }); // upsert by key
for await (const job of tock.jobs.all({ label: ["app=quickstart"] })) console.log(job.name, job.status);
try { await tock.jobs.create({ ...ping, name: "bad", schedule: { cron: "61 * * * *" } }); }
catch (e) { if (e instanceof TockError) console.log(e.status, e.code, e.field); else throw e; }

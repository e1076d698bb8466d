import { path, type CallOptions, type Transport, type WriteOptions } from "./http.js";
import { paginate } from "./page.js";
import type {
  Aborted,
  Backfill,
  BackfillList,
  BackfillRequest,
  BatchCreated,
  BatchRequest,
  BulkRequest,
  BulkResult,
  DryRun,
  Job,
  JobCounts,
  JobFilter,
  JobList,
  JobPatch,
  JobSpec,
  Occurrences,
  PageQuery,
  Retried,
  RetryRequest,
  Run,
  RunList,
  Triggered,
  UpcomingList,
} from "./types.js";

const jobs = "/api/v1/jobs";
const byKey = "/api/v1/jobs/by-key";

/** The routes under /api/v1/jobs. */
export class Jobs {
  constructor(private readonly t: Transport) {}

  /**
   * Creates a job (POST /api/v1/jobs). It carries an Idempotency-Key, random
   * unless given, the same on every retry, so a retried create never makes
   * two jobs. A one-off job with a `debounce` whose key a job of the owner's
   * that has not started holds creates nothing: that job is returned, having
   * taken the spec's payload and timing.
   */
  create(spec: JobSpec, options?: WriteOptions): Promise<Job> {
    return this.t.json({ method: "POST", path: jobs, body: spec, create: true, options });
  }

  /** Asks what create would do, and creates nothing (`?dry_run=true`). */
  createDryRun(spec: JobSpec, options?: CallOptions): Promise<DryRun> {
    return this.t.json({ method: "POST", path: jobs, query: { dry_run: true }, body: spec, readOnly: true, options });
  }

  /**
   * Creates up to 10,000 jobs in one transaction (POST /api/v1/jobs:batch);
   * any invalid job refuses them all with an InvalidError whose `items` say which.
   */
  batch(req: BatchRequest, options?: WriteOptions): Promise<BatchCreated> {
    return this.t.json({ method: "POST", path: `${jobs}:batch`, body: req, create: true, options });
  }

  /** Returns one job. */
  get(id: string, options?: CallOptions): Promise<Job> {
    return this.t.json({ method: "GET", path: path(jobs, id), options });
  }

  /** Returns one page of jobs, newest first. */
  list(filter: JobFilter = {}, options?: CallOptions): Promise<JobList> {
    return this.t.json({ method: "GET", path: jobs, query: filter, options });
  }

  /** Yields every job the filter matches, page after page, from `filter.cursor` on. */
  all(filter: JobFilter = {}, options?: CallOptions): AsyncGenerator<Job, void, undefined> {
    return paginate(filter.cursor, async (cursor) => {
      const page = await this.list({ ...filter, cursor }, options);
      return { items: page.jobs, next: page.next_cursor };
    });
  }

  /** Changes the fields the patch sets, keeping the job's id (PATCH); a field given empty returns to its default. */
  update(id: string, patch: JobPatch, options?: WriteOptions): Promise<Job> {
    return this.t.json({ method: "PATCH", path: path(jobs, id), body: patch, options });
  }

  /** Asks what update would change, and changes nothing. */
  updateDryRun(id: string, patch: JobPatch, options?: CallOptions): Promise<DryRun> {
    return this.t.json({ method: "PATCH", path: path(jobs, id), query: { dry_run: true }, body: patch, readOnly: true, options });
  }

  /** Cancels a job (DELETE): a one-off job that has not started, a recurring job at any time. */
  async cancel(id: string, options?: WriteOptions): Promise<void> {
    await this.t.send({ method: "DELETE", path: path(jobs, id), options });
  }

  /** Removes a finished job now, with its runs and labels (DELETE ?purge=true); a job that can still run is a ConflictError. */
  async purge(id: string, options?: WriteOptions): Promise<void> {
    await this.t.send({ method: "DELETE", path: path(jobs, id), query: { purge: true }, options });
  }

  /** Stops a job from running until resume. */
  pause(id: string, options?: WriteOptions): Promise<Job> {
    return this.t.json({ method: "POST", path: path(jobs, id, "pause"), options });
  }

  /** Lets a paused job run again. */
  resume(id: string, options?: WriteOptions): Promise<Job> {
    return this.t.json({ method: "POST", path: path(jobs, id, "resume"), options });
  }

  /** Runs the job once now, besides its schedule. */
  trigger(id: string, options?: WriteOptions): Promise<Triggered> {
    return this.t.json({ method: "POST", path: path(jobs, id, "trigger"), options });
  }

  /** Queues one more attempt, now, of a permanently failed occurrence: `scheduled_for`'s, or the latest. */
  retry(id: string, req: RetryRequest = {}, options?: WriteOptions): Promise<Retried> {
    return this.t.json({ method: "POST", path: path(jobs, id, "retry"), body: req, options });
  }

  /** Stops the job's running attempts, recorded aborted and never retried; a one-off job is cancelled with them. */
  abort(id: string, options?: WriteOptions): Promise<Aborted> {
    return this.t.json({ method: "POST", path: path(jobs, id, "abort"), options });
  }

  /**
   * Runs the occurrences of a scheduled recurring job whose nominal times fall
   * in the past range [`from`, `to`) and that never ran (POST
   * /api/v1/jobs/{id}/backfill); the scheduler queues them a few at a time.
   * It returns at once with the backfill running: follow it with
   * backfills.get, stop it with backfills.cancel. It carries an
   * Idempotency-Key like a create, so a retried call starts one backfill.
   */
  backfill(id: string, req: BackfillRequest, options?: WriteOptions): Promise<Backfill> {
    return this.t.json({ method: "POST", path: path(jobs, id, "backfill"), body: req, create: true, options });
  }

  /** Returns the job's backfills, newest first (one bounded list, not pages). */
  async backfills(id: string, options?: CallOptions): Promise<Backfill[]> {
    const out = await this.t.json<BackfillList>({ method: "GET", path: path(jobs, id, "backfills"), options });
    return out.backfills;
  }

  /**
   * Returns up to n (1 to 100; the server's 10 when left out) coming
   * occurrences of the job; on the array, `skipped` lists those before the
   * last that the job's calendars (`skip_calendars`) leave out, and why.
   */
  async next(id: string, n?: number, options?: CallOptions): Promise<Occurrences> {
    return occurrences(await this.t.json<UpcomingList>({ method: "GET", path: path(jobs, id, "next"), query: { n }, options }));
  }

  /** Returns one page of the job's attempts, newest first. */
  runs(id: string, page: PageQuery = {}, options?: CallOptions): Promise<RunList> {
    return this.t.json({ method: "GET", path: path(jobs, id, "runs"), query: page, options });
  }

  /** Yields every attempt of the job, newest first. */
  allRuns(id: string, options?: CallOptions): AsyncGenerator<Run, void, undefined> {
    return paginate(undefined, async (cursor) => {
      const page = await this.runs(id, { cursor }, options);
      return { items: page.runs, next: page.next_cursor };
    });
  }

  /**
   * Creates the job the spec describes under key (`created` true), or
   * replaces the definition of the live job that holds the key in place,
   * keeping its id (PUT /api/v1/jobs/by-key/{key}). `spec.key` may be left
   * out or must equal key.
   */
  async put(key: string, spec: JobSpec, options?: WriteOptions): Promise<{ job: Job; created: boolean }> {
    const res = await this.t.send<Job>({ method: "PUT", path: path(byKey, key), body: spec, create: true, options });
    return { job: res.body, created: res.status === 201 };
  }

  /** Asks what put would do (create, update with the changes, or unchanged), and does nothing. */
  putDryRun(key: string, spec: JobSpec, options?: CallOptions): Promise<DryRun> {
    return this.t.json({ method: "PUT", path: path(byKey, key), query: { dry_run: true }, body: spec, readOnly: true, options });
  }

  /** Returns the newest job that took key, finished or not; `owner` (administrators) looks among another user's jobs. */
  getByKey(key: string, options?: CallOptions & { owner?: string }): Promise<Job> {
    return this.t.json({ method: "GET", path: path(byKey, key), query: { owner: options?.owner }, options });
  }

  /** Cancels the live job that holds key. */
  async cancelByKey(key: string, options?: WriteOptions & { owner?: string }): Promise<void> {
    await this.t.send({ method: "DELETE", path: path(byKey, key), query: { owner: options?.owner }, options });
  }

  /**
   * Applies one action to many jobs, named by `ids` or chosen by `filter`
   * (POST /api/v1/jobs:bulk); `dry_run` only counts them. It carries an
   * Idempotency-Key like a create, so a retried bulk changes nothing twice.
   */
  bulk(req: BulkRequest, options?: WriteOptions): Promise<BulkResult> {
    return this.t.json({ method: "POST", path: `${jobs}:bulk`, body: req, create: true, options });
  }

  /** Counts the caller's jobs by status (GET /api/v1/jobs:counts); `owner` (administrators) counts one user's. */
  counts(options?: CallOptions & { owner?: string }): Promise<JobCounts> {
    return this.t.json({ method: "GET", path: `${jobs}:counts`, query: { owner: options?.owner }, options });
  }
}

/** The occurrences of an answer of GET /api/v1/jobs/{id}/next or POST /api/v1/schedules/preview, its `skipped` on them. */
export function occurrences(list: UpcomingList): Occurrences {
  return Object.defineProperty([...list.next], "skipped", { value: list.skipped ?? [], enumerable: false }) as Occurrences;
}

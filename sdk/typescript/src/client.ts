import { Audit } from "./audit.js";
import { Backfills } from "./backfills.js";
import { Calendars } from "./calendars.js";
import { DeadLetters } from "./deadletters.js";
import { Flows } from "./flows.js";
import { Transport, type CallOptions, type WriteOptions } from "./http.js";
import { Jobs, occurrences } from "./jobs.js";
import { RetryPolicy, type RetryOptions } from "./retry.js";
import { Runs } from "./runs.js";
import type {
  Health,
  JobType,
  Occurrences,
  PreviewRequest,
  Readiness,
  SigningSecret,
  SigningSecretRotation,
  System,
  UpcomingList,
  User,
} from "./types.js";
import { Keys, Users } from "./users.js";

export interface TockOptions {
  /** The dashboard's address, such as "https://tock.example.com". */
  baseUrl: string;
  /** The admin token or an API key, sent as `Authorization: Bearer <token>`. */
  token?: string;
  /** Bounds the retries of a 429, a 503, a 409 with Retry-After, or a try without an answer. */
  retries?: RetryOptions;
  /** How long one try may take before it counts as unanswered (default 30 s). */
  timeoutMs?: number;
  /** The User-Agent header of every request (default "tock-ts"; browsers may not send it). */
  userAgent?: string;
  /** The fetch to send requests with (default the global one): for proxies, tracing or tests. */
  fetch?: typeof fetch;
}

/**
 * A client of one tock dashboard as one caller: every route of /api/v1,
 * grouped by what it acts on, with typed errors (TockError), retries that
 * never create twice, and async iterators over pages.
 *
 *     const tock = new Tock({ baseUrl: "https://tock.example.com", token });
 *     const job = await tock.jobs.create({ name: "report", type: "ping", delay: "1h",
 *       payload: { url: "https://example.com/health" } });
 */
export class Tock {
  readonly jobs: Jobs;
  readonly runs: Runs;
  readonly deadLetters: DeadLetters;
  readonly flows: Flows;
  readonly backfills: Backfills;
  readonly calendars: Calendars;
  readonly users: Users;
  readonly keys: Keys;
  readonly audit: Audit;
  private readonly t: Transport;

  constructor(options: TockOptions) {
    this.t = new Transport({
      baseUrl: options.baseUrl.replace(/\/+$/, ""),
      token: options.token,
      userAgent: options.userAgent ?? "tock-ts",
      timeoutMs: options.timeoutMs ?? 30_000,
      retry: new RetryPolicy(options.retries),
      // Called through a closure: a fetch called as a method of another object throws in browsers.
      fetch: options.fetch ?? ((input, init) => fetch(input, init)),
    });
    this.jobs = new Jobs(this.t);
    this.runs = new Runs(this.t);
    this.deadLetters = new DeadLetters(this.t);
    this.flows = new Flows(this.t);
    this.backfills = new Backfills(this.t);
    this.calendars = new Calendars(this.t);
    this.users = new Users(this.t);
    this.keys = new Keys(this.t);
    this.audit = new Audit(this.t);
  }

  /** Returns the caller, with their scopes and the limits that hold for them. */
  me(options?: CallOptions): Promise<User> {
    return this.t.json({ method: "GET", path: "/api/v1/me", options });
  }

  /** Returns the caller's webhook signing secret, and until when the previous one still signs. */
  signingSecret(options?: CallOptions): Promise<SigningSecret> {
    return this.t.json({ method: "GET", path: "/api/v1/signing-secret", options });
  }

  /**
   * Replaces the caller's signing secret; the previous one keeps signing for
   * `grace` (a Go duration; the server's default is 24h). Retried safely: it
   * carries an Idempotency-Key.
   */
  async rotateSigningSecret(req: SigningSecretRotation = {}, options?: WriteOptions): Promise<SigningSecret> {
    const s = await this.t.json<SigningSecret>({ method: "POST", path: "/api/v1/signing-secret:rotate", body: req, create: true, options });
    // A retry whose first try rotated but lost its answer gets that answer
    // replayed, which never repeats the secret, only its fingerprint: read it.
    return s.secret.startsWith("secret:sha256:") ? this.signingSecret({ signal: options?.signal }) : s;
  }

  /** Lists the job types the server runs, each with a summary and an example payload. */
  async jobTypes(options?: CallOptions): Promise<JobType[]> {
    const out = await this.t.json<{ job_types: JobType[] }>({ method: "GET", path: "/api/v1/job-types", options });
    return out.job_types;
  }

  /**
   * Lists the next occurrences of a timing, creating nothing; on the array,
   * `skipped` lists those before the last that the calendars named in
   * `skip_calendars` leave out, and why.
   */
  async preview(req: PreviewRequest, options?: CallOptions): Promise<Occurrences> {
    return occurrences(await this.t.json<UpcomingList>({ method: "POST", path: "/api/v1/schedules/preview", body: req, readOnly: true, options }));
  }

  /** Returns the queue's state (administrators): due set, stream, loader lock, live schedulers and workers. */
  system(options?: CallOptions): Promise<System> {
    return this.t.json({ method: "GET", path: "/api/v1/system", options });
  }

  /** Says whether the dashboard is alive (GET /healthz). */
  health(options?: CallOptions): Promise<Health> {
    return this.t.json({ method: "GET", path: "/healthz", options });
  }

  /** Says whether the dashboard's Postgres and Redis answer (GET /readyz); a 503 is retried, then a TockError. */
  ready(options?: CallOptions): Promise<Readiness> {
    return this.t.json({ method: "GET", path: "/readyz", options });
  }

  /** Returns the API's OpenAPI 3 document. */
  openapi(options?: CallOptions): Promise<Record<string, unknown>> {
    return this.t.json({ method: "GET", path: "/api/v1/openapi.json", options });
  }
}

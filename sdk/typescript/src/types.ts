// Names for the generated types (schema.gen.ts, from the OpenAPI document),
// so that callers write Job rather than components["schemas"]["Job"]. Bodies,
// answers and query parameters keep the API's own field names (snake_case).
import type { components, operations } from "./schema.gen.js";

export type { components, operations, paths } from "./schema.gen.js";

type Schemas = components["schemas"];

/** The query parameters of an operation of the OpenAPI document. */
export type Query<Op extends keyof operations> = NonNullable<operations[Op]["parameters"]["query"]>;

export type Aborted = Schemas["Aborted"];
export type AuditEntry = Schemas["AuditEntry"];
export type AuditList = Schemas["AuditList"];
export type Backfill = Schemas["Backfill"];
export type BackfillList = Schemas["BackfillList"];
export type BackfillRequest = Schemas["BackfillRequest"];
export type BatchCreated = Schemas["BatchCreated"];
export type BatchRequest = Schemas["BatchRequest"];
export type BulkRequest = Schemas["BulkRequest"];
export type BulkResult = Schemas["BulkResult"];
export type Calendar = Schemas["Calendar"];
export type CalendarList = Schemas["CalendarList"];
export type CalendarRange = Schemas["CalendarRange"];
export type CalendarRequest = Schemas["CalendarRequest"];
export type DeadLetterList = Schemas["DeadLetterList"];
export type DeadLetterRequest = Schemas["DeadLetterRequest"];
export type DeadLetterResult = Schemas["DeadLetterResult"];
export type DryRun = Schemas["DryRun"];
export type Erased = Schemas["Erased"];
export type Flow = Schemas["Flow"];
export type FlowList = Schemas["FlowList"];
export type FlowRequest = Schemas["FlowRequest"];
export type Health = Schemas["Health"];
export type Job = Schemas["Job"];
export type JobCounts = Schemas["JobCounts"];
export type JobList = Schemas["JobList"];
export type JobPatch = Schemas["JobPatch"];
export type JobSpec = Schemas["JobSpec"];
export type JobType = Schemas["JobType"];
export type Key = Schemas["Key"];
export type KeyCreate = Schemas["KeyCreate"];
/** A key just created: `key` holds the whole key, shown this once. */
export type NewKey = Key & { key: string };
export type Notify = Schemas["Notify"];
export type PreviewRequest = Schemas["PreviewRequest"];
export type Readiness = Schemas["Readiness"];
export type Retried = Schemas["Retried"];
export type RetryRequest = Schemas["RetryRequest"];
export type Run = Schemas["Run"];
export type RunList = Schemas["RunList"];
export type RunStats = Schemas["RunStats"];
export type Schedule = Schemas["Schedule"];
export type SigningSecret = Schemas["SigningSecret"];
export type SkippedUpcoming = Schemas["SkippedUpcoming"];
export type SigningSecretRotation = Schemas["SigningSecretRotation"];
export type System = Schemas["System"];
export type Triggered = Schemas["Triggered"];
export type Upcoming = Schemas["Upcoming"];
export type UpcomingList = Schemas["UpcomingList"];
/**
 * What jobs.next and preview return: the occurrences that will run, earliest
 * first, as an array; and, on it, `skipped`, those among them that the
 * calendars (`skip_calendars`) leave out, with the reason (empty when none).
 * `skipped` is not enumerable, so the array compares, spreads and prints as
 * the plain array of occurrences it always was.
 */
export type Occurrences = Upcoming[] & { readonly skipped: SkippedUpcoming[] };
export type User = Schemas["User"];
export type UserCreate = Schemas["UserCreate"];
export type UserList = Schemas["UserList"];
export type UserUpdate = Schemas["UserUpdate"];
export type WebhookPayload = Schemas["WebhookPayload"];
export type PingPayload = Schemas["PingPayload"];
export type SlackPayload = Schemas["SlackPayload"];
export type EmailPayload = Schemas["EmailPayload"];

/** An invalid job of a refused batch: its position in `jobs`, and why. */
export type ItemError = Schemas["BatchInvalid"]["errors"][number];

/** Chooses the jobs of jobs.list and jobs.all; `label` holds `key=value` strings. */
export type JobFilter = Query<"listJobs">;
/** Chooses the runs of runs.list and runs.all. */
export type RunFilter = Query<"searchRuns">;
/** Chooses the window and grouping of runs.stats. */
export type StatsFilter = Query<"runStats">;
/** Chooses the dead letters of deadLetters.list and deadLetters.all. */
export type DeadLetterFilter = Query<"listDeadLetters">;
/** Chooses the entries of audit.list and audit.all. */
export type AuditFilter = Query<"listAudit">;
/** Chooses the calendars of calendars.list and calendars.all; `owner` (administrators) lists another user's. */
export type CalendarFilter = Query<"listCalendars">;
/** Chooses the flow keys of flows.list and flows.all. */
export type FlowFilter = Query<"listFlows">;
/** Chooses the jobs of users.jobs and users.allJobs. */
export type UserJobFilter = Query<"listUserJobs">;
/** A page of a listing that has no filters. */
export type PageQuery = { limit?: number; cursor?: string };

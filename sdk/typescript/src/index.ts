// @tockhq/tock: the TypeScript client of tock's HTTP API (/api/v1).
export { Tock, type TockOptions } from "./client.js";
export {
  TockError,
  InvalidError,
  UnauthorizedError,
  ForbiddenError,
  NotFoundError,
  ConflictError,
  RateLimitedError,
} from "./errors.js";
export type { CallOptions, WriteOptions } from "./http.js";
export type { RetryOptions } from "./retry.js";
export type { Jobs } from "./jobs.js";
export type { Runs } from "./runs.js";
export type { DeadLetters } from "./deadletters.js";
export type { Flows } from "./flows.js";
export type { Backfills, BackfillOptions } from "./backfills.js";
export type { Calendars, CalendarOptions } from "./calendars.js";
export type { Users, Keys } from "./users.js";
export type { Audit } from "./audit.js";
export type * from "./types.js";

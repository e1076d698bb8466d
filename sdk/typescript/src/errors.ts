import type { ItemError } from "./types.js";

/**
 * An answer of the API that is not a success: its HTTP status and the body's
 * `{"error": {"code", "message", "field"}}`. `field` names the offending input
 * of a 400. The common statuses have subclasses (NotFoundError, InvalidError…)
 * to tell apart with `instanceof`; `code` tells the rest.
 */
export class TockError extends Error {
  /** The HTTP status. */
  readonly status: number;
  /** The API's reason (`invalid`, `not_found`, `quota_exceeded`…); "" when the body was not the API's (a proxy's page). */
  readonly code: string;
  /** The input at fault (`schedule.cron`, `payload.url`, `limit`), when there is one. */
  readonly field: string | undefined;
  /** The invalid jobs of a refused batch (POST /api/v1/jobs:batch), one per job. */
  readonly items: ItemError[];
  /** The answer's Retry-After in milliseconds, when it had one: a 429 that outlasted the retries. */
  readonly retryAfterMs: number | undefined;

  constructor(init: { status: number; code: string; message: string; field?: string; items?: ItemError[]; retryAfterMs?: number }) {
    super(init.message);
    this.name = new.target.name;
    this.status = init.status;
    this.code = init.code;
    this.field = init.field;
    this.items = init.items ?? [];
    this.retryAfterMs = init.retryAfterMs;
  }

  /** `tock: 400 invalid: <message> (field schedule.cron)`, as the Go SDK prints it. */
  override toString(): string {
    let s = `tock: ${this.status}`;
    if (this.code) s += ` ${this.code}`;
    if (this.message) s += `: ${this.message}`;
    if (this.field) s += ` (field ${this.field})`;
    return s;
  }
}

/** 400: the request was refused as it is; `field` names the input at fault. */
export class InvalidError extends TockError {}
/** 401: the token is missing, unknown, expired or revoked. */
export class UnauthorizedError extends TockError {}
/** 403: the route needs an administrator, or the key lacks a scope. */
export class ForbiddenError extends TockError {}
/** 404: no such job, run, user or key, or one of another user. */
export class NotFoundError extends TockError {}
/** 409: the job's state does not allow the action, or a live job already holds the key. */
export class ConflictError extends TockError {}
/** 429: a rate that outlasted the retries, or a quota (`quota_exceeded`), which no retry helps. */
export class RateLimitedError extends TockError {}

const byStatus: Record<number, typeof TockError> = {
  400: InvalidError,
  401: UnauthorizedError,
  403: ForbiddenError,
  404: NotFoundError,
  409: ConflictError,
  429: RateLimitedError,
};

/**
 * Reads an error answer. A refused batch's body is every error body with the
 * invalid jobs added, so one shape reads either; a body that is not the API's
 * leaves `code` empty and its start in the message.
 */
export function errorFromAnswer(status: number, statusText: string, body: string, retryAfterMs: number | undefined): TockError {
  const Class = byStatus[status] ?? TockError;
  try {
    const wire = JSON.parse(body) as { error?: { code?: string; message?: string; field?: string }; errors?: ItemError[] };
    if (wire.error?.code) {
      return new Class({
        status,
        code: wire.error.code,
        message: wire.error.message ?? "",
        field: wire.error.field,
        items: wire.errors,
        retryAfterMs,
      });
    }
  } catch {
    // Not JSON: a proxy's page, say. Its start is the message.
  }
  let message = body.trim();
  if (message.length > 200) message = message.slice(0, 200) + "…";
  return new Class({ status, code: "", message: message || statusText || `HTTP ${status}`, retryAfterMs });
}

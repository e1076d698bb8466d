import { path, type CallOptions, type Transport, type WriteOptions } from "./http.js";
import type { Backfill } from "./types.js";

const backfills = "/api/v1/backfills";

/** Names a backfill under its job's route instead (/api/v1/jobs/{job}/backfills/{id}): 404 unless it is the job's. */
export interface BackfillOptions {
  job?: string;
}

/**
 * The routes over backfills: the progress of a past range of a recurring
 * job's schedule that jobs.backfill started, and its cancellation. A
 * backfill is named by its own id, whichever job it backfills.
 */
export class Backfills {
  constructor(private readonly t: Transport) {}

  /** Returns one backfill with its progress. */
  get(id: string, options?: CallOptions & BackfillOptions): Promise<Backfill> {
    return this.t.json({ method: "GET", path: backfillPath(id, options?.job), options });
  }

  /**
   * Stops a running backfill: nothing more of it is queued and none of its
   * occurrences starts afterwards (one running ends as it would). Returns the
   * backfill, cancelled; one cancelled already comes back as it is, and one
   * that completed is a ConflictError.
   */
  cancel(id: string, options?: WriteOptions & BackfillOptions): Promise<Backfill> {
    return this.t.json({ method: "DELETE", path: backfillPath(id, options?.job), options });
  }
}

function backfillPath(id: string, job: string | undefined): string {
  return job === undefined ? path(backfills, id) : path("/api/v1/jobs", job, "backfills", id);
}

import type { CallOptions, Transport } from "./http.js";
import { paginate } from "./page.js";
import type { Run, RunFilter, RunList, RunStats, StatsFilter } from "./types.js";

/** The routes over runs across jobs: /api/v1/runs and /api/v1/runs:stats. */
export class Runs {
  constructor(private readonly t: Transport) {}

  /**
   * Returns one page of the runs of the caller's jobs (an administrator's:
   * everyone's) that the filter matches, newest first. A page may be short
   * and still have a next cursor.
   */
  list(filter: RunFilter = {}, options?: CallOptions): Promise<RunList> {
    return this.t.json({ method: "GET", path: "/api/v1/runs", query: filter, options });
  }

  /** Yields every run the filter matches, page after page, from `filter.cursor` on. */
  all(filter: RunFilter = {}, options?: CallOptions): AsyncGenerator<Run, void, undefined> {
    return paginate(filter.cursor, async (cursor) => {
      const page = await this.list({ ...filter, cursor }, options);
      return { items: page.runs, next: page.next_cursor };
    });
  }

  /** Counts runs in a window of at most 31 days (default the last 24 hours), grouped by status, type or job. */
  stats(filter: StatsFilter = {}, options?: CallOptions): Promise<RunStats> {
    return this.t.json({ method: "GET", path: "/api/v1/runs:stats", query: filter, options });
  }
}

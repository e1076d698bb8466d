import type { CallOptions, Transport } from "./http.js";
import { paginate } from "./page.js";
import type { AuditEntry, AuditFilter, AuditList } from "./types.js";

/** The audit log (administrators), newest first. */
export class Audit {
  constructor(private readonly t: Transport) {}

  /** Returns one page of the entries the filter matches. */
  list(filter: AuditFilter = {}, options?: CallOptions): Promise<AuditList> {
    return this.t.json({ method: "GET", path: "/api/v1/audit", query: filter, options });
  }

  /** Yields every entry the filter matches, page after page. */
  all(filter: AuditFilter = {}, options?: CallOptions): AsyncGenerator<AuditEntry, void, undefined> {
    return paginate(filter.cursor, async (cursor) => {
      const page = await this.list({ ...filter, cursor }, options);
      return { items: page.entries, next: page.next_cursor };
    });
  }
}

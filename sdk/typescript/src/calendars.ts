import { path, type CallOptions, type Transport, type WriteOptions } from "./http.js";
import { paginate } from "./page.js";
import type { Calendar, CalendarFilter, CalendarList, CalendarRequest } from "./types.js";

const calendars = "/api/v1/calendars";

/** Whose calendar a call acts on: `owner` (administrators) names another user's, by id; 403 for anyone else. */
export interface CalendarOptions {
  owner?: string;
}

/**
 * The routes over calendars: an owner's named sets of dates, time ranges and
 * RRULEs whose days the recurring jobs that name them in `skip_calendars` do
 * not run on (each such occurrence is recorded skipped, and previews list it
 * in `skipped`).
 */
export class Calendars {
  constructor(private readonly t: Transport) {}

  /** Returns one page of the caller's calendars (the filter's `owner`'s for an administrator) in name order. */
  list(filter: CalendarFilter = {}, options?: CallOptions): Promise<CalendarList> {
    return this.t.json({ method: "GET", path: calendars, query: filter, options });
  }

  /** Yields every calendar of the caller's (the filter's `owner`'s), page after page. */
  all(filter: CalendarFilter = {}, options?: CallOptions): AsyncGenerator<Calendar, void, undefined> {
    return paginate(filter.cursor, async (cursor) => {
      const page = await this.list({ ...filter, cursor }, options);
      return { items: page.calendars, next: page.next_cursor };
    });
  }

  /** Returns one calendar. */
  get(name: string, options?: CallOptions & CalendarOptions): Promise<Calendar> {
    return this.t.json({ method: "GET", path: path(calendars, name), query: { owner: options?.owner }, options });
  }

  /**
   * Sets a calendar as a whole (a list left out is empty), creating it if
   * new: its `timezone` (default UTC), whole `dates` (`YYYY-MM-DD`), `ranges`
   * of instants [from, to) and `rrules` (RRULE bodies whose days it skips).
   * A bad entry is an InvalidError naming it (`dates[1]`, `ranges[0].to`,
   * `rrules[0]`, `timezone`); a 1,001st calendar is a ConflictError. It holds
   * from the next occurrence a worker starts.
   */
  put(name: string, req: CalendarRequest, options?: WriteOptions & CalendarOptions): Promise<Calendar> {
    return this.t.json({ method: "PUT", path: path(calendars, name), query: { owner: options?.owner }, body: req, options });
  }

  /** Deletes a calendar; while a job that can still run names it in `skip_calendars`, a ConflictError. */
  async delete(name: string, options?: WriteOptions & CalendarOptions): Promise<void> {
    await this.t.send({ method: "DELETE", path: path(calendars, name), query: { owner: options?.owner }, options });
  }
}

import { path, type CallOptions, type Transport, type WriteOptions } from "./http.js";
import { paginate } from "./page.js";
import type { DeadLetterFilter, DeadLetterList, DeadLetterRequest, DeadLetterResult, Retried, Run } from "./types.js";

const deadLetters = "/api/v1/dead-letters";

/**
 * The routes over dead letters: occurrences whose last attempt ended
 * permanently_failed that nobody replayed or purged since. A dead letter is
 * named by that attempt's run id.
 */
export class DeadLetters {
  constructor(private readonly t: Transport) {}

  /** Returns one page of the caller's dead letters (an administrator's: everyone's), newest first. */
  list(filter: DeadLetterFilter = {}, options?: CallOptions): Promise<DeadLetterList> {
    return this.t.json({ method: "GET", path: deadLetters, query: filter, options });
  }

  /** Yields every dead letter the filter matches, page after page. */
  all(filter: DeadLetterFilter = {}, options?: CallOptions): AsyncGenerator<Run, void, undefined> {
    return paginate(filter.cursor, async (cursor) => {
      const page = await this.list({ ...filter, cursor }, options);
      return { items: page.dead_letters, next: page.next_cursor };
    });
  }

  /** Returns one dead letter: the attempt that ended its occurrence. */
  get(id: string, options?: CallOptions): Promise<Run> {
    return this.t.json({ method: "GET", path: path(deadLetters, id), options });
  }

  /** Gives the occurrence one more attempt, now, under its own idempotency key, as jobs.retry does. */
  replay(id: string, options?: WriteOptions): Promise<Retried> {
    return this.t.json({ method: "POST", path: path(deadLetters, id, "replay"), options });
  }

  /** Takes the dead letter out of the list; its run stays in its job's history until run retention drops it. */
  async purge(id: string, options?: WriteOptions): Promise<void> {
    await this.t.send({ method: "DELETE", path: path(deadLetters, id), options });
  }

  /**
   * Replays the dead letters the request names or selects, up to 10,000;
   * `dry_run` only counts them. It carries an Idempotency-Key like a create,
   * so a retried call replays nothing twice.
   */
  replayMany(req: DeadLetterRequest, options?: WriteOptions): Promise<DeadLetterResult> {
    return this.t.json({ method: "POST", path: `${deadLetters}:replay`, body: req, create: true, options });
  }

  /** Purges the dead letters the request names or selects, up to 10,000; `dry_run` only counts them. */
  purgeMany(req: DeadLetterRequest, options?: WriteOptions): Promise<DeadLetterResult> {
    return this.t.json({ method: "POST", path: `${deadLetters}:purge`, body: req, create: true, options });
  }
}

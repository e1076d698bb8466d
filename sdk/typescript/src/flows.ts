import { path, type CallOptions, type Transport, type WriteOptions } from "./http.js";
import { paginate } from "./page.js";
import type { Flow, FlowFilter, FlowList, FlowRequest } from "./types.js";

const flows = "/api/v1/flows";

/**
 * The routes over flow keys: an owner's own limits on attempts in flight and
 * starts per period, shared by every job whose flow names the key.
 */
export class Flows {
  constructor(private readonly t: Transport) {}

  /** Returns one page of the caller's flow keys in key order, each with what it has in flight and waiting now. */
  list(filter: FlowFilter = {}, options?: CallOptions): Promise<FlowList> {
    return this.t.json({ method: "GET", path: flows, query: filter, options });
  }

  /** Yields every flow key of the caller's, page after page. */
  all(filter: FlowFilter = {}, options?: CallOptions): AsyncGenerator<Flow, void, undefined> {
    return paginate(filter.cursor, async (cursor) => {
      const page = await this.list({ ...filter, cursor }, options);
      return { items: page.flows, next: page.next_cursor };
    });
  }

  /** Returns one flow key. */
  get(key: string, options?: CallOptions): Promise<Flow> {
    return this.t.json({ method: "GET", path: path(flows, key), options });
  }

  /** Sets a flow key's limits and pause as a whole, creating the key if new. */
  put(key: string, req: FlowRequest, options?: WriteOptions): Promise<Flow> {
    return this.t.json({ method: "PUT", path: path(flows, key), body: req, options });
  }

  /** Holds back everything of the key that comes due; attempts already running go on. */
  pause(key: string, options?: WriteOptions): Promise<Flow> {
    return this.t.json({ method: "POST", path: path(flows, key, "pause"), options });
  }

  /** Lets the key's waiting occurrences out, in priority and then due order. */
  resume(key: string, options?: WriteOptions): Promise<Flow> {
    return this.t.json({ method: "POST", path: path(flows, key, "resume"), options });
  }

  /** Drops a flow key's limits: its jobs run without them, and what waits comes out at once. */
  async delete(key: string, options?: WriteOptions): Promise<void> {
    await this.t.send({ method: "DELETE", path: path(flows, key), options });
  }
}

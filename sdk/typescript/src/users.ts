import { path, type CallOptions, type Transport } from "./http.js";
import { paginate } from "./page.js";
import type {
  Erased,
  Job,
  JobList,
  Key,
  KeyCreate,
  NewKey,
  PageQuery,
  User,
  UserCreate,
  UserJobFilter,
  UserList,
  UserUpdate,
} from "./types.js";

const users = "/api/v1/users";

/** The routes under /api/v1/users; all but a user's own need an administrator. */
export class Users {
  constructor(private readonly t: Transport) {}

  /** Adds a user. */
  create(user: UserCreate, options?: CallOptions): Promise<User> {
    return this.t.json({ method: "POST", path: users, body: user, options });
  }

  /** Returns one page of users. */
  list(page: PageQuery = {}, options?: CallOptions): Promise<UserList> {
    return this.t.json({ method: "GET", path: users, query: page, options });
  }

  /** Yields every user. */
  all(options?: CallOptions): AsyncGenerator<User, void, undefined> {
    return paginate(undefined, async (cursor) => {
      const page = await this.list({ cursor }, options);
      return { items: page.users, next: page.next_cursor };
    });
  }

  /** Returns one user. */
  get(id: string, options?: CallOptions): Promise<User> {
    return this.t.json({ method: "GET", path: path(users, id), options });
  }

  /** Renames a user or sets their limits. */
  update(id: string, change: UserUpdate, options?: CallOptions): Promise<User> {
    return this.t.json({ method: "PATCH", path: path(users, id), body: change, options });
  }

  /** Stops a user's keys, pauses their scheduled jobs and aborts their running attempts. */
  disable(id: string, options?: CallOptions): Promise<User> {
    return this.t.json({ method: "POST", path: path(users, id, "disable"), options });
  }

  /** Lets a disabled user back in; their jobs stay paused until resumed. */
  enable(id: string, options?: CallOptions): Promise<User> {
    return this.t.json({ method: "POST", path: path(users, id, "enable"), options });
  }

  /** Deletes a user's jobs, runs, labels and keys, disables and renames them, and reduces the audit entries about them. */
  erase(id: string, options?: CallOptions): Promise<Erased> {
    return this.t.json({ method: "POST", path: path(users, id, "erase"), options });
  }

  /** Returns one page of a user's whole job history, each job with its next run and last outcome. */
  jobs(id: string, filter: UserJobFilter = {}, options?: CallOptions): Promise<JobList> {
    return this.t.json({ method: "GET", path: path(users, id, "jobs"), query: filter, options });
  }

  /** Yields a user's whole job history, page after page. */
  allJobs(id: string, filter: UserJobFilter = {}, options?: CallOptions): AsyncGenerator<Job, void, undefined> {
    return paginate(filter.cursor, async (cursor) => {
      const page = await this.jobs(id, { ...filter, cursor }, options);
      return { items: page.jobs, next: page.next_cursor };
    });
  }
}

/** The routes on API keys. */
export class Keys {
  constructor(private readonly t: Transport) {}

  /**
   * Makes a new key for the user (an administrator, or the user): with every
   * scope the user's role allows unless `scopes` narrows it (a read-only key:
   * `{ scopes: ["jobs:read", "runs:read"] }`). The whole key is in `key`,
   * shown this once.
   */
  create(userId: string, key: KeyCreate = {}, options?: CallOptions): Promise<NewKey> {
    return this.t.json({ method: "POST", path: path(users, userId, "keys"), body: key, options });
  }

  /** Returns the user's keys. */
  async list(userId: string, options?: CallOptions): Promise<Key[]> {
    const out = await this.t.json<{ keys: Key[] }>({ method: "GET", path: path(users, userId, "keys"), options });
    return out.keys;
  }

  /** Stops a key at once. */
  async revoke(id: string, options?: CallOptions): Promise<void> {
    await this.t.send({ method: "DELETE", path: path("/api/v1/keys", id), options });
  }
}

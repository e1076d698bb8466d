import { errorFromAnswer } from "./errors.js";
import { RetryPolicy, parseRetryAfter, sleep } from "./retry.js";

/** Options every call takes. */
export interface CallOptions {
  /** Ends the call, its retries and waits included, rejecting with the signal's reason. */
  signal?: AbortSignal;
}

/** Options of a call that changes something. */
export interface WriteOptions extends CallOptions {
  /**
   * Sent as the Idempotency-Key header: a repeat of the same request with the
   * same key within 24 hours gets the first answer back and changes nothing.
   * Creates get a random key when none is given, the same on every retry.
   */
  idempotencyKey?: string;
}

/** A query string's values; arrays repeat the parameter, empty values are left out. */
export type QueryValues = Record<string, string | number | boolean | readonly string[] | undefined>;

/** One API call: what to send, and how to treat it. */
export interface Call {
  method: "GET" | "POST" | "PUT" | "PATCH" | "DELETE";
  path: string;
  query?: QueryValues;
  body?: unknown;
  /** Marks a call that makes things: it gets an Idempotency-Key of its own unless the caller gave one. */
  create?: boolean;
  /** Marks a POST, PUT or PATCH that changes nothing (a preview, a dry run): safe to repeat. */
  readOnly?: boolean;
  options?: WriteOptions;
}

/** A 2xx answer: its status and decoded body. */
export interface Answer<T> {
  status: number;
  body: T;
}

export interface TransportOptions {
  baseUrl: string;
  token?: string;
  userAgent: string;
  timeoutMs: number;
  retry: RetryPolicy;
  fetch: typeof fetch;
}

/** Sends calls to one dashboard as one caller, retrying as the policy allows. */
export class Transport {
  constructor(private readonly o: TransportOptions) {}

  async json<T>(call: Call): Promise<T> {
    return (await this.send<T>(call)).body;
  }

  /**
   * Sends call and decodes a 2xx answer's JSON body (undefined when empty);
   * any other answer rejects with a TockError, a request that got no answer
   * with an Error naming the dashboard.
   */
  async send<T>(call: Call): Promise<Answer<T>> {
    const signal = call.options?.signal;
    const idemKey = call.options?.idempotencyKey || (call.create ? newIdempotencyKey() : undefined);
    const safe = isSafe(call.method, call.readOnly === true, idemKey !== undefined);
    const url = this.o.baseUrl + call.path + queryString(call.query);
    const init: RequestInit = {
      method: call.method,
      headers: this.headers(call.body !== undefined, idemKey),
      body: call.body === undefined ? undefined : JSON.stringify(call.body),
    };
    for (let attempt = 1; ; attempt++) {
      let res: Response;
      let text: string;
      try {
        res = await this.o.fetch(url, { ...init, signal: this.trySignal(signal) });
        text = await res.text();
      } catch (err) {
        if (signal?.aborted) throw signal.reason;
        const wait = this.o.retry.afterNoAnswer(attempt, safe);
        if (wait === undefined) throw this.noAnswer(call, err);
        await sleep(wait, signal);
        continue;
      }
      const wait = this.o.retry.afterAnswer(attempt, res.status, res.headers, safe);
      if (wait !== undefined) {
        await sleep(wait, signal);
        continue;
      }
      if (res.status < 200 || res.status > 299) {
        throw errorFromAnswer(res.status, res.statusText, text, parseRetryAfter(res.headers.get("retry-after"), Date.now()));
      }
      return { status: res.status, body: decode<T>(call, text) };
    }
  }

  private headers(hasBody: boolean, idemKey: string | undefined): Headers {
    const h = new Headers({ Accept: "application/json", "User-Agent": this.o.userAgent });
    if (this.o.token) h.set("Authorization", `Bearer ${this.o.token}`);
    if (hasBody) h.set("Content-Type", "application/json");
    if (idemKey) h.set("Idempotency-Key", idemKey);
    return h;
  }

  /** Bounds one try by the client's timeout, and by the caller's signal. */
  private trySignal(signal: AbortSignal | undefined): AbortSignal {
    const timeout = AbortSignal.timeout(this.o.timeoutMs);
    return signal ? AbortSignal.any([signal, timeout]) : timeout;
  }

  /**
   * Says what went wrong once, with the dashboard's address, which tells which
   * one did not answer; never the token.
   */
  private noAnswer(call: Call, err: unknown): Error {
    const e = err as { name?: string; message?: string; cause?: { code?: string; message?: string } };
    const why =
      e?.name === "TimeoutError"
        ? `no answer within ${this.o.timeoutMs} ms`
        : [e?.message, e?.cause?.code ?? e?.cause?.message].filter(Boolean).join(": ");
    return new Error(`tock: ${call.method} ${this.o.baseUrl}${call.path}: ${why}`, { cause: err });
  }
}

function decode<T>(call: Call, text: string): T {
  if (text === "") return undefined as T;
  try {
    return JSON.parse(text) as T;
  } catch (err) {
    throw new Error(`tock: ${call.method} ${call.path}: decode answer: ${(err as Error).message}`, { cause: err });
  }
}

/**
 * Whether a request may be sent again after a 503 or no answer: the server
 * keeps no 5xx answer, so a repeat runs again, which only a request that is
 * the same every time it runs can afford: reads, PUT, DELETE, previews and
 * dry runs, and any request carrying an Idempotency-Key (its repeat replays
 * the first answer). A 429 was refused before any work and is always safe.
 */
function isSafe(method: Call["method"], readOnly: boolean, keyed: boolean): boolean {
  return method === "GET" || method === "PUT" || method === "DELETE" || readOnly || keyed;
}

/** 128 random bits in hex, prefixed so that the server's records show where the key came from. */
export function newIdempotencyKey(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  return "tock-ts-" + Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

function queryString(q: QueryValues | undefined): string {
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries(q ?? {})) {
    if (v === undefined || v === "") continue;
    if (Array.isArray(v)) for (const item of v) params.append(k, item);
    else params.set(k, String(v));
  }
  const s = params.toString();
  return s ? `?${s}` : "";
}

/** Joins escaped segments onto a route: path("/api/v1/jobs", id, "runs"). */
export function path(route: string, ...segments: string[]): string {
  return route + segments.map((s) => "/" + encodeURIComponent(s)).join("");
}

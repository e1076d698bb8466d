/** How many times a call is tried, and how long the client waits between tries. */
export interface RetryOptions {
  /** Tries in all, the first included (default 5; 1 turns retrying off). */
  attempts?: number;
  /** The first wait, doubled after each try (default 250 ms). */
  baseMs?: number;
  /** The longest wait; a longer Retry-After is cut to it (default 10 s). */
  maxMs?: number;
}

/**
 * Says when and after how long an answer is worth asking for again, as the Go
 * SDK's retry policy does: a 429 (rate limited, nothing done) always; a 503
 * (unavailable) when the request is safe to repeat; a 409 with Retry-After
 * (its Idempotency-Key still held by an earlier try, so this one did not run)
 * always. A request that got no answer at all (the connection broke, or the
 * try timed out) is tried again when it is safe to repeat.
 */
export class RetryPolicy {
  readonly attempts: number;
  readonly baseMs: number;
  readonly maxMs: number;

  constructor(o: RetryOptions = {}) {
    this.attempts = Math.max(1, Math.floor(o.attempts ?? 5));
    this.baseMs = o.baseMs ?? 250;
    this.maxMs = o.maxMs ?? 10_000;
  }

  /** The wait before trying again after an answer to try number `attempt`, or undefined to stop. */
  afterAnswer(attempt: number, status: number, headers: Headers, safe: boolean): number | undefined {
    if (attempt >= this.attempts) return undefined;
    const retryAfter = headers.get("retry-after");
    const again = status === 429 || (status === 503 && safe) || (status === 409 && retryAfter !== null);
    if (!again) return undefined;
    const ms = parseRetryAfter(retryAfter, Date.now());
    return ms === undefined ? this.backoff(attempt) : Math.min(ms, this.maxMs);
  }

  /** The wait before trying again after try number `attempt` got no answer, or undefined to stop. */
  afterNoAnswer(attempt: number, safe: boolean): number | undefined {
    return safe && attempt < this.attempts ? this.backoff(attempt) : undefined;
  }

  /**
   * base doubled for each earlier try, capped at max, with up to a quarter of
   * it added at random so that clients refused together do not come back
   * together.
   */
  backoff(attempt: number): number {
    const d = Math.min(this.baseMs * 2 ** (attempt - 1), this.maxMs);
    return d + Math.random() * (d / 4);
  }
}

/** Reads a Retry-After header, seconds or an HTTP date, into milliseconds from now. */
export function parseRetryAfter(value: string | null, now: number): number | undefined {
  if (value === null || value.trim() === "") return undefined;
  if (/^\d+$/.test(value.trim())) return Number(value) * 1000;
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(at - now, 0);
}

/** Waits ms, or rejects with the signal's reason as soon as it aborts. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal!.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

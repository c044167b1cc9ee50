// The spec's retry guidance as a policy: which answers to retry, and how long to wait. The same
// rules and defaults as the Python SDK's RetryPolicy (docs/sdk.md), in milliseconds.

/**
 * The spec: "retry 429, 502, 503 and 504". A 500 is not retried by default: it is an
 * unexpected error that a retry rarely cures, and waiting hides it from the caller.
 */
export const RETRY_STATUSES: ReadonlySet<number> = new Set([429, 502, 503, 504]);

export interface RetryPolicyOptions {
  /** Attempts in all, the first included (5). */
  maxAttempts?: number;
  /** The wait before the second attempt (1000 ms); each next one `multiplier` times longer. */
  baseDelayMs?: number;
  multiplier?: number;
  /** No backoff wait is longer than this (30 000 ms). */
  maxDelayMs?: number;
  /** Upper bound (exclusive) of the random extra wait added to every wait (1000 ms). */
  jitterMs?: number;
  /** A `Retry-After` longer than this is not waited for: the error is thrown at once. */
  maxRetryAfterMs?: number;
  /** The answer statuses to retry (429, 502, 503, 504). */
  statuses?: Iterable<number>;
  /**
   * Retry when no answer came (a refused or broken connection, a read timeout): the spec
   * says "after a client timeout, retry with the same UUID" (true).
   */
  retryConnectionErrors?: boolean;
}

/**
 * How a procedure call is retried (only procedures the catalog marks idempotent).
 *
 * The wait before attempt `n + 1` is `min(maxDelayMs, baseDelayMs * multiplier ** (n - 1))`,
 * raised to the answer's `Retry-After` when that is longer, plus a random 0 to 999 ms. With
 * the defaults the waits are 1, 2, 4 and 8 s (each plus the jitter): a call gives up after 5
 * attempts and at most about 19 s of waiting, plus what `Retry-After` asks for.
 */
export class RetryPolicy {
  readonly maxAttempts: number;
  readonly baseDelayMs: number;
  readonly multiplier: number;
  readonly maxDelayMs: number;
  readonly jitterMs: number;
  readonly maxRetryAfterMs: number;
  readonly statuses: ReadonlySet<number>;
  readonly retryConnectionErrors: boolean;

  constructor(options: RetryPolicyOptions = {}) {
    this.maxAttempts = options.maxAttempts ?? 5;
    this.baseDelayMs = options.baseDelayMs ?? 1000;
    this.multiplier = options.multiplier ?? 2;
    this.maxDelayMs = options.maxDelayMs ?? 30_000;
    this.jitterMs = options.jitterMs ?? 1000;
    this.maxRetryAfterMs = options.maxRetryAfterMs ?? 120_000;
    this.statuses = new Set(options.statuses ?? RETRY_STATUSES);
    this.retryConnectionErrors = options.retryConnectionErrors ?? true;
    if (!Number.isInteger(this.maxAttempts) || this.maxAttempts < 1) {
      throw new RangeError("maxAttempts must be an integer of at least 1");
    }
    const delays = [this.baseDelayMs, this.maxDelayMs, this.jitterMs, this.maxRetryAfterMs];
    if (delays.some((delay) => !(delay >= 0))) {
      throw new RangeError("delays must not be negative");
    }
    if (!(this.multiplier >= 1)) {
      throw new RangeError("multiplier must be at least 1");
    }
  }

  /** The spec's other schedule: every `intervalMs` (2000) plus 0 to 999 ms. */
  static fixed(intervalMs = 2000, options: { maxAttempts?: number } = {}): RetryPolicy {
    return new RetryPolicy({ ...options, baseDelayMs: intervalMs, multiplier: 1 });
  }

  /** The wait before retry number `retry` (1 = the second attempt), without jitter. */
  backoffMs(retry: number): number {
    return Math.min(this.maxDelayMs, this.baseDelayMs * this.multiplier ** (retry - 1));
  }

  /** Milliseconds to wait before retry number `retry`; undefined when Retry-After is too long. */
  delayMs(retry: number, retryAfterMs?: number): number | undefined {
    let wait = this.backoffMs(retry);
    if (retryAfterMs !== undefined) {
      if (retryAfterMs > this.maxRetryAfterMs) {
        return undefined;
      }
      wait = Math.max(wait, retryAfterMs);
    }
    // Jitter spreads the retries of many callers that failed at the same moment.
    return wait + (this.jitterMs * Math.floor(Math.random() * 1000)) / 1000;
  }
}

/** One attempt, no retry. */
export const NO_RETRY = new RetryPolicy({ maxAttempts: 1 });

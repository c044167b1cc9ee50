// Pacing from the rate-limit headers: wait for the bucket instead of meeting a 429. The same
// model as the Python SDK's Pacer (client/storypost_client/pacing.py, docs/sdk.md).
//
// Every answer past authentication carries `RateLimit-Limit` (the bucket's size),
// `RateLimit-Remaining` (requests left now) and `RateLimit-Reset` (seconds until the bucket is
// full again). The limit is a token bucket refilled at an even rate, so an answer tells how
// many calls may go at once and how fast tokens come back: `Limit - Remaining` of them in
// `Reset` seconds. When Remaining reaches 0, the next call waits until its token is due
// instead of being answered 429; calls sent and not yet answered count as spent, so concurrent
// calls of one client never overrun the bucket between them. Before the first answer nothing
// is known and nothing waits; a 429 that still comes (another client spent the bucket) is
// retried after its `Retry-After`.

/** The API's limits are per minute: a token comes back every 60 s / Limit at the fastest. */
export const DEFAULT_PERIOD_MS = 60_000;
/** Tokens kept in hand: the server counts its bucket when it handles a call, the client
 * estimates it between answers; one token of margin absorbs the difference. */
export const MARGIN_TOKENS = 1;

/** The three headers of one answer. */
export interface RateLimit {
  readonly limit: number;
  readonly remaining: number;
  readonly resetMs: number;
}

/** The headers' values; undefined when an answer has none (a 401, a proxy's page). */
export function rateLimitOf(headers: Headers): RateLimit | undefined {
  const limit = integer(headers.get("ratelimit-limit"));
  const remaining = integer(headers.get("ratelimit-remaining"));
  const reset = Number(headers.get("ratelimit-reset") ?? Number.NaN);
  if (limit === undefined || remaining === undefined || !Number.isFinite(reset)) {
    return undefined;
  }
  if (limit < 1 || remaining < 0 || remaining > limit || reset < 0) {
    return undefined;
  }
  return { limit, remaining, resetMs: reset * 1000 };
}

/**
 * Milliseconds per token: `limit` tokens a period (the API's minute), or slower when the
 * missing tokens take longer than that to come back in `Reset`. `Reset` is whole seconds
 * rounded up: one second of it may be rounding, not refill.
 */
export function refillIntervalMs(seen: RateLimit, periodMs = DEFAULT_PERIOD_MS): number {
  const steady = periodMs / seen.limit;
  const missing = seen.limit - seen.remaining;
  return missing <= 0 ? steady : Math.max(steady, (seen.resetMs - 1000) / missing);
}

/** One call's place: wait `waitMs`, send, then `settle` it with the answer's headers. */
export interface Slot {
  readonly number: number;
  readonly waitMs: number;
}

/**
 * A client's picture of its organization's bucket. Each client has one; clients of one
 * organization may share one (`pacing: pacer`): they share the bucket.
 */
export class RateLimitPacer {
  readonly #periodMs: number;
  readonly #now: () => number;
  #next = 1;
  /** Tokens the next call may take at `#stamp` (negative: calls already wait for them). */
  #tokens: number | undefined;
  #stamp = 0;
  #limit = 0;
  #intervalMs = 0;
  /** Slots handed out and not settled: sent (or about to be) and not answered. */
  readonly #open = new Set<number>();
  /** The newest slot whose answer was applied: an older answer tells an older state. */
  #applied = 0;

  constructor(options: { periodMs?: number; now?: () => number } = {}) {
    this.#periodMs = options.periodMs ?? DEFAULT_PERIOD_MS;
    this.#now = options.now ?? (() => performance.now());
    if (!(this.#periodMs > 0)) {
      throw new RangeError("periodMs must be positive");
    }
  }

  /** A slot for the next call: how long to wait before sending it. */
  reserve(): Slot {
    const number = this.#next++;
    this.#open.add(number);
    if (this.#tokens === undefined) {
      return { number, waitMs: 0 };
    }
    const now = this.#now();
    const tokens = this.#available(now);
    const waitMs = tokens >= 1 ? 0 : (1 - tokens) * this.#intervalMs;
    this.#tokens = tokens - 1;
    this.#stamp = now;
    return { number, waitMs };
  }

  /** The answer to `slot`'s call (its headers), or undefined when none came. */
  settle(slot: Slot, headers: Headers | undefined): void {
    this.#open.delete(slot.number);
    const seen = headers === undefined ? undefined : rateLimitOf(headers);
    if (seen === undefined || slot.number < this.#applied) {
      return;
    }
    this.#applied = slot.number;
    this.#limit = seen.limit;
    this.#intervalMs = refillIntervalMs(seen, this.#periodMs);
    // What the server left, less the calls still open: it may not have counted them.
    // Less one token in hand (MARGIN_TOKENS, as the Python SDK's pacing.py says why).
    this.#tokens = seen.remaining - this.#open.size - MARGIN_TOKENS;
    this.#stamp = this.#now();
  }

  #available(now: number): number {
    const tokens = this.#tokens ?? 0;
    return Math.min(this.#limit, tokens + (now - this.#stamp) / this.#intervalMs);
  }
}

/** A pacer that never waits, for a client that must not pace (`pacing: false`). */
export class NoPacing extends RateLimitPacer {
  override reserve(): Slot {
    return { number: 0, waitMs: 0 };
  }

  override settle(): void {}
}

function integer(value: string | null): number | undefined {
  if (value === null || !/^\s*\d+\s*$/.test(value)) {
    return undefined;
  }
  return Number(value);
}

// Waiting for a post or draft to reach a final state: what to poll, and how often. The same
// kinds, final states and schedule as the Python SDK's `wait_for` (docs/sdk.md).

import { WaitTimeoutError } from "./errors.js";
import type { ProcedureName } from "./generated/procedures.js";
import { sleep } from "./time.js";

export type KindName = "story" | "reel" | "clipapp" | "social" | "draft";

/** A resource a status procedure reports on. */
export interface Kind {
  readonly name: KindName;
  readonly statusProcedure: ProcedureName;
  readonly uuidField: string;
  /** States that never change again (by the API; a user may still delete a draft). */
  readonly finalStates: ReadonlySet<string>;
  /** The final state that means "it worked". */
  readonly successState: string;
}

const FINAL_POST_STATUSES: ReadonlySet<string> = new Set(["executed", "failed", "canceled"]);
const FINAL_DRAFT_STATUSES: ReadonlySet<string> = new Set(["ready", "failed", "deleted"]);

function post(name: KindName, statusProcedure: ProcedureName, uuidField: string): Kind {
  return {
    name,
    statusProcedure,
    uuidField,
    finalStates: FINAL_POST_STATUSES,
    successState: "executed",
  };
}

export const KINDS: Readonly<Record<KindName, Kind>> = {
  story: post("story", "status-photoapp-story", "storyPostUuid"),
  reel: post("reel", "status-photoapp-reel", "reelPostUuid"),
  clipapp: post("clipapp", "status-clipapp-post", "clipappPostUuid"),
  social: post("social", "status-social-post", "socialPostUuid"),
  draft: {
    name: "draft",
    statusProcedure: "status-draft",
    uuidField: "draftUuid",
    finalStates: FINAL_DRAFT_STATUSES,
    successState: "ready",
  },
};

export interface PollPolicyOptions {
  /** The first wait (1000 ms). */
  initialIntervalMs?: number;
  /** Each next wait is this many times longer (1.5); never below 1: polling never speeds up. */
  multiplier?: number;
  /** No wait is longer (15 000 ms). */
  maxIntervalMs?: number;
  /** Give up after this long (900 000 ms, 15 minutes) with WaitTimeoutError. */
  timeoutMs?: number;
}

/**
 * How `waitFor*` polls: 1 s, 1.5 s, 2.25 s … up to 15 s, for at most 15 minutes (about 70
 * status calls, well inside the rate limit of 60 a minute).
 */
export class PollPolicy {
  readonly initialIntervalMs: number;
  readonly multiplier: number;
  readonly maxIntervalMs: number;
  readonly timeoutMs: number;

  constructor(options: PollPolicyOptions = {}) {
    this.initialIntervalMs = options.initialIntervalMs ?? 1000;
    this.multiplier = options.multiplier ?? 1.5;
    this.maxIntervalMs = options.maxIntervalMs ?? 15_000;
    this.timeoutMs = options.timeoutMs ?? 900_000;
    if (!(this.initialIntervalMs > 0) || !(this.maxIntervalMs >= this.initialIntervalMs)) {
      throw new RangeError("intervals must be positive and maxIntervalMs >= initialIntervalMs");
    }
    if (!(this.multiplier >= 1)) {
      throw new RangeError("multiplier must be at least 1: polling never speeds up");
    }
    if (!(this.timeoutMs >= 0)) {
      throw new RangeError("timeoutMs must not be negative");
    }
  }

  /** The waits between polls, growing to `maxIntervalMs` and staying there. */
  *intervals(): Generator<number, never> {
    let interval = this.initialIntervalMs;
    for (;;) {
      yield interval;
      interval = Math.min(this.maxIntervalMs, interval * this.multiplier);
    }
  }
}

export interface WaitOptions<T> {
  /** How to poll (default: the client's PollPolicy). */
  poll?: PollPolicy;
  /** Give up after this long (default: the policy's `timeoutMs`). */
  timeoutMs?: number;
  /** Called with every status answer as it arrives. */
  onStatus?: (answer: T) => void;
  /** Aborts the wait (and the status call in flight). */
  signal?: AbortSignal;
}

/** Calls a status procedure (each poll is a normal call, with its retries). */
export type StatusCall = (
  procedure: ProcedureName,
  body: Record<string, string>,
  signal: AbortSignal | undefined,
) => Promise<Record<string, unknown>>;

/**
 * Polls the status procedure of `kind` for `uuid` until a final state and resolves to that
 * last answer; it does not reject when the post failed: check `status`.
 */
export async function waitFor<T extends { status: string }>(
  call: StatusCall,
  kind: KindName,
  uuid: string,
  policy: PollPolicy,
  options: WaitOptions<T> = {},
): Promise<T> {
  const what = KINDS[kind];
  if (what === undefined) {
    throw new RangeError(`unknown kind ${String(kind)}; one of ${Object.keys(KINDS).join(", ")}`);
  }
  const limitMs = options.timeoutMs ?? policy.timeoutMs;
  const deadline = Date.now() + limitMs;
  const intervals = policy.intervals();
  for (;;) {
    const answer = (await call(
      what.statusProcedure,
      { [what.uuidField]: uuid },
      options.signal,
    )) as unknown as T;
    options.onStatus?.(answer);
    if (what.finalStates.has(answer.status)) {
      return answer;
    }
    const remaining = deadline - Date.now();
    if (remaining <= 0) {
      throw new WaitTimeoutError(kind, uuid, answer as unknown as Record<string, unknown>, limitMs);
    }
    await sleep(Math.min(intervals.next().value, remaining), options.signal);
  }
}

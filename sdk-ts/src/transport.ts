// One procedure call over fetch: the request built once (every attempt sends the same bytes,
// so retrying a create with its UUID is idempotent), the read timeout of the catalog, the
// retries of the policy, the pacing of the rate-limit headers and an error for every failure.

import {
  ApiConnectionError,
  ApiError,
  ApiTimeoutError,
  ServerError,
  StorypostError,
  errorForStatus,
} from "./errors.js";
import { NoPacing, RateLimitPacer } from "./pacing.js";
import { procedureInfo, type ProcedureInfo } from "./procedure.js";
import { RetryPolicy } from "./retry.js";
import { sleep } from "./time.js";
import { newUuid } from "./values.js";
import { VERSION } from "./version.js";

/** Per-call options of every method. */
export interface CallOptions {
  /** The read timeout of this call, in ms (default: the catalog's, 30 s or 120 s). */
  timeoutMs?: number;
  /** Aborts the call, its retries and its waits (rejecting with the signal's reason). */
  signal?: AbortSignal;
  /**
   * Your id for the call, sent as `X-Request-Id` with every attempt (1 to 128 of
   * `A-Za-z0-9._:-`); a random one when omitted. Errors carry it as `requestId`.
   */
  requestId?: string;
  /** The retry policy of this call (default: the client's). */
  retry?: RetryPolicy;
}

/** Called before each retry with the attempt that failed (1-based), the wait and the error. */
export type RetryHook = (attempt: number, delayMs: number, error: StorypostError) => void;
/** Called before a call waits for the rate limit, with the wait in ms. */
export type PaceHook = (waitMs: number) => void;

export interface TransportOptions {
  /** How calls are retried (default: `new RetryPolicy()`, the spec's guidance). */
  retry?: RetryPolicy;
  /**
   * Wait for the rate limit instead of meeting a 429 (default true): a pacer of its own,
   * `false` for none, or a pacer shared with other clients of the same organization.
   */
  pacing?: boolean | RateLimitPacer;
  onRetry?: RetryHook;
  onPace?: PaceHook;
  /** The fetch to use (default: the platform's `globalThis.fetch`). */
  fetch?: typeof fetch;
  userAgent?: string;
}

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** Where and as whom calls go, and how they are retried and paced. */
export class Transport {
  readonly baseUrl: string;
  readonly #token: string;
  readonly #retry: RetryPolicy;
  readonly #pacer: RateLimitPacer;
  readonly #onRetry: RetryHook | undefined;
  readonly #onPace: PaceHook | undefined;
  readonly #fetch: typeof fetch;
  readonly #userAgent: string;

  constructor(baseUrl: string, token: string, options: TransportOptions = {}) {
    if (!/^https?:\/\//.test(baseUrl)) {
      throw new TypeError("baseUrl must be an http:// or https:// URL ending in /api/v1");
    }
    if (!token) {
      throw new TypeError("an API token is required");
    }
    this.baseUrl = baseUrl.replace(/\/+$/, "");
    // A private field: a logged client does not show its token.
    this.#token = token;
    this.#retry = options.retry ?? new RetryPolicy();
    const pacing = options.pacing ?? true;
    this.#pacer = pacing === true ? new RateLimitPacer() : pacing || new NoPacing();
    this.#onRetry = options.onRetry;
    this.#onPace = options.onPace;
    this.#fetch = options.fetch ?? globalThis.fetch;
    this.#userAgent = options.userAgent ?? `storypost-client-ts/${VERSION}`;
  }

  /** Calls `procedure` with `body` (retried when the catalog marks it idempotent). */
  async call<T>(procedure: string, body: object, options: CallOptions = {}): Promise<T> {
    const info = procedureInfo(procedure);
    const policy = options.retry ?? this.#retry;
    const requestId = options.requestId ?? `ts-${newUuid()}`;
    if (!REQUEST_ID.test(requestId)) {
      throw new TypeError("requestId must be 1 to 128 of A-Za-z0-9._:-");
    }
    // Encoded once: every attempt sends exactly the same bytes (same UUID, same date).
    const content = JSON.stringify(body);
    for (let attempt = 1; ; attempt++) {
      const slot = this.#pacer.reserve();
      let answered: Headers | undefined;
      let failure: StorypostError;
      try {
        if (slot.waitMs > 0) {
          this.#onPace?.(slot.waitMs);
          await sleep(slot.waitMs, options.signal);
        }
        const response = await this.#attempt(info, content, requestId, attempt, options);
        answered = response.headers;
        return decodeAnswer(info.name, response, attempt, requestId) as T;
      } catch (error) {
        if (!(error instanceof StorypostError)) {
          throw error;
        }
        failure = error;
      } finally {
        this.#pacer.settle(slot, answered);
      }
      const delay = retryDelay(policy, info, attempt, failure);
      if (delay === undefined) {
        throw failure;
      }
      this.#onRetry?.(attempt, delay, failure);
      await sleep(delay, options.signal);
    }
  }

  /** One HTTP request: the answer with its body read, or a connection error (thrown). */
  async #attempt(
    info: ProcedureInfo,
    content: string,
    requestId: string,
    attempt: number,
    options: CallOptions,
  ): Promise<Answer> {
    const timeoutMs = options.timeoutMs ?? info.clientTimeoutSeconds * 1000;
    const deadline = new Deadline(timeoutMs, options.signal);
    let response: Response;
    let text: string;
    try {
      response = await this.#fetch(`${this.baseUrl}/${info.name}`, {
        method: "POST",
        headers: {
          Authorization: `Bearer ${this.#token}`,
          "Content-Type": "application/json",
          Accept: "application/json",
          "User-Agent": this.#userAgent,
          "X-Request-Id": requestId,
        },
        body: content,
        signal: deadline.signal,
      });
      // The body is read within the same timeout: an answer that stalls midway is a timeout.
      text = await response.text();
    } catch (error) {
      if (options.signal?.aborted) {
        throw options.signal.reason; // the caller's own abort: not a failure to retry
      }
      const how = { attempts: attempt, requestId, cause: error };
      if (deadline.expired) {
        throw new ApiTimeoutError(info.name, `no answer within ${timeoutMs} ms`, how);
      }
      throw new ApiConnectionError(info.name, `connection failed (${describe(error)})`, how);
    } finally {
      deadline.clear();
    }
    return { status: response.status, ok: response.ok, headers: response.headers, text };
  }
}

/** An HTTP answer, its body read. */
export interface Answer {
  readonly status: number;
  readonly ok: boolean;
  readonly headers: Headers;
  readonly text: string;
}

/** The success body, or the ApiError the answer stands for (thrown). */
export function decodeAnswer(
  procedure: string,
  response: Answer,
  attempts: number,
  requestId: string,
): Record<string, unknown> {
  const text = response.text;
  const body = jsonObject(text);
  const headers: Record<string, string> = {};
  response.headers.forEach((value, name) => {
    headers[name.toLowerCase()] = value;
  });
  const init = { procedure, status: response.status, headers, attempts, requestId };
  if (response.ok) {
    if (body === undefined) {
      throw new ServerError({ ...init, body: { errorMessage: "the answer is not a JSON object" } });
    }
    return body;
  }
  let errorBody = body ?? {};
  if (typeof errorBody["errorMessage"] !== "string") {
    // A proxy's HTML page or an empty body: keep a short excerpt as the message.
    const excerpt = text.trim().slice(0, 200);
    errorBody = { ...errorBody, errorMessage: excerpt || `HTTP ${response.status}` };
  }
  const ErrorClass = errorForStatus(response.status);
  throw new ErrorClass({ ...init, body: errorBody });
}

/** Milliseconds to wait before attempt `attempt + 1`, or undefined when `error` is final. */
export function retryDelay(
  policy: RetryPolicy,
  info: ProcedureInfo,
  attempt: number,
  error: StorypostError,
): number | undefined {
  if (!info.idempotent || attempt >= policy.maxAttempts) {
    return undefined;
  }
  if (error instanceof ApiError) {
    return policy.statuses.has(error.status)
      ? policy.delayMs(attempt, error.retryAfterMs)
      : undefined;
  }
  if (error instanceof ApiConnectionError && policy.retryConnectionErrors) {
    return policy.delayMs(attempt);
  }
  return undefined;
}

/**
 * An AbortSignal that fires after `ms` or when the caller's signal does (Node 18 has no
 * AbortSignal.any); `expired` tells the two apart.
 */
export class Deadline {
  readonly signal: AbortSignal;
  expired = false;
  readonly #controller = new AbortController();
  readonly #timer: ReturnType<typeof setTimeout>;
  readonly #outer: AbortSignal | undefined;
  readonly #onAbort = (): void => this.#controller.abort(this.#outer?.reason);

  constructor(ms: number, outer?: AbortSignal) {
    this.signal = this.#controller.signal;
    this.#outer = outer;
    this.#timer = setTimeout(() => {
      this.expired = true;
      this.#controller.abort(new Error(`timed out after ${ms} ms`));
    }, ms);
    if (outer?.aborted) {
      this.#onAbort();
    }
    outer?.addEventListener("abort", this.#onAbort, { once: true });
  }

  clear(): void {
    clearTimeout(this.#timer);
    this.#outer?.removeEventListener("abort", this.#onAbort);
  }
}

/** A transport error in a few words: fetch's `TypeError: fetch failed` hides its cause. */
export function describe(error: unknown): string {
  const cause = error instanceof Error ? error.cause : undefined;
  const code = isObject(cause) && typeof cause["code"] === "string" ? cause["code"] : undefined;
  const message = error instanceof Error ? error.message : String(error);
  return code ? `${message}: ${code}` : message;
}

function jsonObject(text: string): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(text);
    return isObject(value) ? value : undefined;
  } catch {
    return undefined;
  }
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

// The errors of the SDK: one class per kind of failure a caller handles differently (the same
// classes as the Python SDK's, docs/sdk.md). Every error of a call names its request id, so a
// failure can be found in the server's logs, also one that got no answer.

import type { ValidationErrorBody } from "./generated/types.js";

/** Base class of every error the SDK throws. */
export class StorypostError extends Error {
  override name = "StorypostError";
}

/** What an error answer was: the call, the HTTP status, the JSON body and the headers. */
export interface ApiErrorInit {
  procedure: string;
  status: number;
  body: Record<string, unknown>;
  headers: Record<string, string>;
  /** How many HTTP requests were made before giving up (retries included). */
  attempts: number;
  /** The id the call was sent with, used when the answer names none. */
  requestId?: string | undefined;
}

/** The API answered with an error status; `errorMessage` is its `errorMessage`. */
export class ApiError extends StorypostError {
  override name = "ApiError";
  readonly procedure: string;
  readonly status: number;
  readonly body: Record<string, unknown>;
  readonly errorMessage: string;
  /** Machine-readable reason (`RATE_LIMITED`, `QUOTA_EXCEEDED` …) when the API sent one. */
  readonly errorCode: string | undefined;
  /** The answer's headers, names in lowercase. */
  readonly headers: Record<string, string>;
  /** `X-Request-Id` of the answer (quote it when reporting a problem). */
  readonly requestId: string | undefined;
  /** Milliseconds the answer asked to wait (`Retry-After`), when it did. */
  readonly retryAfterMs: number | undefined;
  readonly attempts: number;

  constructor(init: ApiErrorInit) {
    const message = init.body["errorMessage"];
    const errorMessage = typeof message === "string" ? message : `HTTP ${init.status}`;
    super(`${init.procedure}: ${errorMessage} (HTTP ${init.status})`);
    this.procedure = init.procedure;
    this.status = init.status;
    this.body = init.body;
    this.errorMessage = errorMessage;
    const code = init.body["errorCode"];
    this.errorCode = typeof code === "string" ? code : undefined;
    this.headers = init.headers;
    this.requestId = init.headers["x-request-id"] ?? init.requestId;
    this.retryAfterMs = parseRetryAfter(init.headers["retry-after"]);
    this.attempts = init.attempts;
  }
}

/** HTTP 400 (and other 4xx than below): invalid params or an expected error. */
export class BadRequestError extends ApiError {
  override name = "BadRequestError";

  /** The spec's validation body (invalid params), or undefined for an expected error. */
  get validation(): ValidationErrorBody | undefined {
    const explanation = this.body["validationErrorExplanation"];
    const schema = this.body["paramsJsonSchema"];
    if (!isObject(explanation) || !isObject(schema)) {
      return undefined;
    }
    return this.body as unknown as ValidationErrorBody;
  }

  /** Offending key → explanations (`disallowed key`, `did you mean …?`), for invalid params. */
  get validationErrorExplanation(): Record<string, string[]> | undefined {
    return this.validation?.validationErrorExplanation;
  }

  /** The JSON Schema of the procedure's input, sent with invalid params. */
  get paramsJsonSchema(): Record<string, unknown> | undefined {
    return this.validation?.paramsJsonSchema;
  }
}

/** HTTP 401: the token is missing, wrong, revoked or of another organization. */
export class AuthenticationError extends ApiError {
  override name = "AuthenticationError";
}

/** HTTP 404: the base URL or the procedure name is wrong. */
export class NotFoundError extends ApiError {
  override name = "NotFoundError";
}

/** HTTP 413: the request body is too large. */
export class PayloadTooLargeError extends ApiError {
  override name = "PayloadTooLargeError";
}

/** HTTP 429 after the retries: rate limit, busy servers or busy accounts. */
export class RateLimitedError extends ApiError {
  override name = "RateLimitedError";
}

/** HTTP 500, 501 or another unexpected 5xx answer. */
export class ServerError extends ApiError {
  override name = "ServerError";
}

/** HTTP 502, 503 or 504 after the retries: a service is temporarily unavailable. */
export class UnavailableError extends ApiError {
  override name = "UnavailableError";
}

/** No HTTP answer: the connection failed or broke (after the retries the policy allows). */
export class ApiConnectionError extends StorypostError {
  override name = "ApiConnectionError";
  readonly procedure: string;
  readonly attempts: number;
  /** The id the request was sent with: the server's logs name it if the request arrived. */
  readonly requestId: string | undefined;

  constructor(
    procedure: string,
    message: string,
    options: { attempts: number; requestId?: string | undefined; cause?: unknown },
  ) {
    super(`${procedure}: ${message}`, { cause: options.cause });
    this.procedure = procedure;
    this.attempts = options.attempts;
    this.requestId = options.requestId;
  }
}

/** No answer within the read timeout; retrying with the same UUID is safe. */
export class ApiTimeoutError extends ApiConnectionError {
  override name = "ApiTimeoutError";
}

/** A `waitFor*` helper gave up before the resource reached a final state. */
export class WaitTimeoutError extends StorypostError {
  override name = "WaitTimeoutError";
  readonly kind: string;
  readonly uuid: string;
  /** The last status answer seen. */
  readonly last: Record<string, unknown>;

  constructor(kind: string, uuid: string, last: Record<string, unknown>, waitedMs: number) {
    const status = typeof last["status"] === "string" ? last["status"] : "unknown";
    super(`${kind} ${uuid} is still ${status} after ${waitedMs / 1000} s of waiting`);
    this.kind = kind;
    this.uuid = uuid;
    this.last = last;
  }
}

/** The media store refused the upload of a temp blob, or could not be reached. */
export class UploadError extends StorypostError {
  override name = "UploadError";
  /** The store's HTTP status, when it answered. */
  readonly status: number | undefined;

  constructor(message: string, options: { status?: number; cause?: unknown } = {}) {
    super(message, { cause: options.cause });
    this.status = options.status;
  }
}

const ERROR_FOR_STATUS: ReadonlyMap<number, typeof ApiError> = new Map([
  [400, BadRequestError],
  [401, AuthenticationError],
  [404, NotFoundError],
  [413, PayloadTooLargeError],
  [429, RateLimitedError],
  [502, UnavailableError],
  [503, UnavailableError],
  [504, UnavailableError],
]);

/** The error class of an error answer with this HTTP status. */
export function errorForStatus(status: number): typeof ApiError {
  const known = ERROR_FOR_STATUS.get(status);
  if (known) {
    return known;
  }
  // Another 4xx (405, 415 …) is a request the caller has to change, like a 400.
  return status >= 500 ? ServerError : BadRequestError;
}

/** Milliseconds from a `Retry-After` header (delta-seconds or an HTTP date). */
export function parseRetryAfter(value: string | undefined, now = Date.now()): number | undefined {
  if (value === undefined || value.trim() === "") {
    return undefined;
  }
  const seconds = Number(value.trim());
  if (Number.isFinite(seconds)) {
    return Math.max(0, seconds * 1000);
  }
  const when = Date.parse(value);
  return Number.isNaN(when) ? undefined : Math.max(0, when - now);
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

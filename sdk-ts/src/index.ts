// The storypost TypeScript SDK: `new StorypostClient(baseUrl, token)` and its typed methods.

export { StorypostClient, type ClientOptions } from "./client.js";
// Every error class, `errorForStatus` and `parseRetryAfter` (errors.ts exports nothing else).
export * from "./errors.js";
export * from "./generated/methods.js";
export { CATALOG_VERSION, PROCEDURES, type ProcedureName } from "./generated/procedures.js";
export type * from "./generated/types.js";
export {
  DEFAULT_PERIOD_MS,
  NoPacing,
  RateLimitPacer,
  rateLimitOf,
  refillIntervalMs,
  type RateLimit,
  type Slot,
} from "./pacing.js";
export {
  KINDS,
  PollPolicy,
  type Kind,
  type KindName,
  type PollPolicyOptions,
  type WaitOptions,
} from "./polling.js";
export { isProcedureName, procedureInfo, type ProcedureInfo } from "./procedure.js";
export { NO_RETRY, RETRY_STATUSES, RetryPolicy, type RetryPolicyOptions } from "./retry.js";
export type { CallOptions, PaceHook, RetryHook, TransportOptions } from "./transport.js";
export {
  CHUNK_BYTES,
  INLINE_MAX_BYTES,
  PRESIGNED_MAX_BYTES,
  bytesSource,
  fileSource,
  guessContentType,
  type Progress,
  type UploadMethod,
  type UploadOptions,
  type UploadSource,
  type UploadedFile,
} from "./uploads.js";
export { isoDate, newUuid } from "./values.js";
export { VERSION } from "./version.js";

// Temp blob uploads: checking the bytes against the spec's limits before anything is sent,
// streaming them to the presigned URL with progress, and the inline fallback's body. The same
// steps as the Python SDK's `upload_file` (docs/sdk.md).

import { open } from "node:fs/promises";
import { basename } from "node:path";

import { UploadError } from "./errors.js";
import type { RetryPolicy } from "./retry.js";
import { sleep } from "./time.js";
import { describe, Deadline } from "./transport.js";

/** The limits of the spec: presigned uploads 1 byte to 100 MB, inline ones 30 MB decoded. */
export const PRESIGNED_MAX_BYTES = 104_857_600;
export const INLINE_MAX_BYTES = 30 * 1024 * 1024;
export const CHUNK_BYTES = 256 * 1024;
const CONTENT_TYPE = /^(image|video|audio)\/[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]{0,126}$/;
/** A PUT of up to 100 MB: a generous time for the store's answer. */
export const PUT_TIMEOUT_MS = 120_000;

/** progress(sent, total): `(0, total)` first, after each chunk, `(total, total)` at the end. */
export type Progress = (sent: number, total: number) => void;
/** `auto`: presigned, inline when the upload URL cannot be reached; or one way only. */
export type UploadMethod = "auto" | "presigned" | "inline";

export interface UploadOptions {
  /** The media type (`image/*`, `video/*`, `audio/*`); guessed from a file's name if omitted. */
  contentType?: string;
  progress?: Progress;
  /** The blob's UUID (a repeat with it uploads nothing twice); a new one when omitted. */
  tempBlobUuid?: string;
  method?: UploadMethod;
  signal?: AbortSignal;
}

/** What an upload resolves to: the blob to use as `src`, and how it got there. */
export interface UploadedFile {
  tempBlobUuid: string;
  /** Stable URL of the blob: use it as `src` in the `html` of the render procedures. */
  url: string;
  contentType: string;
  sizeBytes: number;
  /** `presigned` (PUT to uploadUrl), `inline` (upload-temp-blob) or `existing` (sent before). */
  method: "presigned" | "inline" | "existing";
}

/** Bytes to upload: their size, known before sending, and a way to read them in chunks. */
export interface UploadSource {
  readonly name: string;
  readonly size: number;
  chunks(): AsyncIterable<Uint8Array>;
}

const EXTENSION_TYPES: Readonly<Record<string, string>> = {
  ".png": "image/png",
  ".jpg": "image/jpeg",
  ".jpeg": "image/jpeg",
  ".gif": "image/gif",
  ".webp": "image/webp",
  ".avif": "image/avif",
  ".svg": "image/svg+xml",
  ".mp4": "video/mp4",
  ".m4v": "video/mp4",
  ".mov": "video/quicktime",
  ".webm": "video/webm",
  ".mp3": "audio/mpeg",
  ".m4a": "audio/mp4",
  ".aac": "audio/aac",
  ".wav": "audio/wav",
  ".ogg": "audio/ogg",
  ".opus": "audio/opus",
};

/** The media type of a file name's extension, when it is one a temp blob takes. */
export function guessContentType(name: string): string | undefined {
  const dot = name.lastIndexOf(".");
  return dot < 0 ? undefined : EXTENSION_TYPES[name.slice(dot).toLowerCase()];
}

/** A local file, read in chunks as it is sent (never whole in memory for a presigned PUT). */
export async function fileSource(path: string): Promise<UploadSource> {
  const handle = await open(path, "r");
  let size: number;
  try {
    const stat = await handle.stat();
    if (!stat.isFile()) {
      throw new TypeError(`${path}: not a file`);
    }
    size = stat.size;
  } finally {
    await handle.close();
  }
  return {
    name: basename(path),
    size,
    async *chunks() {
      const file = await open(path, "r");
      try {
        let sent = 0;
        while (sent < size) {
          const buffer = new Uint8Array(Math.min(CHUNK_BYTES, size - sent));
          const { bytesRead } = await file.read(buffer, 0, buffer.length, sent);
          if (bytesRead === 0) {
            throw new UploadError(`${path} shrank during the upload (${sent} of ${size} bytes)`);
          }
          sent += bytesRead;
          yield buffer.subarray(0, bytesRead);
        }
      } finally {
        await file.close();
      }
    },
  };
}

/** Bytes in memory. */
export function bytesSource(data: Uint8Array, name = "bytes"): UploadSource {
  return {
    name,
    size: data.byteLength,
    async *chunks() {
      for (let start = 0; start < data.byteLength; start += CHUNK_BYTES) {
        yield data.subarray(start, start + CHUNK_BYTES);
      }
    },
  };
}

/** Checks a source against the spec's limits; its content type (RangeError / TypeError if not). */
export function checkUpload(
  source: UploadSource,
  contentType: string | undefined,
  method: UploadMethod,
): string {
  if (source.size < 1) {
    throw new RangeError(`${source.name}: empty (a temp blob has at least 1 byte)`);
  }
  const limit = method === "inline" ? INLINE_MAX_BYTES : PRESIGNED_MAX_BYTES;
  if (source.size > limit) {
    throw new RangeError(
      `${source.name}: ${source.size} bytes is more than the ${limit} bytes a temp blob takes`,
    );
  }
  const type = contentType ?? guessContentType(source.name);
  if (type === undefined || !CONTENT_TYPE.test(type)) {
    throw new TypeError(
      `${source.name}: content type ${type ?? "unknown"}; temp blobs are image/*, video/* or ` +
        "audio/* (pass contentType)",
    );
  }
  return type;
}

/** The presigned URL's host could not be reached: the inline fallback may help. */
export class StoreUnreachable extends Error {
  override name = "StoreUnreachable";
}

// Errors of fetch (its `cause.code`) that mean the host is not there, not that it broke off.
const UNREACHABLE_CODES = new Set([
  "ECONNREFUSED",
  "ENOTFOUND",
  "EAI_AGAIN",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "UND_ERR_CONNECT_TIMEOUT",
  "CERT_HAS_EXPIRED",
  "DEPTH_ZERO_SELF_SIGNED_CERT",
  "UNABLE_TO_VERIFY_LEAF_SIGNATURE",
  "ERR_TLS_CERT_ALTNAME_INVALID",
]);

function unreachable(error: unknown): boolean {
  if (!(error instanceof Error)) {
    return false;
  }
  const cause = error.cause as { code?: unknown } | undefined;
  return typeof cause?.code === "string" && UNREACHABLE_CODES.has(cause.code);
}

/**
 * PUTs the source to a presigned URL with exactly the signed `Content-Type` and
 * `Content-Length` (no Authorization: the URL is the authorization), streamed in chunks with
 * progress. 429/502/503/504 answers and broken connections are retried per `retry` (progress
 * restarts at 0). Throws StoreUnreachable when the host cannot be reached (a refused
 * connection at once, other failures on the last attempt), UploadError when it refuses.
 */
export async function putToStore(
  fetcher: typeof fetch,
  uploadUrl: string,
  source: UploadSource,
  contentType: string,
  retry: RetryPolicy,
  progress: Progress | undefined,
  signal: AbortSignal | undefined,
): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    const deadline = new Deadline(PUT_TIMEOUT_MS, signal);
    let response: Response;
    try {
      response = await fetcher(uploadUrl, {
        method: "PUT",
        headers: { "Content-Type": contentType, "Content-Length": String(source.size) },
        body: streamWithProgress(source, progress),
        // fetch streams a request body only half-duplex (Node's fetch requires saying so).
        duplex: "half",
        signal: deadline.signal,
      } as RequestInit);
      await response.arrayBuffer();
    } catch (error) {
      if (signal?.aborted) {
        throw signal.reason;
      }
      if (error instanceof UploadError) {
        throw error;
      }
      if (unreachable(error) || attempt >= retry.maxAttempts) {
        throw new StoreUnreachable(describe(error), { cause: error });
      }
      await sleep(retry.delayMs(attempt) ?? 0, signal);
      continue;
    } finally {
      deadline.clear();
    }
    if (response.ok) {
      return;
    }
    if (retry.statuses.has(response.status) && attempt < retry.maxAttempts) {
      await sleep(retry.delayMs(attempt) ?? 0, signal);
      continue;
    }
    throw new UploadError(`the media store refused the upload: HTTP ${response.status}`, {
      status: response.status,
    });
  }
}

/** The source as a request body stream that reports each chunk as fetch takes it. */
function streamWithProgress(
  source: UploadSource,
  progress: Progress | undefined,
): ReadableStream<Uint8Array> {
  const chunks = source.chunks()[Symbol.asyncIterator]();
  let sent = 0;
  return new ReadableStream<Uint8Array>({
    start() {
      progress?.(0, source.size);
    },
    async pull(controller) {
      const next = await chunks.next();
      if (next.done) {
        controller.close();
        return;
      }
      sent += next.value.byteLength;
      controller.enqueue(next.value);
      progress?.(sent, source.size);
    },
    async cancel() {
      await chunks.return?.();
    },
  });
}

/** The whole source, for the inline upload (`upload-temp-blob`, base64). */
export async function readAll(source: UploadSource): Promise<Uint8Array> {
  const whole = new Uint8Array(source.size);
  let at = 0;
  for await (const chunk of source.chunks()) {
    whole.set(chunk, at);
    at += chunk.byteLength;
  }
  return whole;
}

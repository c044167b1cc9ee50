// The client: the generated methods over the transport, plus what the API leaves to callers:
// waiting for a final status and uploading a file as a temp blob.

import { Buffer } from "node:buffer";

import { StorypostMethods } from "./generated/methods.js";
import type { ProcedureName } from "./generated/procedures.js";
import type {
  StatusClipappPostResponse,
  StatusDraftResponse,
  StatusPhotoappReelResponse,
  StatusPhotoappStoryResponse,
  StatusSocialPostResponse,
} from "./generated/types.js";
import { PollPolicy, waitFor, type KindName, type WaitOptions } from "./polling.js";
import { RetryPolicy } from "./retry.js";
import { Transport, type CallOptions, type TransportOptions } from "./transport.js";
import {
  bytesSource,
  checkUpload,
  fileSource,
  INLINE_MAX_BYTES,
  putToStore,
  readAll,
  StoreUnreachable,
  type UploadedFile,
  type UploadOptions,
  type UploadSource,
} from "./uploads.js";
import { UploadError } from "./errors.js";
import { newUuid } from "./values.js";

export interface ClientOptions extends TransportOptions {
  /** How `waitFor*` polls (default: `new PollPolicy()`). */
  poll?: PollPolicy;
}

/** A client of one organization's API (`baseUrl` ends in `/o/<organizationId>/api/v1`). */
export class StorypostClient extends StorypostMethods {
  readonly #transport: Transport;
  readonly #poll: PollPolicy;
  readonly #retry: RetryPolicy;
  readonly #fetch: typeof fetch;

  constructor(baseUrl: string, token: string, options: ClientOptions = {}) {
    super();
    this.#transport = new Transport(baseUrl, token, options);
    this.#poll = options.poll ?? new PollPolicy();
    this.#retry = options.retry ?? new RetryPolicy();
    this.#fetch = options.fetch ?? globalThis.fetch;
  }

  /** A client from `STORYPOST_BASE_URL` and `STORYPOST_API_TOKEN`. */
  static fromEnv(
    env: Record<string, string | undefined> = process.env,
    options: ClientOptions = {},
  ): StorypostClient {
    const baseUrl = env["STORYPOST_BASE_URL"];
    const token = env["STORYPOST_API_TOKEN"];
    if (!baseUrl || !token) {
      throw new TypeError("set STORYPOST_BASE_URL and STORYPOST_API_TOKEN");
    }
    return new StorypostClient(baseUrl, token, options);
  }

  get baseUrl(): string {
    return this.#transport.baseUrl;
  }

  /**
   * Calls any procedure by name, also one newer than this SDK (that one is never retried and
   * gets a 120 s read timeout).
   */
  call<T = Record<string, unknown>>(
    procedure: string,
    body: object = {},
    options?: CallOptions,
  ): Promise<T> {
    return this.#transport.call<T>(procedure, body, options);
  }

  protected callProcedure<T>(
    procedure: ProcedureName,
    body: object,
    options?: CallOptions,
  ): Promise<T> {
    return this.#transport.call<T>(procedure, body, options);
  }

  /**
   * Polls the status procedure of `kind` until a final state (executed, failed or canceled;
   * for drafts ready, failed or deleted) and resolves to the last status answer. A failed
   * post does not reject: check `status` (`errorMessage` says why). WaitTimeoutError when
   * the time is up.
   */
  waitFor<T extends { status: string } = { status: string } & Record<string, unknown>>(
    kind: KindName,
    uuid: string,
    options: WaitOptions<T> = {},
  ): Promise<T> {
    const status = (procedure: ProcedureName, body: object, signal?: AbortSignal) =>
      this.#transport.call<Record<string, unknown>>(procedure, body, signal ? { signal } : {});
    return waitFor<T>(status, kind, uuid, options.poll ?? this.#poll, options);
  }

  waitForStory(
    storyPostUuid: string,
    options?: WaitOptions<StatusPhotoappStoryResponse>,
  ): Promise<StatusPhotoappStoryResponse> {
    return this.waitFor("story", storyPostUuid, options);
  }

  waitForReel(
    reelPostUuid: string,
    options?: WaitOptions<StatusPhotoappReelResponse>,
  ): Promise<StatusPhotoappReelResponse> {
    return this.waitFor("reel", reelPostUuid, options);
  }

  waitForClipappPost(
    clipappPostUuid: string,
    options?: WaitOptions<StatusClipappPostResponse>,
  ): Promise<StatusClipappPostResponse> {
    return this.waitFor("clipapp", clipappPostUuid, options);
  }

  waitForSocialPost(
    socialPostUuid: string,
    options?: WaitOptions<StatusSocialPostResponse>,
  ): Promise<StatusSocialPostResponse> {
    return this.waitFor("social", socialPostUuid, options);
  }

  waitForDraft(
    draftUuid: string,
    options?: WaitOptions<StatusDraftResponse>,
  ): Promise<StatusDraftResponse> {
    return this.waitFor("draft", draftUuid, options);
  }

  /**
   * Uploads a local file as a temp blob; use the answer's `url` as `src` in pages.
   *
   * `auto` (default) asks for a presigned URL (`create-temp-blob-upload-url`) and PUTs the
   * file there, streamed with exactly the declared Content-Type and Content-Length and
   * calling `progress(sent, total)`; when that URL's host cannot be reached it falls back to
   * `upload-temp-blob` (base64 inline, files up to 30 MB) under a new UUID. `presigned` and
   * `inline` force one way. Rejects with RangeError/TypeError for a file the API would refuse
   * (empty, too large, not image/video/audio), UploadError when the store refuses the bytes.
   */
  async uploadFile(path: string, options: UploadOptions = {}): Promise<UploadedFile> {
    return this.upload(await fileSource(path), options);
  }

  /** `uploadFile` for bytes in memory (`contentType` is required: no name to guess it from). */
  uploadBytes(
    data: Uint8Array,
    options: UploadOptions & { contentType: string },
  ): Promise<UploadedFile> {
    return this.upload(bytesSource(data), options);
  }

  /** `uploadFile` for any source of bytes. */
  async upload(source: UploadSource, options: UploadOptions = {}): Promise<UploadedFile> {
    const method = options.method ?? "auto";
    const contentType = checkUpload(source, options.contentType, method);
    const blobUuid = options.tempBlobUuid ?? newUuid();
    const call = options.signal ? { signal: options.signal } : {};
    const uploaded = (answer: { tempBlobUuid: string; url: string }, how: UploadedFile["method"]) =>
      ({ ...answer, contentType, sizeBytes: source.size, method: how }) satisfies UploadedFile;
    const inline = async (uuid: string): Promise<UploadedFile> => {
      options.progress?.(0, source.size);
      const contentBase64 = Buffer.from(await readAll(source)).toString("base64");
      const answer = await this.uploadTempBlob(
        { tempBlobUuid: uuid, contentBase64, contentType },
        call,
      );
      options.progress?.(source.size, source.size);
      return uploaded({ tempBlobUuid: answer.tempBlobUuid, url: answer.url }, "inline");
    };
    if (method === "inline") {
      return inline(blobUuid);
    }
    const created = await this.createTempBlobUploadUrl(
      { tempBlobUuid: blobUuid, contentType, contentLengthBytes: source.size },
      call,
    );
    const blob = { tempBlobUuid: created.tempBlobUuid, url: created.url };
    if (created.uploadUrl === undefined) {
      // The blob has its bytes already (an earlier call with this UUID): nothing to send.
      options.progress?.(source.size, source.size);
      return uploaded(blob, "existing");
    }
    try {
      await putToStore(
        this.#fetch,
        created.uploadUrl,
        source,
        contentType,
        this.#retry,
        options.progress,
        options.signal,
      );
    } catch (error) {
      if (!(error instanceof StoreUnreachable)) {
        throw error;
      }
      if (method === "presigned" || source.size > INLINE_MAX_BYTES) {
        throw new UploadError(`cannot reach the upload URL: ${error.message}`, { cause: error });
      }
      // The blob under `blobUuid` is reserved (and empty): the inline copy needs its own.
      return inline(newUuid());
    }
    return uploaded(blob, "presigned");
  }
}

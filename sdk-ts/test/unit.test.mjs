// The SDK's rules against a fake edge on loopback: retries, pacing, errors, polling, uploads.
// Run after `npm run build`: `node --test test/`.

import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { test } from "node:test";

import {
  ApiConnectionError,
  ApiTimeoutError,
  AuthenticationError,
  BadRequestError,
  NO_RETRY,
  NoPacing,
  PROCEDURES,
  PollPolicy,
  RateLimitPacer,
  RetryPolicy,
  ServerError,
  StorypostClient,
  UnavailableError,
  VERSION,
  WaitTimeoutError,
  isoDate,
  parseRetryAfter,
  rateLimitOf,
  refillIntervalMs,
} from "../dist/index.js";
import { closedPort, fakeServer } from "./fake-server.mjs";

// Retries without the spec's seconds of waiting; the rules are the same.
const FAST = new RetryPolicy({ baseDelayMs: 10, jitterMs: 0 });
const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

function clientOf(server, options = {}) {
  return new StorypostClient(server.baseUrl, "sp_token", { retry: FAST, ...options });
}

test("the version is the package's", async () => {
  const pkg = JSON.parse(await readFile(new URL("../package.json", import.meta.url), "utf8"));
  assert.equal(VERSION, pkg.version);
});

test("a call posts JSON with the token, a request id and the catalog's procedure", async () => {
  const server = await fakeServer(() => ({ body: { uuid: "0b0b5f2c-3f0e-4a2e-9a57-1c8e4c1b7a11" } }));
  try {
    const answer = await clientOf(server).generateUuid({ requestId: "my-id.1" });
    assert.equal(answer.uuid, "0b0b5f2c-3f0e-4a2e-9a57-1c8e4c1b7a11");
    const [request] = server.requests;
    assert.equal(request.method, "POST");
    assert.equal(request.url, "/o/org1/api/v1/generate-uuid");
    assert.equal(request.headers.authorization, "Bearer sp_token");
    assert.equal(request.headers["content-type"], "application/json");
    assert.equal(request.headers["x-request-id"], "my-id.1");
    assert.match(request.headers["user-agent"], /^storypost-client-ts\//);
    assert.deepEqual(server.json(0), {});
  } finally {
    await server.close();
  }
});

test("503 and 429 are retried with the same bytes, waiting at least Retry-After", async () => {
  const server = await fakeServer((_request, index) =>
    index === 0
      ? { status: 503, headers: { "Retry-After": "1" }, body: { errorMessage: "down" } }
      : index === 1
        ? { status: 429, body: { errorMessage: "slow down", errorCode: "RATE_LIMITED" } }
        : { body: { storyPostUuid: "x", status: "scheduled" } },
  );
  const retries = [];
  try {
    const client = clientOf(server, { onRetry: (n, delay, error) => retries.push([n, delay, error]) });
    await client.schedulePhotoappStory({
      html: "<p>x</p>",
      photoappUsername: "alice",
      date: new Date("2026-07-01T09:30:00Z"),
    });
    assert.equal(server.requests.length, 3);
    const bodies = server.requests.map((r) => r.body.toString());
    assert.equal(new Set(bodies).size, 1, "every attempt sends the same bytes");
    const ids = server.requests.map((r) => r.headers["x-request-id"]);
    assert.equal(new Set(ids).size, 1, "every attempt carries the call's request id");
    const sent = server.json(0);
    assert.match(sent.storyPostUuid, UUID_V4);
    assert.equal(sent.date, "2026-07-01T09:30:00Z");
    assert.deepEqual(
      retries.map(([n, , error]) => [n, error.status]),
      [
        [1, 503],
        [2, 429],
      ],
    );
    assert.ok(retries[0][1] >= 1000, "Retry-After: 1 is waited for");
    assert.ok(server.requests[1].at - server.requests[0].at >= 990);
  } finally {
    await server.close();
  }
});

test("at most maxAttempts attempts, then the error with its attempts and request id", async () => {
  const server = await fakeServer(() => ({ status: 502, body: "<html>bad gateway</html>" }));
  try {
    const error = await clientOf(server)
      .statusDraft({ draftUuid: "0b0b5f2c-3f0e-4a2e-9a57-1c8e4c1b7a11" })
      .catch((e) => e);
    assert.ok(error instanceof UnavailableError);
    assert.equal(error.attempts, 5);
    assert.equal(server.requests.length, 5);
    assert.equal(error.errorMessage, "<html>bad gateway</html>");
    assert.equal(error.requestId, server.requests[0].headers["x-request-id"]);
  } finally {
    await server.close();
  }
});

test("400, 401 and 500 are not retried; a validation body is typed", async () => {
  const validation = {
    errorMessage: "invalid params for procedure: status-photoapp-story",
    procedureName: "status-photoapp-story",
    paramsJsonSchema: { type: "object", additionalProperties: false },
    validationErrorExplanation: { storyPostUuid: ["not a valid uuid"] },
  };
  const answers = [
    { status: 400, body: validation },
    { status: 401, body: { errorMessage: "not authenticated" } },
    { status: 500, body: { errorMessage: "internal server error" } },
  ];
  const server = await fakeServer((_request, index) => answers[index]);
  try {
    const client = clientOf(server);
    const bad = await client.statusPhotoappStory({ storyPostUuid: "nope" }).catch((e) => e);
    assert.ok(bad instanceof BadRequestError);
    assert.deepEqual(bad.validationErrorExplanation, { storyPostUuid: ["not a valid uuid"] });
    assert.equal(bad.paramsJsonSchema.additionalProperties, false);
    assert.equal(bad.validation.procedureName, "status-photoapp-story");
    assert.equal(bad.attempts, 1);
    const auth = await client.generateUuid().catch((e) => e);
    assert.ok(auth instanceof AuthenticationError);
    const server500 = await client.generateUuid().catch((e) => e);
    assert.ok(server500 instanceof ServerError);
    assert.equal(server.requests.length, 3);
  } finally {
    await server.close();
  }
});

test("an expected error is a BadRequestError without a validation body", async () => {
  const server = await fakeServer(() => ({
    status: 400,
    body: { errorMessage: "exactly one of url or html must be given (both were)" },
  }));
  try {
    const error = await clientOf(server)
      .call("create-draft", { url: "https://example.com", html: "<p>x</p>" })
      .catch((e) => e);
    assert.ok(error instanceof BadRequestError);
    assert.equal(error.validation, undefined);
    assert.equal(error.errorMessage, "exactly one of url or html must be given (both were)");
  } finally {
    await server.close();
  }
});

test("no answer: a connection error carrying the request id, after the retries", async () => {
  const port = await closedPort();
  const client = new StorypostClient(`http://127.0.0.1:${port}/o/x/api/v1`, "t", { retry: FAST });
  const error = await client.generateUuid({ requestId: "lost-1" }).catch((e) => e);
  assert.ok(error instanceof ApiConnectionError);
  assert.equal(error.attempts, 5);
  assert.equal(error.requestId, "lost-1");
  assert.match(error.message, /ECONNREFUSED/);
});

test("a read timeout is an ApiTimeoutError, retried", async () => {
  const server = await fakeServer(async (_request, index) => {
    if (index === 0) {
      await new Promise((resolve) => setTimeout(resolve, 400));
    }
    return { body: { uuid: "u" } };
  });
  try {
    const retries = [];
    const client = clientOf(server, { onRetry: (_n, _d, error) => retries.push(error) });
    const answer = await client.generateUuid({ timeoutMs: 150 });
    assert.equal(answer.uuid, "u");
    assert.ok(retries[0] instanceof ApiTimeoutError);
  } finally {
    await server.close();
  }
});

test("a procedure newer than the SDK is called by name and never retried", async () => {
  const server = await fakeServer(() => ({ status: 503, body: { errorMessage: "down" } }));
  try {
    const error = await clientOf(server).call("future-procedure", { a: 1 }).catch((e) => e);
    assert.ok(error instanceof UnavailableError);
    assert.equal(server.requests.length, 1);
  } finally {
    await server.close();
  }
});

test("pacing: when Remaining reaches 0 the next call waits for its token, not a 429", async () => {
  const empty = { "RateLimit-Limit": "60", "RateLimit-Remaining": "0", "RateLimit-Reset": "60" };
  const server = await fakeServer((_request, index) => ({
    headers:
      index === 0 ? empty : { "RateLimit-Limit": "60", "RateLimit-Remaining": "59", "RateLimit-Reset": "1" },
    body: { uuid: String(index) },
  }));
  const paced = [];
  try {
    const client = clientOf(server, { retry: NO_RETRY, onPace: (ms) => paced.push(ms) });
    await client.generateUuid();
    await client.generateUuid();
    await client.generateUuid();
    assert.equal(paced.length, 1, "only the call after Remaining 0 waits");
    // 60 a minute, one token kept in hand (MARGIN_TOKENS): the next call goes two seconds
    // after the bucket ran empty.
    assert.ok(paced[0] > 1900 && paced[0] <= 2000, String(paced[0]));
    assert.ok(server.requests[1].at - server.requests[0].at >= 1950);
    assert.ok(server.requests[2].at - server.requests[1].at < 500);
  } finally {
    await server.close();
  }
});

test("the pacer: the bucket's refill from the headers, open calls counted as spent", () => {
  let now = 0;
  const pacer = new RateLimitPacer({ now: () => now });
  const headers = (limit, remaining, reset) =>
    new Headers({
      "RateLimit-Limit": String(limit),
      "RateLimit-Remaining": String(remaining),
      "RateLimit-Reset": String(reset),
    });
  const unknown = pacer.reserve();
  assert.equal(unknown.waitMs, 0, "nothing is known before the first answer");
  pacer.settle(unknown, undefined); // no answer came: it tells nothing
  // Two calls in flight; the first answer says one token is left.
  const first = pacer.reserve();
  const second = pacer.reserve();
  pacer.settle(first, headers(60, 1, 59));
  // The second call is still open: the token left is its own, and one is kept in hand.
  assert.equal(pacer.reserve().waitMs, 2000);
  pacer.settle(second, headers(60, 0, 60));
  now += 500;
  const waits = [pacer.reserve().waitMs, pacer.reserve().waitMs];
  assert.deepEqual(waits, [2500, 3500], "each next call waits one more token");
  // A slower refill than the minute's: 30 missing tokens back in 61 s (one second rounding).
  assert.equal(refillIntervalMs({ limit: 60, remaining: 30, resetMs: 61_000 }), 2000);
  assert.equal(rateLimitOf(new Headers({ "RateLimit-Limit": "x" })), undefined);
  const off = new NoPacing();
  off.settle(off.reserve(), headers(60, 0, 60));
  assert.equal(off.reserve().waitMs, 0);
});

test("the retry policy: the spec's backoff, jitter below a second, Retry-After too long", () => {
  const policy = new RetryPolicy();
  assert.deepEqual([1, 2, 3, 4, 6].map((n) => policy.backoffMs(n)), [1000, 2000, 4000, 8000, 30000]);
  for (let i = 0; i < 50; i++) {
    const delay = policy.delayMs(1);
    assert.ok(delay >= 1000 && delay < 2000);
  }
  assert.ok(policy.delayMs(1, 5000) >= 5000);
  assert.equal(policy.delayMs(1, 121_000), undefined);
  assert.equal(RetryPolicy.fixed().backoffMs(4), 2000);
  assert.throws(() => new RetryPolicy({ maxAttempts: 0 }), RangeError);
  assert.equal(parseRetryAfter("3"), 3000);
  assert.equal(parseRetryAfter(new Date(Date.now() + 10_000).toUTCString()) > 8000, true);
});

test("waitFor polls until a final state, with backoff, then gives up", async () => {
  const statuses = ["scheduled", "scheduled", "executed"];
  const server = await fakeServer((request, index) => ({
    body: { storyPostUuid: JSON.parse(request.body).storyPostUuid, status: statuses[index] ?? "scheduled" },
  }));
  try {
    const poll = new PollPolicy({ initialIntervalMs: 20, multiplier: 2, maxIntervalMs: 50, timeoutMs: 5000 });
    const client = clientOf(server, { poll });
    const seen = [];
    const final = await client.waitForStory("s1", { onStatus: (answer) => seen.push(answer.status) });
    assert.equal(final.status, "executed");
    assert.deepEqual(seen, statuses);
    assert.equal(server.requests[0].url, "/o/org1/api/v1/status-photoapp-story");
    const error = await client.waitForDraft("d1", { timeoutMs: 100 }).catch((e) => e);
    assert.ok(error instanceof WaitTimeoutError);
    assert.equal(error.last.status, "scheduled");
    assert.throws(() => new PollPolicy({ multiplier: 0.5 }), RangeError);
  } finally {
    await server.close();
  }
});

test("uploadBytes: a presigned PUT with the declared type and length, and progress", async () => {
  const data = new Uint8Array(600 * 1024).map((_, i) => i % 251);
  const server = await fakeServer((request) => {
    if (request.method === "PUT") {
      return { status: 200, body: "" };
    }
    const sent = JSON.parse(request.body);
    return {
      body: {
        tempBlobUuid: sent.tempBlobUuid,
        url: "https://blobs.example/b",
        uploadUrl: `${server.url}/store/${sent.tempBlobUuid}?signature=s`,
      },
    };
  });
  try {
    const progress = [];
    const uploaded = await clientOf(server).uploadBytes(data, {
      contentType: "video/mp4",
      progress: (sent, total) => progress.push([sent, total]),
    });
    assert.equal(uploaded.method, "presigned");
    assert.equal(uploaded.sizeBytes, data.length);
    const [create, put] = server.requests;
    assert.deepEqual(
      { ...JSON.parse(create.body), tempBlobUuid: "-" },
      { tempBlobUuid: "-", contentType: "video/mp4", contentLengthBytes: data.length },
    );
    assert.equal(put.method, "PUT");
    assert.equal(put.headers["content-type"], "video/mp4");
    assert.equal(put.headers["content-length"], String(data.length));
    assert.equal(put.headers.authorization, undefined, "the URL is the authorization");
    assert.deepEqual(new Uint8Array(put.body), data);
    assert.deepEqual(progress[0], [0, data.length]);
    assert.deepEqual(progress.at(-1), [data.length, data.length]);
    assert.ok(progress.length >= 4, "progress after each 256 KiB chunk");
  } finally {
    await server.close();
  }
});

test("uploadBytes: an unreachable store falls back to an inline upload under a new UUID", async () => {
  const port = await closedPort();
  const server = await fakeServer((request) => {
    const sent = JSON.parse(request.body);
    if (request.url.endsWith("/upload-temp-blob")) {
      return { body: { tempBlobUuid: sent.tempBlobUuid, url: "https://blobs.example/inline" } };
    }
    return {
      body: {
        tempBlobUuid: sent.tempBlobUuid,
        url: "https://blobs.example/b",
        uploadUrl: `http://127.0.0.1:${port}/store`,
      },
    };
  });
  try {
    const data = new TextEncoder().encode("GIF89a");
    const client = clientOf(server);
    const uploaded = await client.uploadBytes(data, { contentType: "image/gif", tempBlobUuid: "first" });
    assert.equal(uploaded.method, "inline");
    assert.notEqual(uploaded.tempBlobUuid, "first");
    const inline = server.json(1);
    assert.equal(Buffer.from(inline.contentBase64, "base64").toString(), "GIF89a");
    assert.equal(inline.contentType, "image/gif");
    const refused = await client
      .uploadBytes(data, { contentType: "image/gif", method: "presigned" })
      .catch((e) => e);
    assert.equal(refused.name, "UploadError");
  } finally {
    await server.close();
  }
});

test("uploads are checked before anything is sent", async () => {
  const server = await fakeServer(() => ({ body: {} }));
  try {
    const client = clientOf(server);
    await assert.rejects(client.uploadBytes(new Uint8Array(0), { contentType: "image/png" }), RangeError);
    await assert.rejects(client.uploadBytes(new Uint8Array(1), { contentType: "text/plain" }), TypeError);
    assert.equal(server.requests.length, 0);
  } finally {
    await server.close();
  }
});

test("dates and the generated call facts", () => {
  assert.equal(isoDate(new Date("2026-07-01T09:30:00.250+02:00")), "2026-07-01T07:30:00.250Z");
  assert.equal(isoDate("2026-07-01T09:30:00+02:00"), "2026-07-01T09:30:00+02:00");
  assert.equal(PROCEDURES["schedule-photoapp-story"].clientTimeoutSeconds, 120);
  assert.equal(PROCEDURES["generate-uuid"].clientTimeoutSeconds, 30);
  assert.equal(PROCEDURES["create-draft"].renderInput, true);
});

// The SDK against a running storypost (tests/integration/client/test_sdk_ts.py starts the
// stack, makes the organizations and connects a sandbox account, then runs this file):
//   STORYPOST_BASE_URL, STORYPOST_API_TOKEN         an organization with a photoapp account
//   STORYPOST_PHOTOAPP_USERNAME                      that account
//   STORYPOST_OTHER_BASE_URL, STORYPOST_OTHER_TOKEN  another organization
//   STORYPOST_LIMITED_BASE_URL, STORYPOST_LIMITED_TOKEN  an organization whose bucket it empties
// Without them (a plain `npm test`) every test is skipped.

import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { test } from "node:test";

import {
  AuthenticationError,
  BadRequestError,
  NO_RETRY,
  PollPolicy,
  RateLimitPacer,
  RateLimitedError,
  RetryPolicy,
  StorypostClient,
} from "../dist/index.js";

const env = process.env;
const skip = env.STORYPOST_BASE_URL ? false : "no stack (STORYPOST_BASE_URL unset)";
// Polls fast enough for tests, still with backoff.
const POLL = new PollPolicy({ initialIntervalMs: 500, maxIntervalMs: 3000, timeoutMs: 240_000 });
const PNG = Buffer.from(
  "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==",
  "base64",
);
const PAGE =
  "<!doctype html><html><body style='margin:0;width:1080px;height:1920px;" +
  "background:linear-gradient(160deg,#3d5afe,#00897b)'><photoapp-story>" +
  "<h1 style='font-size:96px;color:#fff'>TypeScript SDK</h1>" +
  '<photoapp-hashtag hashtag="typescript" design="rainbow"></photoapp-hashtag>' +
  "</photoapp-story></body></html>";

function client(options = {}) {
  return new StorypostClient(env.STORYPOST_BASE_URL, env.STORYPOST_API_TOKEN, { poll: POLL, ...options });
}

test("a story is scheduled and waited for until executed", { skip }, async () => {
  const sdk = client();
  const scheduled = await sdk.schedulePhotoappStory({
    html: PAGE,
    photoappUsername: env.STORYPOST_PHOTOAPP_USERNAME,
  });
  const again = await sdk.schedulePhotoappStory({
    html: PAGE,
    photoappUsername: env.STORYPOST_PHOTOAPP_USERNAME,
    storyPostUuid: scheduled.storyPostUuid,
  });
  assert.equal(scheduled.status, "scheduled");
  assert.deepEqual(again, scheduled, "the same UUID again is idempotent");
  const seen = [];
  const final = await sdk.waitForStory(scheduled.storyPostUuid, {
    onStatus: (answer) => seen.push(answer.status),
  });
  assert.equal(final.status, "executed", JSON.stringify(final));
  assert.ok(final.previewUrl, "an executed story has its preview");
  assert.equal(seen.at(-1), "executed");

  // Another organization's token does not see the story: not found, not someone else's data.
  const other = new StorypostClient(env.STORYPOST_OTHER_BASE_URL, env.STORYPOST_OTHER_TOKEN);
  const error = await other.statusPhotoappStory({ storyPostUuid: scheduled.storyPostUuid }).catch((e) => e);
  assert.ok(error instanceof BadRequestError, String(error));
  assert.match(error.errorMessage, /not found/);
  assert.ok(error.requestId);
  // … and its token does not work on this organization's base URL.
  const wrongOrg = new StorypostClient(env.STORYPOST_BASE_URL, env.STORYPOST_OTHER_TOKEN);
  const refused = await wrongOrg.generateUuid().catch((e) => e);
  assert.ok(refused instanceof AuthenticationError);
  assert.deepEqual(refused.body, { errorMessage: "not authenticated" });
  assert.equal(refused.attempts, 1);
});

test("a validation error carries the spec's validation body and the request id", { skip }, async () => {
  const error = await client()
    .statusPhotoappStory({ storyPostUuid: "not-a-uuid" }, { requestId: "ts-sdk-validation-1" })
    .catch((e) => e);
  assert.ok(error instanceof BadRequestError, String(error));
  assert.equal(error.status, 400);
  assert.equal(error.errorMessage, "invalid params for procedure: status-photoapp-story");
  assert.deepEqual(error.validationErrorExplanation, { storyPostUuid: ["not a valid uuid"] });
  assert.equal(error.validation.procedureName, "status-photoapp-story");
  assert.equal(error.paramsJsonSchema.additionalProperties, false);
  assert.equal(error.requestId, "ts-sdk-validation-1");
  assert.equal(error.attempts, 1);

  const unknown = await client().call("generate-uuid", { storyPostUid: "x" }).catch((e) => e);
  assert.deepEqual(unknown.validationErrorExplanation, { storyPostUid: ["disallowed key"] });
});

test("an upload: presigned with progress, then existing, then inline", { skip }, async () => {
  const sdk = client();
  const progress = [];
  const uuid = randomUUID();
  const uploaded = await sdk.uploadBytes(PNG, {
    contentType: "image/png",
    tempBlobUuid: uuid,
    progress: (sent, total) => progress.push([sent, total]),
  });
  assert.equal(uploaded.method, "presigned");
  assert.equal(uploaded.tempBlobUuid, uuid);
  assert.deepEqual(progress[0], [0, PNG.length]);
  assert.deepEqual(progress.at(-1), [PNG.length, PNG.length]);
  const again = await sdk.uploadBytes(PNG, { contentType: "image/png", tempBlobUuid: uuid });
  assert.equal(again.method, "existing");
  assert.equal(again.url, uploaded.url);
  const inline = await sdk.uploadBytes(PNG, { contentType: "image/png", method: "inline" });
  assert.equal(inline.method, "inline");
  for (const url of [uploaded.url, inline.url]) {
    const fetched = await fetch(url);
    assert.equal(fetched.status, 200);
    assert.deepEqual(Buffer.from(await fetched.arrayBuffer()), PNG);
  }
});

/** Spends the limited organization's bucket until the API answers 429; that answer. */
async function emptyTheBucket() {
  const spender = new StorypostClient(env.STORYPOST_LIMITED_BASE_URL, env.STORYPOST_LIMITED_TOKEN, {
    retry: NO_RETRY,
    pacing: false,
  });
  for (let round = 0; round < 10; round++) {
    const answers = await Promise.allSettled(Array.from({ length: 30 }, () => spender.generateUuid()));
    const limited = answers.find((a) => a.status === "rejected" && a.reason instanceof RateLimitedError);
    if (limited) {
      return limited.reason;
    }
    const other = answers.find((a) => a.status === "rejected");
    if (other) {
      throw other.reason;
    }
  }
  throw new Error("the bucket never ran empty");
}

test("a 429 is waited out: Retry-After, then the retry succeeds", { skip }, async () => {
  const limited = await emptyTheBucket();
  assert.equal(limited.status, 429);
  assert.equal(limited.errorCode, "RATE_LIMITED");
  assert.ok(limited.retryAfterMs >= 1000);
  assert.ok(limited.requestId);
  // The bucket is empty and nobody else spends: the first attempt meets the 429 (a token
  // comes back every second, so it may slip through: then the bucket is emptied again).
  for (let round = 0; ; round++) {
    const retries = [];
    const patient = new StorypostClient(env.STORYPOST_LIMITED_BASE_URL, env.STORYPOST_LIMITED_TOKEN, {
      retry: new RetryPolicy({ baseDelayMs: 200, jitterMs: 100 }),
      pacing: false,
      onRetry: (_attempt, delay, error) => retries.push([delay, error]),
    });
    const answer = await patient.generateUuid();
    assert.match(answer.uuid, /^[0-9a-f-]{36}$/);
    if (retries.length === 0 && round < 3) {
      await emptyTheBucket();
      continue;
    }
    assert.ok(retries.length > 0, "a retry was made");
    for (const [delay, error] of retries) {
      assert.ok(error instanceof RateLimitedError);
      assert.ok(delay >= error.retryAfterMs, "Retry-After is waited for");
    }
    break;
  }
});

test("pacing: after a 429 the client waits for the next token before its next call", { skip }, async () => {
  await emptyTheBucket();
  const paced = [];
  const probe = new StorypostClient(env.STORYPOST_LIMITED_BASE_URL, env.STORYPOST_LIMITED_TOKEN, {
    retry: NO_RETRY,
    pacing: new RateLimitPacer(),
    onPace: (ms) => paced.push(ms),
  });
  let first;
  try {
    first = await probe.generateUuid();
  } catch (error) {
    assert.ok(error instanceof RateLimitedError, String(error));
  }
  if (first === undefined) {
    // The 429 said nothing remains: the next call waits for its token (about a second),
    // then goes through without a retry.
    const answer = await probe.generateUuid();
    assert.ok(answer.uuid);
    assert.equal(paced.length, 1);
    assert.ok(paced[0] > 0 && paced[0] <= 2000, String(paced[0]));
  }
});

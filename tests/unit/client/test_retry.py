"""The SDK's retry guidance against a local server: attempts, delays, same body, Retry-After."""

from __future__ import annotations

import uuid
from typing import Any

import httpx
import pytest

from storypost_client import (
    PROCEDURES,
    ApiConnectionError,
    ApiTimeoutError,
    AsyncStorypostClient,
    AuthenticationError,
    BadRequestError,
    RateLimitedError,
    RetryPolicy,
    ServerError,
    StorypostClient,
    StorypostError,
    UnavailableError,
)
from tests.unit.client.support import ORG_PATH, Reply, closed_port_url, scripted

TOKEN = "sp_test-token"
# Small delays keep the tests fast; the bounds checked are the policy's own formula.
FAST = RetryPolicy(base_delay=0.1, jitter=0.05)
# Scheduling slack on a busy 2-core machine: a wait may run late, never early.
SLACK = 0.4
STORY = {"storyPostUuid": "bc604f8c-650a-46ed-8726-def3cdf9d0c0", "status": "scheduled"}


def busy(status: int, **headers: str) -> Reply:
    return Reply(status, {"errorMessage": "busy", "errorCode": "RATE_LIMITED"}, headers)


def test_429_and_503_then_success_retries_with_the_same_body_and_backoff() -> None:
    replies = [busy(429), busy(503), Reply(200, STORY)]
    retries: list[tuple[int, float]] = []
    with (
        scripted(replies) as server,
        StorypostClient(
            server.base_url,
            TOKEN,
            retry=FAST,
            on_retry=lambda attempt, delay, _: retries.append((attempt, delay)),
        ) as client,
    ):
        answer = client.schedule_photoapp_story(photoapp_username="alice", html="<p>hi</p>")
    assert answer == STORY
    assert server.paths() == [f"{ORG_PATH}/schedule-photoapp-story"] * 3
    bodies = [seen.body for seen in server.seen]
    assert bodies[0] == bodies[1] == bodies[2]
    sent = server.seen[0].json()
    # The UUID was made on the client (uuid4), once, and sent with every attempt.
    assert uuid.UUID(sent["storyPostUuid"]).version == 4
    assert sent == {
        "photoappUsername": "alice",
        "html": "<p>hi</p>",
        "storyPostUuid": sent["storyPostUuid"],
    }
    for seen in server.seen:
        assert seen.headers["Authorization"] == f"Bearer {TOKEN}"
        assert seen.headers["Content-Type"] == "application/json"
    # Waits: retry n waits base * 2**(n-1) plus 0-50 ms of jitter.
    assert [attempt for attempt, _ in retries] == [1, 2]
    for (attempt, delay), gap in zip(retries, server.gaps(), strict=True):
        low = 0.1 * 2 ** (attempt - 1)
        assert low <= delay < low + 0.05
        assert delay - 0.01 <= gap < delay + SLACK


def test_gives_up_after_five_attempts() -> None:
    policy = RetryPolicy(base_delay=0.05, jitter=0.05)
    with (
        scripted([busy(503)] * 6) as server,
        StorypostClient(server.base_url, TOKEN, retry=policy) as client,
        pytest.raises(UnavailableError) as caught,
    ):
        client.generate_uuid()
    assert len(server.seen) == 5
    assert caught.value.attempts == 5
    assert caught.value.status == 503
    assert caught.value.error_message == "busy"
    # 0.05, 0.1, 0.2, 0.4 s (+ 0-50 ms jitter) between the five attempts.
    for n, gap in enumerate(server.gaps(), start=1):
        assert 0.05 * 2 ** (n - 1) - 0.01 <= gap < 0.05 * 2 ** (n - 1) + 0.05 + SLACK


def test_retry_after_is_honored() -> None:
    replies = [busy(429, **{"Retry-After": "1"}), Reply(200, {"uuid": str(uuid.uuid4())})]
    with (
        scripted(replies) as server,
        StorypostClient(server.base_url, TOKEN, retry=FAST) as client,
    ):
        client.generate_uuid()
    assert len(server.seen) == 2
    # Backoff alone would wait 0.1 s; Retry-After asks for 1 s.
    assert 1.0 <= server.gaps()[0] < 1.05 + SLACK


def test_retry_after_longer_than_the_policy_allows_is_not_waited_for() -> None:
    with (
        scripted([busy(429, **{"Retry-After": "3600"})]) as server,
        StorypostClient(server.base_url, TOKEN, retry=FAST) as client,
        pytest.raises(RateLimitedError) as caught,
    ):
        client.generate_uuid()
    assert len(server.seen) == 1
    assert caught.value.retry_after == 3600
    assert caught.value.error_code == "RATE_LIMITED"


VALIDATION_BODY = {
    "errorMessage": "invalid params for procedure: status-photoapp-story",
    "procedureName": "status-photoapp-story",
    "paramsJsonSchema": {"type": "object", "additionalProperties": False},
    "validationErrorExplanation": {"storyPostUuid": ["not a valid uuid"]},
}


@pytest.mark.parametrize(
    ("reply", "error_type"),
    [
        (Reply(400, VALIDATION_BODY), BadRequestError),
        (Reply(401, {"errorMessage": "not authenticated"}), AuthenticationError),
        (Reply(500, {"errorMessage": "internal server error"}), ServerError),
        (Reply(501, {"errorMessage": "procedure x is not available yet"}), ServerError),
    ],
)
def test_no_retry_on_400_401_500(reply: Reply, error_type: type[StorypostError]) -> None:
    with (
        scripted([reply, Reply(200, STORY)]) as server,
        StorypostClient(server.base_url, TOKEN, retry=FAST) as client,
        pytest.raises(error_type) as caught,
    ):
        client.status_photoapp_story(story_post_uuid="nope")
    assert len(server.seen) == 1
    error = caught.value
    assert isinstance(error, (BadRequestError, AuthenticationError, ServerError))
    assert error.status == reply.status
    assert error.error_message == reply.body["errorMessage"]
    assert error.attempts == 1
    if isinstance(error, BadRequestError):
        assert error.validation_error_explanation == {"storyPostUuid": ["not a valid uuid"]}
        assert error.params_json_schema == VALIDATION_BODY["paramsJsonSchema"]


def test_a_proxy_page_on_502_is_retried_and_reported_readably() -> None:
    page = b"<html><body>502 Bad Gateway</body></html>"
    with (
        scripted([Reply(502, raw=page)] * 2) as server,
        StorypostClient(
            server.base_url, TOKEN, retry=RetryPolicy(max_attempts=2, base_delay=0.05, jitter=0)
        ) as client,
        pytest.raises(UnavailableError) as caught,
    ):
        client.list_photoapp_users()
    assert len(server.seen) == 2
    assert "502 Bad Gateway" in caught.value.error_message
    assert caught.value.error_code is None


def test_connection_refused_is_retried_then_raised() -> None:
    retries: list[int] = []
    with (
        StorypostClient(
            closed_port_url() + ORG_PATH,
            TOKEN,
            retry=RetryPolicy(base_delay=0.01, jitter=0.01),
            on_retry=lambda attempt, _delay, _error: retries.append(attempt),
        ) as client,
        pytest.raises(ApiConnectionError) as caught,
    ):
        client.generate_uuid()
    assert retries == [1, 2, 3, 4]
    assert caught.value.attempts == 5
    assert isinstance(caught.value.__cause__, httpx.ConnectError)


def test_a_read_timeout_is_retried_with_the_same_uuid() -> None:
    replies = [Reply(200, {"draftUuid": "x"}, delay=1.5), Reply(200, {"draftUuid": "y"})]
    with (
        scripted(replies) as server,
        StorypostClient(server.base_url, TOKEN, retry=FAST) as client,
    ):
        answer = client.create_draft(html="<p>x</p>", timeout=0.3)
    assert answer == {"draftUuid": "y"}
    assert len(server.seen) == 2
    assert server.seen[0].body == server.seen[1].body
    assert server.seen[0].json()["draftUuid"] == server.seen[1].json()["draftUuid"]


def test_a_read_timeout_after_the_last_attempt_is_an_api_timeout() -> None:
    with (
        scripted([Reply(200, {}, delay=1.0)] * 2) as server,
        StorypostClient(
            server.base_url, TOKEN, retry=RetryPolicy(max_attempts=2, base_delay=0.01, jitter=0)
        ) as client,
        pytest.raises(ApiTimeoutError),
    ):
        client.generate_uuid(timeout=0.2)
    assert len(server.seen) == 2


def test_procedures_the_client_does_not_know_are_not_retried() -> None:
    with (
        scripted([busy(503), Reply(200, {})]) as server,
        StorypostClient(server.base_url, TOKEN, retry=FAST) as client,
        pytest.raises(UnavailableError),
    ):
        client.call("some-future-procedure", {"a": 1})
    assert len(server.seen) == 1


def test_read_timeouts_come_from_the_catalog() -> None:
    seen: dict[str, Any] = {}

    def answer(request: httpx.Request) -> httpx.Response:
        seen[request.url.path.rsplit("/", 1)[-1]] = request.extensions["timeout"]
        return httpx.Response(200, json={})

    http = httpx.Client(transport=httpx.MockTransport(answer))
    with StorypostClient("http://api.test/o/1/api/v1", TOKEN, http_client=http) as client:
        for name in PROCEDURES:
            client.call(name, {})
        client.call("status-draft", {}, timeout=7.5)
    http.close()
    render = {
        "create-draft",
        "schedule-photoapp-story",
        "schedule-photoapp-reel",
        "schedule-clipapp-post",
        "schedule-social-post",
    }
    for name in PROCEDURES:
        if name == "status-draft":
            continue
        assert seen[name]["read"] == (120.0 if name in render else 30.0), name
        assert seen[name]["connect"] == 10.0
    assert seen["status-draft"]["read"] == 7.5


def test_policy_bounds() -> None:
    policy = RetryPolicy()
    for retry, base in enumerate((1.0, 2.0, 4.0, 8.0), start=1):
        for _ in range(20):
            delay = policy.delay(retry)
            assert delay is not None
            assert base <= delay < base + 1.0
    assert RetryPolicy(max_delay=5.0).backoff(10) == 5.0
    fixed = RetryPolicy.fixed()
    assert all(2.0 <= (fixed.delay(n) or 0) < 3.0 for n in range(1, 5))
    assert policy.delay(1, retry_after=7.0) is not None
    assert 7.0 <= (policy.delay(1, retry_after=7.0) or 0) < 8.0
    assert policy.delay(1, retry_after=121.0) is None
    with pytest.raises(ValueError, match="max_attempts"):
        RetryPolicy(max_attempts=0)


async def test_async_client_retries_the_same_way() -> None:
    replies = [busy(429), busy(503), Reply(200, {"connectLinkUuid": "c", "connectLinkUrl": "u"})]
    with scripted(replies) as server:
        async with AsyncStorypostClient(server.base_url, TOKEN, retry=FAST) as client:
            answer = await client.create_connect_link(description="shop")
    assert answer["connectLinkUrl"] == "u"
    assert len(server.seen) == 3
    assert server.seen[0].body == server.seen[1].body == server.seen[2].body
    assert uuid.UUID(server.seen[0].json()["connectLinkUuid"]).version == 4
    assert 0.1 - 0.01 <= server.gaps()[0] < 0.15 + SLACK
    assert 0.2 - 0.01 <= server.gaps()[1] < 0.25 + SLACK


async def test_async_client_gives_up_and_does_not_retry_a_400() -> None:
    with scripted([busy(503)] * 5 + [Reply(400, VALIDATION_BODY)]) as server:
        async with AsyncStorypostClient(server.base_url, TOKEN, retry=FAST) as client:
            with pytest.raises(UnavailableError) as unavailable:
                await client.generate_uuid()
            with pytest.raises(BadRequestError) as bad:
                await client.status_photoapp_story(story_post_uuid="nope")
    assert unavailable.value.attempts == 5
    assert len(server.seen) == 6
    assert bad.value.validation_error_explanation == {"storyPostUuid": ["not a valid uuid"]}


def test_the_retry_decision_of_both_clients_needs_no_call() -> None:
    retries: list[int] = []
    client = StorypostClient(
        "http://127.0.0.1:9/api/v1",
        TOKEN,
        retry=RetryPolicy(max_attempts=2, base_delay=0.5, jitter=0.0),
        on_retry=lambda attempt, _delay, _error: retries.append(attempt),
    )
    with client:
        known = client._endpoint.request("generate-uuid", {}, None)
        refused = httpx.ConnectError("refused")
        assert client._retry_wait(known, 1, refused) == 0.5
        assert retries == [1]
        with pytest.raises(ApiConnectionError) as caught:
            client._retry_wait(known, 2, refused)
        assert caught.value.__cause__ is refused
        # A procedure newer than the client is never retried; its API error is raised as is.
        newer = client._endpoint.request("some-new-procedure", {"a": 1}, None)
        busy_answer = UnavailableError(procedure="some-new-procedure", status=503, body={})
        with pytest.raises(UnavailableError) as unretried:
            client._retry_wait(newer, 1, busy_answer)
        assert unretried.value is busy_answer
    assert retries == [1]
    assert newer.content == b'{"a":1}'

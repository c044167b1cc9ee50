"""The SDK against the real stack: what works today, and its errors as the edge answers them."""

from __future__ import annotations

import asyncio
import uuid

import pytest

from storypost_client import (
    NO_RETRY,
    AuthenticationError,
    BadRequestError,
    NotFoundError,
    RateLimitedError,
    RetryPolicy,
    StorypostError,
)
from tests.integration.client.conftest import async_client, rate_limit_exhausted, sync_client
from tests.support.api import Api, Org


def test_generate_uuid_sync(org: Org) -> None:
    with sync_client(org) as client:
        first = client.generate_uuid()
        second = client.generate_uuid()
    assert uuid.UUID(first["uuid"]).version == 4
    assert first["uuid"] != second["uuid"]


async def test_generate_uuid_async(org: Org) -> None:
    async with async_client(org) as client:
        answers = await asyncio.gather(*(client.generate_uuid() for _ in range(3)))
    assert len({answer["uuid"] for answer in answers}) == 3


def test_a_wrong_token_is_an_authentication_error_without_retries(org: Org) -> None:
    with (
        sync_client(Org(org.organization_id, org.token + "x", org.base_url)) as client,
        pytest.raises(AuthenticationError) as caught,
    ):
        client.generate_uuid()
    assert caught.value.status == 401
    assert caught.value.error_message == "not authenticated"
    assert caught.value.body == {"errorMessage": "not authenticated"}
    assert caught.value.attempts == 1


def test_validation_errors_carry_the_explanation(org: Org) -> None:
    with sync_client(org) as client:
        with pytest.raises(BadRequestError) as bad_uuid:
            client.status_photoapp_story(story_post_uuid="not-a-uuid")
        with pytest.raises(BadRequestError) as unknown_key:
            client.call("generate-uuid", {"storyPostUid": "x"})
    error = bad_uuid.value
    assert error.status == 400
    assert error.error_message == "invalid params for procedure: status-photoapp-story"
    assert error.validation_error_explanation == {"storyPostUuid": ["not a valid uuid"]}
    assert error.params_json_schema is not None
    assert error.params_json_schema["additionalProperties"] is False
    assert error.request_id
    assert unknown_key.value.validation_error_explanation == {"storyPostUid": ["disallowed key"]}


def test_render_input_rule_is_an_expected_error(org: Org) -> None:
    # Both url and html: the edge refuses it before any service is asked.
    with sync_client(org) as client, pytest.raises(BadRequestError) as caught:
        client.create_draft(html="<p>x</p>", url="https://example.com/")
    assert caught.value.error_message == "exactly one of url or html must be given (both were)"
    assert caught.value.validation_error_explanation is None


def test_an_unknown_procedure_is_not_found(org: Org) -> None:
    with sync_client(org) as client, pytest.raises(NotFoundError) as caught:
        client.call("schedule-story", {})
    assert caught.value.status == 404
    assert caught.value.error_message == "unknown procedure: schedule-story"


async def test_rate_limit_is_reported_and_retried_after_retry_after(
    api: Api, fresh_org: Org
) -> None:
    retries: list[tuple[float, StorypostError]] = []
    patient = RetryPolicy(base_delay=0.2, jitter=0.1)
    async with (
        async_client(fresh_org, retry=NO_RETRY) as impatient,
        async_client(
            fresh_org, retry=patient, on_retry=lambda _n, delay, e: retries.append((delay, e))
        ) as retrying,
    ):
        async with rate_limit_exhausted(api, fresh_org):
            with pytest.raises(RateLimitedError) as caught:
                for _ in range(5):  # a refilled token may slip through; the next one will not
                    await impatient.generate_uuid()
        # Empty again, and no one else spending: the patient client waits as told, then gets
        # a refilled token (one a second).
        async with rate_limit_exhausted(api, fresh_org):
            pass
        answer = await retrying.generate_uuid()
    error = caught.value
    assert error.status == 429
    assert error.error_code == "RATE_LIMITED"
    assert error.retry_after is not None and error.retry_after >= 1
    assert error.attempts == 1
    assert uuid.UUID(answer["uuid"])
    for delay, failure in retries:
        assert isinstance(failure, RateLimitedError)
        assert failure.retry_after is not None
        assert delay >= failure.retry_after

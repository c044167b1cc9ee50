"""Deliveries to a real local HTTPS receiver: headers, bodies, subscriptions, signatures."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from storypost.webhook.v1 import webhook_pb2 as pb
from storypost_runtime.outbox import Event
from tests.integration.webhooks.harness import Harness
from tests.support.events import CLIPAPP, REEL, SOCIAL, STORY, make_event, social_event, story_event
from webhook_svc.signing import verify

pytestmark = pytest.mark.integration


def story_case(org_id: str) -> tuple[Event, dict[str, Any]]:
    event = story_event(org_id, "failed", error_message="the account is offline")
    return event, {
        "event": STORY,
        "storyPostUuid": event.data["storyPostUuid"],
        "status": "failed",
        "errorMessage": "the account is offline",
    }


def social_case(org_id: str) -> tuple[Event, dict[str, Any]]:
    event = social_event(org_id, "executed", permalink="https://linknet.example/p/1")
    return event, {
        "event": SOCIAL,
        "socialPostUuid": event.data["socialPostUuid"],
        "socialAccountId": "acct-linknet-1",
        "platform": "LINKNET",
        "status": "executed",
        "permalink": "https://linknet.example/p/1",
    }


@pytest.mark.parametrize("case", [story_case, social_case], ids=["story", "social"])
async def test_an_event_arrives_with_the_spec_headers_and_every_field(
    harness: Harness,
    org_id: str,
    path: str,
    case: Callable[[str], tuple[Event, dict[str, Any]]],
) -> None:
    """The event and the body v1 delivers for it (every field but `occurredAt`)."""
    webhook = await harness.add(org_id, path)
    assert list(webhook.events) == [STORY, SOCIAL]
    event, body = case(org_id)
    await harness.publish(event)

    [got] = await harness.receiver.wait_count(path, 1)
    assert got.header("content-type") == "application/json"
    assert got.header("x-service-event") == body["event"]
    assert got.json == {**body, "occurredAt": json.loads(event.to_message())["occurredAt"]}
    assert "test" not in got.json
    assert got.header("x-service-signature") is None  # unsigned by default, as v1 says

    [delivery] = await harness.wait_deliveries(
        org_id, lambda found: bool(found) and found[0].status == pb.DELIVERY_STATUS_SUCCEEDED
    )
    assert got.delivery == delivery.delivery_uuid
    assert delivery.event_id == event.id and delivery.webhook_id == webhook.webhook_id
    assert delivery.attempts == 1 and delivery.last_response_code == 200
    assert delivery.payload_json.encode() == got.body
    assert delivery.last_latency_ms >= 0 and delivery.last_error == ""


async def test_a_url_receives_only_the_events_it_subscribed_to(
    harness: Harness, org_id: str, path: str
) -> None:
    # The spec's rule as data: a story-only URL (as URLs added before social events were).
    await harness.add(org_id, path, events=[STORY])
    other_path = path + "-reels"
    await harness.add(org_id, other_path, events=[REEL])
    reel = make_event(REEL, org_id, {"reelPostUuid": "r-1", "status": "executed"})
    clip = make_event(CLIPAPP, org_id, {"clipappPostUuid": "c-1", "status": "executed"})
    story = story_event(org_id)
    await harness.publish(social_event(org_id), reel, clip, story)

    [got] = await harness.receiver.wait_count(path, 1)
    assert got.json["storyPostUuid"] == story.data["storyPostUuid"]
    [reel_got] = await harness.receiver.wait_count(other_path, 1)
    assert reel_got.json["event"] == REEL and reel_got.json["reelPostUuid"] == "r-1"
    # Nothing else arrives: the log holds exactly the two deliveries.
    found = await harness.wait_deliveries(org_id, lambda f: len(f) >= 2)
    assert sorted(d.event for d in found) == sorted([STORY, REEL])
    assert len(harness.receiver.received(path)) == 1


async def test_events_of_another_organization_never_arrive(
    harness: Harness, org_id: str, path: str
) -> None:
    await harness.add(org_id, path)
    await harness.publish(story_event("someone-else"), story_event(org_id, "scheduled"))
    [got] = await harness.receiver.wait_count(path, 1)
    assert got.json["status"] == "scheduled"
    assert await harness.deliveries("someone-else") == []


async def test_signed_deliveries_carry_a_verifiable_signature(
    harness: Harness, org_id: str, path: str
) -> None:
    secret = "whsec-0123456789abcdef"
    webhook = await harness.add(org_id, path, signing_secret=secret)
    assert webhook.signed
    listed = await harness.stub.ListWebhooks(pb.ListWebhooksRequest(organization_id=org_id))
    assert secret not in str(listed)
    await harness.publish(story_event(org_id))
    [got] = await harness.receiver.wait_count(path, 1)
    header = got.header("x-service-signature")
    assert header is not None and header.startswith("t=")
    assert verify(secret, header, got.body)
    assert not verify("another-secret-0123", header, got.body)

"""'send test': one test payload to one URL, whatever events it receives."""

from __future__ import annotations

import uuid

import grpc
import pytest

from storypost.webhook.v1 import webhook_pb2 as pb
from tests.integration.webhooks.harness import Harness, rpc_error
from tests.support.events import SOCIAL, STORY
from tests.support.webhook_receiver import Answer

pytestmark = pytest.mark.integration


async def test_send_test_posts_one_test_payload_even_to_a_social_only_url(
    harness: Harness, org_id: str, path: str
) -> None:
    webhook = await harness.add(org_id, path, events=[SOCIAL])
    delivery = await harness.stub.SendTest(
        pb.SendTestRequest(organization_id=org_id, webhook_id=webhook.webhook_id)
    )
    # The answer waits for the attempt: the outcome is in it.
    assert delivery.status == pb.DELIVERY_STATUS_SUCCEEDED and delivery.test
    assert delivery.attempts == 1 and delivery.last_response_code == 200
    [got] = harness.receiver.received(path)
    assert got.header("x-service-event") == STORY
    assert got.delivery == delivery.delivery_uuid
    body = got.json
    assert set(body) == {"event", "storyPostUuid", "status", "occurredAt", "test"}
    assert body["event"] == STORY and body["status"] == "executed" and body["test"] is True
    uuid.UUID(body["storyPostUuid"])
    assert body["occurredAt"].endswith("Z")

    second = await harness.stub.SendTest(
        pb.SendTestRequest(organization_id=org_id, webhook_id=webhook.webhook_id)
    )
    assert second.delivery_uuid != delivery.delivery_uuid
    bodies = [r.json["storyPostUuid"] for r in harness.receiver.received(path)]
    assert len(set(bodies)) == 2  # a random storyPostUuid each time


async def test_a_failed_test_is_reported_and_not_retried(
    harness: Harness, org_id: str, path: str
) -> None:
    harness.receiver.default(path, Answer(404))
    webhook = await harness.add(org_id, path)
    delivery = await harness.stub.SendTest(
        pb.SendTestRequest(organization_id=org_id, webhook_id=webhook.webhook_id)
    )
    assert delivery.status == pb.DELIVERY_STATUS_FAILED
    assert delivery.last_response_code == 404 and delivery.last_error == "HTTP 404"
    fetched = await harness.stub.GetDelivery(
        pb.GetDeliveryRequest(organization_id=org_id, delivery_uuid=delivery.delivery_uuid)
    )
    assert fetched.status == pb.DELIVERY_STATUS_FAILED and fetched.attempts == 1
    assert len(harness.receiver.received(path)) == 1


async def test_send_test_to_an_unknown_webhook_is_not_found(harness: Harness, org_id: str) -> None:
    error = await rpc_error(
        harness.stub.SendTest(pb.SendTestRequest(organization_id=org_id, webhook_id="nope"))
    )
    assert error.code() == grpc.StatusCode.NOT_FOUND

"""Retries keep the delivery id: after 500s, after timeouts, until the schedule runs out."""

from __future__ import annotations

import pytest

from storypost.webhook.v1 import webhook_pb2 as pb
from tests.integration.webhooks.conftest import ATTEMPT_TIMEOUT
from tests.integration.webhooks.harness import Harness, rpc_error
from tests.support.events import story_event
from tests.support.webhook_receiver import Answer

pytestmark = pytest.mark.integration


def finished(found: list[pb.Delivery]) -> bool:
    return bool(found) and found[0].status != pb.DELIVERY_STATUS_PENDING


async def test_retries_after_500s_with_the_same_delivery_id(
    harness: Harness, org_id: str, path: str
) -> None:
    harness.receiver.answer(path, Answer(500), Answer(503))
    await harness.add(org_id, path)
    event = story_event(org_id)
    await harness.publish(event)

    got = await harness.receiver.wait_count(path, 3)
    assert len({r.delivery for r in got}) == 1
    assert len({r.body for r in got}) == 1  # the same bytes every time
    assert got[1].at - got[0].at >= 0.3  # the first wait is 0.4 s (jitter 10 %)
    [delivery] = await harness.wait_deliveries(org_id, finished)
    assert delivery.status == pb.DELIVERY_STATUS_SUCCEEDED
    assert delivery.delivery_uuid == got[0].delivery
    assert delivery.attempts == 3 and delivery.last_response_code == 200


async def test_retries_after_a_timeout_with_the_same_delivery_id(
    harness: Harness, org_id: str, path: str
) -> None:
    harness.receiver.answer(path, Answer(200, delay=ATTEMPT_TIMEOUT + 1))
    await harness.add(org_id, path)
    await harness.publish(story_event(org_id))

    got = await harness.receiver.wait_count(path, 2)
    assert got[0].delivery == got[1].delivery
    [delivery] = await harness.wait_deliveries(org_id, finished)
    assert delivery.status == pb.DELIVERY_STATUS_SUCCEEDED and delivery.attempts == 2


async def test_a_delivery_fails_when_the_schedule_runs_out_and_can_be_redelivered(
    harness: Harness, org_id: str, path: str
) -> None:
    harness.receiver.default(path, Answer(500))
    await harness.add(org_id, path)
    await harness.publish(story_event(org_id))

    [delivery] = await harness.wait_deliveries(org_id, finished, timeout=20)
    assert delivery.status == pb.DELIVERY_STATUS_FAILED
    assert delivery.attempts == 4  # the first and one per wait of the schedule
    assert delivery.last_response_code == 500 and delivery.last_error == "HTTP 500"
    assert not delivery.HasField("next_attempt_at")
    assert len(harness.receiver.received(path)) == 4

    harness.receiver.default(path, Answer(200))
    again = await harness.stub.Redeliver(
        pb.RedeliverRequest(organization_id=org_id, delivery_uuid=delivery.delivery_uuid)
    )
    assert again.delivery_uuid == delivery.delivery_uuid
    got = await harness.receiver.wait_count(path, 5)
    assert {r.delivery for r in got} == {delivery.delivery_uuid}
    [done] = await harness.wait_deliveries(
        org_id, lambda f: f[0].status == pb.DELIVERY_STATUS_SUCCEEDED
    )
    assert done.attempts == 5 and done.last_response_code == 200


async def test_redeliver_is_scoped_to_the_organization(
    harness: Harness, org_id: str, path: str
) -> None:
    await harness.add(org_id, path)
    await harness.publish(story_event(org_id))
    [delivery] = await harness.wait_deliveries(org_id, finished)
    error = await rpc_error(
        harness.stub.Redeliver(
            pb.RedeliverRequest(organization_id="intruder", delivery_uuid=delivery.delivery_uuid)
        )
    )
    assert error.code().name == "NOT_FOUND"

"""Webhook URLs over gRPC: the 5-URL and https rules (also under racing adds), SSRF, removal."""

from __future__ import annotations

import asyncio

import grpc
import pytest

from storypost.webhook.v1 import webhook_pb2 as pb
from storypost_runtime.status import details_from
from tests.integration.webhooks.harness import Harness, rpc_error
from tests.support.events import SOCIAL, STORY, story_event

pytestmark = pytest.mark.integration


async def add(
    harness: Harness, org_id: str, url: str, events: list[str] | None = None
) -> pb.Webhook:
    return await harness.stub.AddWebhook(
        pb.AddWebhookRequest(organization_id=org_id, url=url, events=events or [])
    )


async def test_at_most_five_urls_also_when_adds_race(harness: Harness, org_id: str) -> None:
    urls = [harness.receiver.url(f"/race/{org_id}/{n}") for n in range(8)]
    results = await asyncio.gather(
        *(add(harness, org_id, url) for url in urls),
        return_exceptions=True,
    )
    added = [r for r in results if isinstance(r, pb.Webhook)]
    refused = [r for r in results if isinstance(r, grpc.aio.AioRpcError)]
    assert len(added) == 5 and len(refused) == 3
    for error in refused:
        assert error.code() == grpc.StatusCode.FAILED_PRECONDITION
        assert "at most 5 webhook URLs" in (error.details() or "")
        assert details_from(error).reason == "WEBHOOK_LIMIT"
    listed = await harness.stub.ListWebhooks(pb.ListWebhooksRequest(organization_id=org_id))
    assert sorted(w.webhook_id for w in listed.webhooks) == sorted(w.webhook_id for w in added)

    # Removing one makes room again.
    await harness.stub.RemoveWebhook(
        pb.RemoveWebhookRequest(organization_id=org_id, webhook_id=added[0].webhook_id)
    )
    again = await add(harness, org_id, harness.receiver.url(f"/race/{org_id}/again"))
    assert isinstance(again, pb.Webhook)


@pytest.mark.parametrize(
    ("url", "says"),
    [
        ("http://example.com/hook", "must use https://"),
        ("http://127.0.0.1:9/hook", "must use https://"),
        ("ftp://example.com/hook", "must start with https://"),
        ("https://user:secret@example.com/hook", "must not contain a user name or password"),
        ("https://example.com/hook#part", "must not contain a #fragment"),
        ("not a url", "must not contain spaces"),
        ("", "a URL is required"),
        # SSRF: private, link-local (cloud metadata), unique-local, mapped loopback-ish.
        ("https://10.1.2.3/hook", "10.1.2.3, a private address"),
        ("https://169.254.169.254/latest/meta-data", "link-local or cloud metadata"),
        ("https://[fd00:ec2::254]/hook", "a private address"),
        ("https://100.100.100.200/hook", "a private address"),
        ("https://[::ffff:192.168.1.1]/hook", "a private address"),
        ("https://0.0.0.0/hook", "refused"),
    ],
)
async def test_bad_and_inward_urls_are_refused_with_a_clear_message(
    harness: Harness, org_id: str, url: str, says: str
) -> None:
    error = await rpc_error(add(harness, org_id, url))
    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert says in (error.details() or "")
    assert "url" in details_from(error).field_violations
    listed = await harness.stub.ListWebhooks(pb.ListWebhooksRequest(organization_id=org_id))
    assert list(listed.webhooks) == []


async def test_unknown_events_are_refused_and_the_same_url_is_a_safe_retry(
    harness: Harness, org_id: str, path: str
) -> None:
    url = harness.receiver.url(path)
    error = await rpc_error(add(harness, org_id, url, ["draft.status_changed"]))
    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "unknown event 'draft.status_changed'" in (error.details() or "")

    first = await add(harness, org_id, url, [STORY])
    again = await add(harness, org_id, url, [STORY])
    assert isinstance(first, pb.Webhook) and isinstance(again, pb.Webhook)
    assert again.webhook_id == first.webhook_id
    conflict = await rpc_error(add(harness, org_id, url, [STORY, SOCIAL]))
    assert conflict.code() == grpc.StatusCode.ALREADY_EXISTS
    assert first.webhook_id in (conflict.details() or "")


async def test_removed_url_gets_no_more_deliveries(
    harness: Harness, org_id: str, path: str
) -> None:
    webhook = await harness.add(org_id, path)
    await harness.publish(story_event(org_id))
    await harness.receiver.wait_count(path, 1)
    removed = await harness.stub.RemoveWebhook(
        pb.RemoveWebhookRequest(organization_id=org_id, webhook_id=webhook.webhook_id)
    )
    assert removed.webhook_id == webhook.webhook_id
    gone = await rpc_error(
        harness.stub.RemoveWebhook(
            pb.RemoveWebhookRequest(organization_id=org_id, webhook_id=webhook.webhook_id)
        )
    )
    assert gone.code() == grpc.StatusCode.NOT_FOUND
    # An event published after the removal must not arrive; one for a second URL shows the
    # consumer has gone past it.
    second = path + "-second"
    await harness.add(org_id, second)
    await harness.publish(story_event(org_id))
    await harness.receiver.wait_count(second, 1)
    assert len(harness.receiver.received(path)) == 1


async def test_another_organization_cannot_see_or_remove_a_webhook(
    harness: Harness, org_id: str, path: str
) -> None:
    webhook = await harness.add(org_id, path)
    listed = await harness.stub.ListWebhooks(pb.ListWebhooksRequest(organization_id="other"))
    assert webhook.webhook_id not in [w.webhook_id for w in listed.webhooks]
    error = await rpc_error(
        harness.stub.RemoveWebhook(
            pb.RemoveWebhookRequest(organization_id="other", webhook_id=webhook.webhook_id)
        )
    )
    assert error.code() == grpc.StatusCode.NOT_FOUND

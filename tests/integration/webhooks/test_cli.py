"""`storypost admin` webhook commands against the running services."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from typing import Any

import pytest

from storypost.account.v1 import account_pb2, account_pb2_grpc
from storypost.testing.stack import stack_channel
from storypost_cli.stack import EmbeddedStack
from tests.support.webhook_receiver import Receiver
from webhook_svc.signing import verify

pytestmark = pytest.mark.integration


async def storypost(stack: EmbeddedStack, *args: str, stdin: str = "") -> tuple[int, Any, str]:
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "storypost_cli",
        "admin",
        *args,
        env={**os.environ, **stack.env()},
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await process.communicate(stdin.encode())
    assert process.returncode is not None
    parsed = json.loads(out) if out.strip() else None
    return process.returncode, parsed, err.decode()


async def test_admin_commands_add_test_list_redeliver_and_remove(
    webhook_stack: EmbeddedStack, receiver: Receiver, path: str
) -> None:
    async with stack_channel(webhook_stack.env(), "account", 10) as channel:
        accounts = account_pb2_grpc.AccountServiceStub(channel)
        org = await accounts.CreateOrganization(account_pb2.CreateOrganizationRequest(name="cli"))
    org_id = org.organization_id
    secret = "cli-secret-0123456789"

    code, added, err = await storypost(
        webhook_stack,
        "add-webhook", "--org", org_id, "--url", receiver.url(path),
        "--events", "photoapp_story_post.status_changed", "--signing-secret-stdin",
        stdin=secret + "\n",
    )  # fmt: skip
    assert code == 0, err
    assert added["events"] == ["photoapp_story_post.status_changed"] and added["signed"]
    assert secret not in json.dumps(added)
    webhook_id = added["webhookId"]

    code, listed, _ = await storypost(webhook_stack, "list-webhooks", "--org", org_id)
    assert code == 0 and [w["webhookId"] for w in listed] == [webhook_id]

    code, tested, err = await storypost(
        webhook_stack, "send-test", "--org", org_id, "--webhook", webhook_id
    )
    assert code == 0, err
    assert tested["status"] == "succeeded" and tested["test"] is True
    assert tested["payload"]["test"] is True and tested["lastResponseCode"] == 200
    [got] = receiver.received(path)
    header = got.header("x-service-signature")
    assert header is not None and verify(secret, header, got.body)

    code, log, _ = await storypost(webhook_stack, "list-deliveries", "--org", org_id)
    assert code == 0 and [d["deliveryUuid"] for d in log] == [tested["deliveryUuid"]]

    code, again, err = await storypost(
        webhook_stack, "redeliver", "--org", org_id, "--delivery", tested["deliveryUuid"]
    )
    assert code == 0, err
    assert again["status"] == "pending" and again["deliveryUuid"] == tested["deliveryUuid"]
    second = await receiver.wait_count(path, 2)
    assert second[1].delivery == tested["deliveryUuid"]

    code, removed, _ = await storypost(
        webhook_stack, "remove-webhook", "--org", org_id, "--webhook", webhook_id
    )
    assert code == 0 and removed["removed"] is True
    code, listed, _ = await storypost(webhook_stack, "list-webhooks", "--org", org_id)
    assert code == 0 and listed == []


async def test_admin_commands_fail_with_clear_messages(
    webhook_stack: EmbeddedStack, receiver: Receiver
) -> None:
    code, _, err = await storypost(
        webhook_stack, "add-webhook", "--org", "no-such-org", "--url", receiver.url("/x")
    )
    assert code == 3 and "organization no-such-org not found" in err

    async with stack_channel(webhook_stack.env(), "account", 10) as channel:
        accounts = account_pb2_grpc.AccountServiceStub(channel)
        org = await accounts.CreateOrganization(account_pb2.CreateOrganizationRequest(name="cli"))
    code, _, err = await storypost(
        webhook_stack, "add-webhook", "--org", org.organization_id, "--url", "http://example.com/h"
    )
    assert code == 3 and "must use https://" in err

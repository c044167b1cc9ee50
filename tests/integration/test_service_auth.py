"""Issue #21 item 3: every service of the running stack answers signed callers only, and
platform tokens only publish-svc; a render-svc credential (what a renderer exploit would hold)
gets none. The same on processes and on containers."""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Awaitable, Callable
from typing import Any

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from storypost.account.v1 import account_pb2 as apb
from storypost.account.v1 import account_pb2_grpc
from storypost.publish.v1 import publish_pb2 as ppb
from storypost.publish.v1 import publish_pb2_grpc
from storypost.render.v1 import render_pb2 as rpb
from storypost.render.v1 import render_pb2_grpc
from storypost.testing.stack import StackHandle
from storypost.webhook.v1 import webhook_pb2 as wpb
from storypost.webhook.v1 import webhook_pb2_grpc
from storypost_runtime.grpc_client import aio_channel
from storypost_runtime.service_auth import (
    EDGE,
    PUBLISH_SVC,
    RENDER_SVC,
    ServiceCredential,
    TokenSigner,
)
from tests.support.accounts import connect_account
from tests.support.api import Api, only_in_passes

pytestmark = pytest.mark.integration

Call = Callable[[grpc.aio.Channel], Awaitable[Any]]

# One harmless read per service.
READS: dict[str, Call] = {
    "account": lambda c: account_pb2_grpc.AccountServiceStub(c).GetOrganization(
        apb.GetOrganizationRequest(organization_id="nobody")
    ),
    "render": lambda c: render_pb2_grpc.RenderServiceStub(c).GetRendering(
        rpb.GetRenderingRequest(organization_id="nobody", rendering_id="none")
    ),
    "publish": lambda c: publish_pb2_grpc.PublishServiceStub(c).GetStory(
        ppb.GetPostRequest(organization_id="nobody", post_uuid="none")
    ),
    "webhook": lambda c: webhook_pb2_grpc.WebhookServiceStub(c).ListWebhooks(
        wpb.ListWebhooksRequest(organization_id="nobody")
    ),
}


async def code_of(call: Awaitable[Any]) -> grpc.StatusCode:
    try:
        await call
    except grpc.aio.AioRpcError as error:
        code: grpc.StatusCode = error.code()
        return code
    return grpc.StatusCode.OK


@pytest.mark.parametrize("service", list(READS))
async def test_every_service_refuses_unsigned_and_stranger_calls(
    storypost_stack: StackHandle, service: str
) -> None:
    address = storypost_stack.env[f"STORYPOST_{service.upper()}_ADDR"]
    stranger = TokenSigner(credential=ServiceCredential.generate(EDGE))
    for signer in (None, stranger):
        async with aio_channel(address, 10.0, signer) as channel:
            assert await code_of(READS[service](channel)) == grpc.StatusCode.UNAUTHENTICATED
    async with aio_channel(address, 10.0) as channel:
        # Health answers the kubelet's unsigned probe.
        health = await health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest())
        assert health.status == health_pb2.HealthCheckResponse.SERVING
    async with storypost_stack.channel(service) as channel:
        # The stack's own caller gets a domain answer (not found or empty), not a refusal.
        assert await code_of(READS[service](channel)) in (
            grpc.StatusCode.OK,
            grpc.StatusCode.NOT_FOUND,
            grpc.StatusCode.INVALID_ARGUMENT,
        )


async def test_platform_tokens_answer_publish_svc_only(
    storypost_stack: StackHandle, api: Api
) -> None:
    org = await api.admin.create_org("service auth org")
    account = await connect_account(storypost_stack, org, "photoapp", "serviceauth")
    request = apb.GetAccessTokenRequest(
        organization_id=org.organization_id,
        account=apb.AccountRef(social_account_id=account.social_account_id),
    )
    for caller in (RENDER_SVC, EDGE, None):
        async with storypost_stack.channel("account", 10.0, caller=caller) as channel:
            answer = account_pb2_grpc.AccountServiceStub(channel).GetAccessToken(request)
            assert await code_of(answer) == grpc.StatusCode.PERMISSION_DENIED, caller
    async with storypost_stack.channel("account", 10.0, caller=PUBLISH_SVC) as channel:
        token = await account_pb2_grpc.AccountServiceStub(channel).GetAccessToken(request)
        assert token.access_token


async def _start_publish_svc(env: dict[str, str], seconds: float) -> tuple[int | None, str]:
    """publish-svc started beside the stack's with `env`: (exit code or None if still serving
    after `seconds`, its stderr)."""
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "publish_svc",
        env={**os.environ, **env, "STORYPOST_GRPC_PORT": "0", "STORYPOST_METRICS_PORT": "-1"},
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    try:
        _, err = await asyncio.wait_for(process.communicate(), timeout=seconds)
    except TimeoutError:
        process.terminate()
        _, err = await process.communicate()
        return None, err.decode(errors="replace")
    return process.returncode, err.decode(errors="replace")


async def test_a_publish_replica_signed_as_another_caller_stops_at_start(
    request: pytest.FixtureRequest, storypost_stack: StackHandle
) -> None:
    """A replica with the operator's key (the client's env) would claim due posts and be
    refused every call: it exits 2 naming STORYPOST_SERVICE_KEY; with publish-svc's own key
    it serves (still running after 12 s)."""
    only_in_passes(request, "processes", why="starts a publish-svc process beside the stack's")
    code, stderr = await _start_publish_svc(storypost_stack.env, 60)
    assert code == 2, stderr[-3000:]
    assert "publish-svc cannot start: account-svc refuses this component's identity" in stderr
    assert "STORYPOST_SERVICE_KEY" in stderr
    assert storypost_stack.env["STORYPOST_SERVICE_KEY"] not in stderr
    own = {**storypost_stack.env, "STORYPOST_SERVICE_KEY": storypost_stack.credentials[PUBLISH_SVC]}
    code, stderr = await _start_publish_svc(own, 12)
    assert code is None, stderr[-3000:]

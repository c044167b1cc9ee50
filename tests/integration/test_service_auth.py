"""Issue #21 item 3: every service of the running stack answers signed callers only, and
platform tokens only publish-svc; a render-svc credential (what a renderer exploit would hold)
gets none. The same on processes and on containers."""

from __future__ import annotations

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
from tests.support.api import Api

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

"""What the webhook tests do over and over: add a URL, publish events, read deliveries."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import KW_ONLY

import grpc
from nats.js import JetStreamContext

from storypost.webhook.v1 import webhook_pb2 as pb
from storypost.webhook.v1 import webhook_pb2_grpc
from storypost_runtime.component import component
from storypost_runtime.outbox import Event
from tests.support.events import publish
from tests.support.webhook_receiver import Receiver


@component
class Harness:
    _: KW_ONLY
    stub: webhook_pb2_grpc.WebhookServiceAsyncStub
    js: JetStreamContext
    receiver: Receiver

    async def add(
        self,
        organization_id: str,
        path: str,
        events: Sequence[str] = (),
        signing_secret: str = "",
    ) -> pb.Webhook:
        return await self.stub.AddWebhook(
            pb.AddWebhookRequest(
                organization_id=organization_id,
                url=self.receiver.url(path),
                events=list(events),
                signing_secret=signing_secret,
            )
        )

    async def publish(self, *events: Event, retry_for: float = 0.0) -> None:
        for event in events:
            await publish(self.js, event, retry_for=retry_for)

    async def deliveries(
        self, organization_id: str, webhook_id: str = "", limit: int = 200
    ) -> list[pb.Delivery]:
        reply = await self.stub.ListDeliveries(
            pb.ListDeliveriesRequest(
                organization_id=organization_id, limit=limit, webhook_id=webhook_id
            )
        )
        return list(reply.deliveries)

    async def wait_deliveries(
        self,
        organization_id: str,
        done: Callable[[list[pb.Delivery]], bool],
        timeout: float = 15.0,
    ) -> list[pb.Delivery]:
        """Polls the delivery log until `done` holds (the log is what the app shows)."""
        async with asyncio.timeout(timeout):
            while True:
                found = await self.deliveries(organization_id)
                if done(found):
                    return found
                await asyncio.sleep(0.2)


async def rpc_error(call: Awaitable[object]) -> grpc.aio.AioRpcError:
    """Awaits a call expected to fail and returns its error."""
    try:
        await call
    except grpc.aio.AioRpcError as error:
        return error
    raise AssertionError("the call succeeded")

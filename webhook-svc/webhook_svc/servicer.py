"""Thin gRPC methods of WebhookService: proto in, domain call, proto out."""

from __future__ import annotations

from typing import Any

import grpc

from storypost.webhook.v1 import webhook_pb2 as pb
from storypost.webhook.v1 import webhook_pb2_grpc
from storypost_runtime.protobuf import timestamp
from webhook_svc.deliveries import Delivery, DeliveryStore, Status
from webhook_svc.directory import WebhookDirectory
from webhook_svc.dispatcher import Dispatcher
from webhook_svc.webhooks import Webhook, Webhooks, check_organization

Context = grpc.aio.ServicerContext[Any, Any]

_STATUS = {
    Status.PENDING: pb.DELIVERY_STATUS_PENDING,
    Status.SUCCEEDED: pb.DELIVERY_STATUS_SUCCEEDED,
    Status.FAILED: pb.DELIVERY_STATUS_FAILED,
}


def webhook_pb(webhook: Webhook) -> pb.Webhook:
    return pb.Webhook(
        webhook_id=webhook.webhook_id,
        organization_id=webhook.organization_id,
        url=webhook.url,
        events=webhook.events,
        created_at=timestamp(webhook.created_at),
        signed=webhook.signed,
    )


def delivery_pb(delivery: Delivery) -> pb.Delivery:
    pending = delivery.status is Status.PENDING
    return pb.Delivery(
        delivery_uuid=delivery.delivery_id,
        organization_id=delivery.organization_id,
        webhook_id=delivery.webhook_id,
        event=delivery.event,
        status=_STATUS[delivery.status],
        attempts=delivery.attempts,
        last_response_code=delivery.last_response_code,
        last_latency_ms=delivery.last_latency_ms,
        next_attempt_at=timestamp(delivery.due_at if pending else None),
        created_at=timestamp(delivery.created_at),
        payload_json=delivery.body,
        last_error=delivery.last_error,
        url=delivery.url,
        event_id=delivery.event_id,
        test=delivery.test,
        occurred_at=timestamp(delivery.occurred_at),
        last_attempt_at=timestamp(delivery.last_attempt_at),
    )


class WebhookServicer(webhook_pb2_grpc.WebhookServiceServicer):
    def __init__(
        self,
        webhooks: Webhooks,
        directory: WebhookDirectory,
        store: DeliveryStore,
        dispatcher: Dispatcher,
    ) -> None:
        self._webhooks = webhooks
        self._directory = directory
        self._store = store
        self._dispatcher = dispatcher

    async def AddWebhook(self, request: pb.AddWebhookRequest, context: Context) -> pb.Webhook:
        webhook = await self._webhooks.add(
            request.organization_id, request.url, list(request.events), request.signing_secret
        )
        self._directory.forget(webhook.organization_id)
        return webhook_pb(webhook)

    async def ListWebhooks(
        self, request: pb.ListWebhooksRequest, context: Context
    ) -> pb.ListWebhooksResponse:
        found = await self._webhooks.list(request.organization_id)
        return pb.ListWebhooksResponse(webhooks=[webhook_pb(w) for w in found])

    async def RemoveWebhook(self, request: pb.RemoveWebhookRequest, context: Context) -> pb.Webhook:
        removed = await self._webhooks.remove(request.organization_id, request.webhook_id)
        self._directory.forget(removed.organization_id)
        return webhook_pb(removed)

    async def SendTest(self, request: pb.SendTestRequest, context: Context) -> pb.Delivery:
        check_organization(request.organization_id)
        delivery = await self._dispatcher.send_test(request.organization_id, request.webhook_id)
        return delivery_pb(delivery)

    async def ListDeliveries(
        self, request: pb.ListDeliveriesRequest, context: Context
    ) -> pb.ListDeliveriesResponse:
        check_organization(request.organization_id)
        found = await self._store.list(
            request.organization_id, request.limit, request.webhook_id or None
        )
        return pb.ListDeliveriesResponse(deliveries=[delivery_pb(d) for d in found])

    async def GetDelivery(self, request: pb.GetDeliveryRequest, context: Context) -> pb.Delivery:
        check_organization(request.organization_id)
        delivery = await self._store.get(request.organization_id, request.delivery_uuid)
        return delivery_pb(delivery)

    async def Redeliver(self, request: pb.RedeliverRequest, context: Context) -> pb.Delivery:
        check_organization(request.organization_id)
        delivery = await self._dispatcher.redeliver(request.organization_id, request.delivery_uuid)
        return delivery_pb(delivery)

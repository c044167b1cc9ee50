"""Thin gRPC methods of WebhookService: proto in, domain call, proto out."""

from __future__ import annotations

from dataclasses import KW_ONLY
from typing import Any

import grpc

from storypost.webhook.v1 import webhook_pb2 as pb
from storypost.webhook.v1 import webhook_pb2_grpc
from storypost_runtime.component import component
from webhook_svc.convert import delivery_pb, webhook_pb
from webhook_svc.deliveries import DeliveryStore
from webhook_svc.directory import WebhookDirectory
from webhook_svc.dispatcher import Dispatcher
from webhook_svc.webhooks import Webhooks, check_organization

Context = grpc.aio.ServicerContext[Any, Any]


@component
class WebhookServicer(webhook_pb2_grpc.WebhookServiceServicer):
    _: KW_ONLY
    webhooks: Webhooks
    directory: WebhookDirectory
    store: DeliveryStore
    dispatcher: Dispatcher

    async def AddWebhook(self, request: pb.AddWebhookRequest, context: Context) -> pb.Webhook:
        webhook = await self.webhooks.add(
            request.organization_id, request.url, list(request.events), request.signing_secret
        )
        self.directory.forget(webhook.organization_id)
        return webhook_pb(webhook)

    async def ListWebhooks(
        self, request: pb.ListWebhooksRequest, context: Context
    ) -> pb.ListWebhooksResponse:
        found = await self.webhooks.list(request.organization_id)
        return pb.ListWebhooksResponse(webhooks=[webhook_pb(w) for w in found])

    async def RemoveWebhook(self, request: pb.RemoveWebhookRequest, context: Context) -> pb.Webhook:
        removed = await self.webhooks.remove(request.organization_id, request.webhook_id)
        self.directory.forget(removed.organization_id)
        return webhook_pb(removed)

    async def SendTest(self, request: pb.SendTestRequest, context: Context) -> pb.Delivery:
        check_organization(request.organization_id)
        delivery = await self.dispatcher.send_test(request.organization_id, request.webhook_id)
        return delivery_pb(delivery)

    async def ListDeliveries(
        self, request: pb.ListDeliveriesRequest, context: Context
    ) -> pb.ListDeliveriesResponse:
        check_organization(request.organization_id)
        found = await self.store.list(
            request.organization_id, request.limit, request.webhook_id or None
        )
        return pb.ListDeliveriesResponse(deliveries=[delivery_pb(d) for d in found])

    async def GetDelivery(self, request: pb.GetDeliveryRequest, context: Context) -> pb.Delivery:
        check_organization(request.organization_id)
        delivery = await self.store.get(request.organization_id, request.delivery_uuid)
        return delivery_pb(delivery)

    async def Redeliver(self, request: pb.RedeliverRequest, context: Context) -> pb.Delivery:
        check_organization(request.organization_id)
        delivery = await self.dispatcher.redeliver(request.organization_id, request.delivery_uuid)
        return delivery_pb(delivery)

"""Conversions between webhook_svc's domain objects and its protos (the servicer's two sides)."""

from __future__ import annotations

from storypost.webhook.v1 import webhook_pb2 as pb
from storypost_runtime.protobuf import timestamp
from webhook_svc.deliveries import Delivery, Status
from webhook_svc.webhooks import Webhook

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

"""Settings → Webhooks: add and remove URLs (at most 5), choose events, send a test, the
delivery log with redeliver."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

import falcon
import grpc

from edge.web.action_page import Action, ActionPage
from edge.web.base import Form, field, fields
from edge.web.failures import page_errors
from edge.web.session import Viewer
from storypost.webhook.v1 import webhook_pb2 as pb
from storypost_runtime.vocabulary import ALL_EVENT_TYPES

WEBHOOK_LIMIT = 5
# (name, label, on by default): the spec's two first; reels and clipapp posts on request.
EVENTS = tuple((e.name, e.label, e.by_default) for e in ALL_EVENT_TYPES)
EVENT_LABELS = {name: label for name, label, _ in EVENTS}
DELIVERY_STATUS = {
    pb.DELIVERY_STATUS_PENDING: "pending",
    pb.DELIVERY_STATUS_SUCCEEDED: "succeeded",
    pb.DELIVERY_STATUS_FAILED: "failed",
}


def outcome(delivery: pb.Delivery) -> str:
    """One sentence about a delivery's last attempt."""
    answer = f"HTTP {delivery.last_response_code}" if delivery.last_response_code else "no answer"
    if delivery.status == pb.DELIVERY_STATUS_SUCCEEDED:
        return f"delivered: {answer} in {delivery.last_latency_ms} ms"
    if delivery.attempts == 0:
        return "queued; it is sent in a moment"
    why = delivery.last_error or answer
    if delivery.status == pb.DELIVERY_STATUS_FAILED:
        return f"failed: {why}"
    return f"not delivered yet ({why}); it will be retried"


class WebhooksPage(ActionPage):
    label = "webhooks"
    template = "webhooks.html"
    title = "Webhooks"
    blank_form = MappingProxyType({"error": "", "url": "", "chosen": None})

    def listing(self, viewer: Viewer) -> dict[str, Any]:
        org = viewer.organization_id
        hooks = list(
            self.web.webhooks.ListWebhooks(pb.ListWebhooksRequest(organization_id=org)).webhooks
        )
        deliveries = list(
            self.web.webhooks.ListDeliveries(
                pb.ListDeliveriesRequest(organization_id=org, limit=50)
            ).deliveries
        )
        urls = {hook.webhook_id: hook.url for hook in hooks}
        return {
            "webhooks": hooks,
            "deliveries": [
                {
                    "d": d,
                    "status": DELIVERY_STATUS.get(d.status, "pending"),
                    "outcome": outcome(d),
                    "removed": d.webhook_id not in urls,
                }
                for d in deliveries
            ],
            "events": EVENTS,
            "event_labels": EVENT_LABELS,
            "limit": WEBHOOK_LIMIT,
            "pending": any(d.status == pb.DELIVERY_STATUS_PENDING for d in deliveries),
        }

    def actions(self) -> Mapping[str, Action]:
        return {
            "add": self._add,
            "remove": self._remove,
            "test": self._test,
            "redeliver": self._redeliver,
        }

    def _add(self, req: falcon.Request, resp: falcon.Response, viewer: Viewer, form: Form) -> None:
        url = field(form, "url").strip()
        chosen = [name for name in fields(form, "events") if name in EVENT_LABELS]
        if not url or not chosen:
            self.show_page(
                req,
                resp,
                viewer,
                status=400,
                url=url,
                chosen=chosen,
                error="Enter the URL and choose at least one event.",
            )
            return
        try:
            self.web.webhooks.AddWebhook(
                pb.AddWebhookRequest(organization_id=viewer.organization_id, url=url, events=chosen)
            )
        except grpc.RpcError as error:
            self.show_refused(req, resp, viewer, error, url=url, chosen=chosen)
            return
        self.done(resp, viewer, self.path, f"Webhook {url} was added.")

    def _remove(
        self, req: falcon.Request, resp: falcon.Response, viewer: Viewer, form: Form
    ) -> None:
        with page_errors("This webhook"):
            removed = self.web.webhooks.RemoveWebhook(
                pb.RemoveWebhookRequest(
                    organization_id=viewer.organization_id, webhook_id=field(form, "webhook_id")
                )
            )
        self.done(resp, viewer, self.path, f"Webhook {removed.url} was removed.")

    def _test(self, req: falcon.Request, resp: falcon.Response, viewer: Viewer, form: Form) -> None:
        with page_errors("This webhook"):
            delivery = self.web.webhooks.SendTest(
                pb.SendTestRequest(
                    organization_id=viewer.organization_id, webhook_id=field(form, "webhook_id")
                ),
                timeout=15.0,
            )
        ok = delivery.status == pb.DELIVERY_STATUS_SUCCEEDED
        self.done(
            resp,
            viewer,
            self.path,
            f"Test to {delivery.url} {outcome(delivery)}.",
            "ok" if ok else "error",
        )

    def _redeliver(
        self, req: falcon.Request, resp: falcon.Response, viewer: Viewer, form: Form
    ) -> None:
        with page_errors("This delivery"):
            delivery = self.web.webhooks.Redeliver(
                pb.RedeliverRequest(
                    organization_id=viewer.organization_id,
                    delivery_uuid=field(form, "delivery_uuid"),
                )
            )
        self.done(
            resp,
            viewer,
            self.path,
            f"Delivery {delivery.delivery_uuid[:8]}… will be sent again now.",
            "info",
        )

"""`storypost admin` webhook commands: URLs, send test, the delivery log, redelivery."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from google.protobuf.timestamp_pb2 import Timestamp

from storypost.account.v1 import account_pb2
from storypost.webhook.v1 import webhook_pb2 as pb
from storypost.webhook.v1 import webhook_pb2_grpc
from storypost_cli.admin import AdminCommands, Stub
from storypost_cli.config import CliSettings
from storypost_cli.output import fail, print_json
from storypost_cli.parsers import add_org, subcommand
from storypost_runtime.grpc_client import sync_channel
from storypost_runtime.vocabulary import DEFAULT_EVENTS, OPT_IN_EVENTS

_STATUS = {
    pb.DELIVERY_STATUS_PENDING: "pending",
    pb.DELIVERY_STATUS_SUCCEEDED: "succeeded",
    pb.DELIVERY_STATUS_FAILED: "failed",
}


@contextmanager
def webhook_service(settings: CliSettings) -> Iterator[webhook_pb2_grpc.WebhookServiceStub]:
    channel = sync_channel(settings.webhook_addr, settings.grpc_deadline_seconds, settings.signer())
    try:
        yield webhook_pb2_grpc.WebhookServiceStub(channel)
    finally:
        channel.close()


def _time(stamp: Timestamp, present: bool = True) -> str | None:
    return stamp.ToJsonString() if present else None


def webhook_json(webhook: pb.Webhook) -> dict[str, Any]:
    return {
        "webhookId": webhook.webhook_id,
        "organizationId": webhook.organization_id,
        "url": webhook.url,
        "events": list(webhook.events),
        "signed": webhook.signed,
        "createdAt": _time(webhook.created_at),
    }


def delivery_json(delivery: pb.Delivery) -> dict[str, Any]:
    return {
        "deliveryUuid": delivery.delivery_uuid,
        "webhookId": delivery.webhook_id,
        "url": delivery.url,
        "event": delivery.event,
        "test": delivery.test,
        "status": _STATUS.get(delivery.status, "unknown"),
        "attempts": delivery.attempts,
        "lastResponseCode": delivery.last_response_code or None,
        "lastLatencyMs": delivery.last_latency_ms if delivery.attempts else None,
        "lastError": delivery.last_error or None,
        "lastAttemptAt": _time(delivery.last_attempt_at, delivery.HasField("last_attempt_at")),
        "nextAttemptAt": _time(delivery.next_attempt_at, delivery.HasField("next_attempt_at")),
        "occurredAt": _time(delivery.occurred_at),
        "createdAt": _time(delivery.created_at),
        "eventId": delivery.event_id,
        "payload": json.loads(delivery.payload_json) if delivery.payload_json else None,
    }


def add_webhook(args: argparse.Namespace, settings: CliSettings, accounts: Stub) -> None:
    secret = ""
    if args.signing_secret_stdin:
        secret = sys.stdin.readline().rstrip("\n")
        if not secret:
            fail("--signing-secret-stdin: standard input held no secret")
    # A mistyped organization id would otherwise store a URL nobody's events ever reach.
    accounts.GetOrganization(account_pb2.GetOrganizationRequest(organization_id=args.org))
    with webhook_service(settings) as webhooks:
        added = webhooks.AddWebhook(
            pb.AddWebhookRequest(
                organization_id=args.org,
                url=args.url,
                events=args.events or [],
                signing_secret=secret,
            )
        )
    print_json(webhook_json(added))


def list_webhooks(args: argparse.Namespace, settings: CliSettings, accounts: Stub) -> None:
    with webhook_service(settings) as webhooks:
        found = webhooks.ListWebhooks(pb.ListWebhooksRequest(organization_id=args.org))
    print_json([webhook_json(w) for w in found.webhooks])


def remove_webhook(args: argparse.Namespace, settings: CliSettings, accounts: Stub) -> None:
    with webhook_service(settings) as webhooks:
        removed = webhooks.RemoveWebhook(
            pb.RemoveWebhookRequest(organization_id=args.org, webhook_id=args.webhook)
        )
    print_json({**webhook_json(removed), "removed": True})


def send_test(args: argparse.Namespace, settings: CliSettings, accounts: Stub) -> None:
    with webhook_service(settings) as webhooks:
        delivery = webhooks.SendTest(
            pb.SendTestRequest(organization_id=args.org, webhook_id=args.webhook)
        )
    print_json(delivery_json(delivery))


def list_deliveries(args: argparse.Namespace, settings: CliSettings, accounts: Stub) -> None:
    with webhook_service(settings) as webhooks:
        found = webhooks.ListDeliveries(
            pb.ListDeliveriesRequest(
                organization_id=args.org, limit=args.limit, webhook_id=args.webhook or ""
            )
        )
    print_json([delivery_json(d) for d in found.deliveries])


def redeliver(args: argparse.Namespace, settings: CliSettings, accounts: Stub) -> None:
    with webhook_service(settings) as webhooks:
        delivery = webhooks.Redeliver(
            pb.RedeliverRequest(organization_id=args.org, delivery_uuid=args.delivery)
        )
    print_json(delivery_json(delivery))


def register(commands: AdminCommands) -> None:
    """Adds the webhook subcommands to `storypost admin`."""
    _add_webhook_commands(commands)
    _add_delivery_commands(commands)


def _add_webhook_commands(commands: AdminCommands) -> None:
    """add-webhook, list-webhooks, remove-webhook and send-test."""
    events_help = (
        f"events to receive (default: {' '.join(DEFAULT_EVENTS)}; "
        f"also available: {' '.join(OPT_IN_EVENTS)})"
    )
    p = subcommand(
        commands,
        "add-webhook",
        add_webhook,
        "add a webhook URL (at most 5, https only)",
        "storypost admin add-webhook --org org_1f2e3d --url https://hooks.example.com/storypost",
    )
    add_org(p)
    p.add_argument("--url", required=True, help="the https URL deliveries are POSTed to")
    p.add_argument("--events", nargs="+", metavar="EVENT", help=events_help)
    p.add_argument(
        "--signing-secret-stdin",
        action="store_true",
        help="read a signing secret (16-256 characters) from standard input; deliveries then "
        "carry X-Service-Signature",
    )

    p = subcommand(
        commands,
        "list-webhooks",
        list_webhooks,
        "list the organization's webhook URLs",
        "storypost admin list-webhooks --org org_1f2e3d",
    )
    add_org(p)

    p = subcommand(
        commands,
        "remove-webhook",
        remove_webhook,
        "remove a webhook URL",
        "storypost admin remove-webhook --org org_1f2e3d --webhook WEBHOOK_ID",
    )
    _add_webhook(p)

    p = subcommand(
        commands,
        "send-test",
        send_test,
        "send one test payload to a webhook URL",
        "storypost admin send-test --org org_1f2e3d --webhook WEBHOOK_ID",
    )
    _add_webhook(p)


def _add_delivery_commands(commands: AdminCommands) -> None:
    """list-deliveries and redeliver."""
    p = subcommand(
        commands,
        "list-deliveries",
        list_deliveries,
        "the latest deliveries, newest first",
        "storypost admin list-deliveries --org org_1f2e3d --limit 5",
    )
    add_org(p)
    p.add_argument("--webhook", help="only deliveries to this webhook id")
    p.add_argument("--limit", type=int, default=20, help="at most this many (1-200)")

    p = subcommand(
        commands,
        "redeliver",
        redeliver,
        "deliver one delivery again (same delivery id)",
        "storypost admin redeliver --org org_1f2e3d --delivery DELIVERY_UUID",
    )
    add_org(p)
    p.add_argument("--delivery", required=True, help="delivery uuid (see list-deliveries)")


def _add_webhook(parser: argparse.ArgumentParser) -> None:
    """The options naming one of an organization's webhooks."""
    add_org(parser)
    parser.add_argument("--webhook", required=True, help="webhook id (see list-webhooks)")

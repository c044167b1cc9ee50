"""Status events on the bus exactly as the publishers' outbox relay sends them (tests only)."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from nats.js import JetStreamContext

from storypost_runtime.bus import event_subject
from storypost_runtime.clock import truncate_to_millis
from storypost_runtime.outbox import Event

STORY = "photoapp_story_post.status_changed"
SOCIAL = "social_post.status_changed"
REEL = "photoapp_reel_post.status_changed"
CLIPAPP = "clipapp_post.status_changed"


def story_event(
    organization_id: str,
    status: str = "executed",
    *,
    story_post_uuid: str | None = None,
    error_message: str | None = None,
    occurred_at: datetime | None = None,
    request_id: str | None = None,
) -> Event:
    data: dict[str, Any] = {"storyPostUuid": story_post_uuid or str(uuid.uuid4()), "status": status}
    if error_message is not None:
        data["errorMessage"] = error_message
    return make_event(STORY, organization_id, data, occurred_at, request_id)


def social_event(
    organization_id: str,
    status: str = "executed",
    *,
    social_post_uuid: str | None = None,
    social_account_id: str = "acct-linknet-1",
    platform: str = "LINKNET",
    permalink: str | None = None,
    error_message: str | None = None,
    occurred_at: datetime | None = None,
) -> Event:
    data: dict[str, Any] = {
        "socialPostUuid": social_post_uuid or str(uuid.uuid4()),
        "socialAccountId": social_account_id,
        "platform": platform,
        "status": status,
    }
    if permalink is not None:
        data["permalink"] = permalink
    if error_message is not None:
        data["errorMessage"] = error_message
    return make_event(SOCIAL, organization_id, data, occurred_at)


def make_event(
    event_type: str,
    organization_id: str,
    data: Mapping[str, Any],
    occurred_at: datetime | None = None,
    request_id: str | None = None,
) -> Event:
    """An event as a publisher's outbox holds it (`occurredAt` is added to `data` on the bus)."""
    moment = truncate_to_millis(occurred_at or datetime.now(UTC))
    event = Event.new(event_type, organization_id, moment, data)
    if request_id is not None:
        event = Event(event.id, event.type, event.organization_id, moment, event.data, request_id)
    return event


async def publish(js: JetStreamContext, event: Event, *, retry_for: float = 0.0) -> None:
    """Publishes like the relay (subject, body, Nats-Msg-Id); with `retry_for`, keeps trying
    while NATS is down, as the relay does (JetStream drops a repeated id)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + retry_for
    while True:
        try:
            await js.publish(
                event_subject(event.type), event.to_message(), timeout=2.0, headers=event.headers()
            )
            return
        except Exception:
            if loop.time() >= deadline:
                raise
            await asyncio.sleep(0.2)

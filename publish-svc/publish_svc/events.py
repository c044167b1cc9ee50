"""The status event of a post, with exactly the fields the spec lists for its kind."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime
from typing import Any

from publish_svc.model import EVENT_TYPE, UUID_FIELD, Kind, Post, Status
from storypost_runtime.clock import iso_utc
from storypost_runtime.outbox import Event


def status_event(
    post: Post,
    status: Status,
    occurred_at: datetime,
    *,
    error_message: str | None = None,
    permalink: str | None = None,
    clipapp_status: str | None = None,
) -> Event:
    """Payload fields as in the spec's event tables; `occurredAt` is added by the relay."""
    data: dict[str, Any] = {UUID_FIELD[post.kind]: post.post_uuid, "status": status.value}
    if post.kind is Kind.SOCIAL:
        data["socialAccountId"] = post.account.social_account_id
        data["platform"] = post.account.platform
        if permalink:
            data["permalink"] = permalink
    if post.kind is Kind.CLIPAPP and clipapp_status:
        data["clipappStatus"] = clipapp_status
    if status is Status.FAILED and error_message:
        data["errorMessage"] = error_message
    return Event.new(EVENT_TYPE[post.kind], post.organization_id, occurred_at, data)


def rescheduled_event(post: Post, date: datetime, occurred_at: datetime) -> Event:
    """The `scheduled` event of a post moved to `date`, which it carries (ours, added: the
    spec's events have no date; a consumer that ignores unknown fields sees a `scheduled`)."""
    event = status_event(post, Status.SCHEDULED, occurred_at)
    return replace(event, data={**event.data, "date": iso_utc(date)})

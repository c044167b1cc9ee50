"""Shared pieces of the post procedures: JSON ⇄ publish-svc protobuf, and the render input
that every render procedure (create-draft too) sends."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any

from google.protobuf.message import Message
from google.protobuf.timestamp_pb2 import Timestamp

from edge.backends import Backends
from edge.config import EdgeSettings
from edge.procedures.base import CallContext, JsonObject
from storypost.publish.v1 import publish_pb2 as pb
from storypost.render.v1 import render_pb2 as rpb
from storypost_runtime.clock import iso_utc
from storypost_runtime.component import component
from storypost_runtime.protobuf import to_datetime
from storypost_runtime.vocabulary import PostStatus, ProtoWords

POST_STATUSES = ProtoWords.of(pb.PostStatus, "POST_STATUS", PostStatus)


@component
class PublishProcedures:
    """Base of the post areas: publish-svc, and the deadline of its calls that render first."""

    backends: Backends
    settings: EdgeSettings

    def _schedule(
        self,
        call: Callable[..., pb.ScheduleResponse],
        request: Message,
        uuid_field: str,
        *,
        current_status: bool = False,
    ) -> JsonObject:
        """A schedule procedure: publish-svc renders the design before it answers, so the call
        has the render deadline; its answer is `scheduled_json`'s, with the `date` the post
        took from its queue when the request named one (`queue_name`)."""
        reply = call(request, timeout=self.settings.render_deadline_seconds)
        body = scheduled_json(uuid_field, reply, current_status=current_status)
        if getattr(request, "queue_name", "") and reply.post.HasField("date"):
            body["date"] = iso_utc(to_datetime(reply.post.date))
        if reply.series_uuid:
            body["seriesUuid"] = reply.series_uuid
        return body


def repeat(value: Mapping[str, Any] | None) -> pb.Repeat | None:
    """A schedule call's `repeat` (validated by the schema); None when not given."""
    if value is None:
        return None
    return pb.Repeat(
        every=value.get("every", ""),
        count=value.get("count", 0),
        until=timestamp(value.get("until")),
        variants=[pb.RepeatVariant(**variant) for variant in value.get("variants", [])],
    )


def design(params: Mapping[str, Any]) -> rpb.Design:
    """The page to render; the edge already checked that exactly one of url/html is given."""
    if "url" in params:
        return rpb.Design(url=params["url"])
    return rpb.Design(html=params["html"])


def moment(value: str) -> datetime:
    """An ISO 8601 date-time the schema validated; RFC 3339 allows a lowercase `t` and `z`,
    which `fromisoformat` does not read."""
    return datetime.fromisoformat(value.upper())


def timestamp(value: str | None) -> Timestamp | None:
    """An ISO 8601 date-time (validated by the schema) as a protobuf Timestamp."""
    if value is None:
        return None
    stamp = Timestamp()
    stamp.FromDatetime(moment(value))
    return stamp


def post_json(uuid_field: str, post: pb.Post, *extra: str) -> JsonObject:
    """The status procedures' answer: required fields, then optional ones when present."""
    body: JsonObject = {uuid_field: post.post_uuid, "status": POST_STATUSES.word[post.status]}
    if post.status == pb.POST_STATUS_FAILED:
        body["errorMessage"] = post.error_message or "failed"
    optional = {
        "previewUrl": post.preview_url,
        "clipappStatus": post.clipapp_status,
        "permalink": post.permalink,
        "socialAccountId": post.social_account_id,
        "platform": post.platform,
        "postType": post.post_type,
        "date": iso_utc(to_datetime(post.date)) if post.HasField("date") else "",
    }
    for name in extra:
        if optional.get(name):
            body[name] = optional[name]
    return body


def scheduled_json(
    uuid_field: str, reply: pb.ScheduleResponse, *, current_status: bool = False
) -> JsonObject:
    """A schedule procedure's answer, the same for a repeated UUID (spec: Idempotency).

    Story, reel and clipapp answers are always `scheduled` (the spec's "always"), also when
    a repeat finds the post already publishing or done: status procedures tell where it
    stands. schedule-social-post answers with the current status (`current_status`).
    """
    status = POST_STATUSES.word[reply.post.status] if current_status else "scheduled"
    body: JsonObject = {uuid_field: reply.post.post_uuid, "status": status}
    if reply.warnings:
        body["warnings"] = list(reply.warnings)
    return body


def post_answer(
    call: Callable[..., pb.Post],
    ctx: CallContext,
    params: Mapping[str, Any],
    uuid_field: str,
    *extra: str,
) -> JsonObject:
    """A status or cancel procedure: one UUID in, the post out."""
    post = call(
        pb.GetPostRequest(organization_id=ctx.organization_id, post_uuid=params[uuid_field])
    )
    return post_json(uuid_field, post, *extra)

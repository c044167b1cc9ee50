"""Conversions between publish_svc's domain objects and its protos (the servicer's two sides)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from google.protobuf.timestamp_pb2 import Timestamp

from publish_svc.intake import Accepted, NewPost
from publish_svc.model import Kind, Post, Status
from publish_svc.post_params import Params, SocialParams
from publish_svc.queues import Queue
from publish_svc.series import RepeatAsked, SeriesView, Target
from storypost.publish.v1 import publish_pb2 as pb
from storypost_runtime.protobuf import timestamp, to_datetime
from storypost_runtime.vocabulary import PostStatus, ProtoWords

POST_STATUSES = ProtoWords.of(pb.PostStatus, "POST_STATUS", PostStatus)
KIND_PB = {
    Kind.STORY: pb.POST_KIND_STORY,
    Kind.REEL: pb.POST_KIND_REEL,
    Kind.CLIPAPP: pb.POST_KIND_CLIPAPP,
    Kind.SOCIAL: pb.POST_KIND_SOCIAL,
}
KIND_OF_PB = {value: key for key, value in KIND_PB.items()}


def moment_of(request: Any, name: str) -> datetime | None:
    if not request.HasField(name):
        return None
    moment = to_datetime(getattr(request, name))
    return moment


def date_of(request: Any) -> datetime | None:
    return moment_of(request, "date")


def post_pb(post: Post) -> pb.Post:
    account = {
        Kind.STORY: post.account.username,
        Kind.REEL: post.account.username,
        Kind.CLIPAPP: post.account.platform_account_id,
        Kind.SOCIAL: post.account.social_account_id,
    }[post.kind]
    return pb.Post(
        organization_id=post.organization_id,
        post_uuid=post.post_uuid,
        kind=KIND_PB[post.kind],
        status=POST_STATUSES.pb[post.status],
        error_message=(post.error_message or "") if post.status is Status.FAILED else "",
        preview_url=post.preview_url or "",
        clipapp_status=post.clipapp_status or "",
        permalink=post.permalink or "",
        date=timestamp(post.listed_at),
        social_account_id=post.account.social_account_id if post.kind is Kind.SOCIAL else "",
        platform=post.account.platform if post.kind is Kind.SOCIAL else "",
        account=account,
        created_at=timestamp(post.created_at),
        finished_at=timestamp(post.finished_at),
        post_type=(post.params.post_type or "") if isinstance(post.params, SocialParams) else "",
        warnings=post.warnings,
        connected_account_id=post.account.social_account_id,
        series_uuid=post.series_uuid or "",
    )


def accepted_pb(result: Accepted, series_uuid: str = "") -> pb.ScheduleResponse:
    return pb.ScheduleResponse(
        post=post_pb(result.post), warnings=result.warnings, series_uuid=series_uuid
    )


def repeat_asked(request: Any) -> RepeatAsked | None:
    """A schedule request's `repeat` (None when it has none)."""
    if not request.HasField("repeat"):
        return None
    repeat: pb.Repeat = request.repeat
    return RepeatAsked(
        every=repeat.every,
        count=repeat.count,
        until=moment_of(repeat, "until"),
        variants=[
            {
                "text": v.text,
                "caption": v.caption,
                "title": v.title,
                "description": v.description,
            }
            for v in repeat.variants
        ],
    )


def series_pb(view: SeriesView) -> pb.Series:
    return pb.Series(
        series_uuid=view.series_uuid,
        kind=KIND_PB[view.kind],
        status=view.status.value,
        occurrences=[
            pb.SeriesOccurrence(
                post_uuid=o.post_uuid,
                date=timestamp(o.date),
                status=POST_STATUSES.pb[o.status] if o.status else pb.POST_STATUS_FAILED,
            )
            for o in view.occurrences
        ],
        next_date=timestamp(view.next_date),
    )


def new_post[P: Params](request: Any, post_uuid: str, params: P) -> NewPost[P]:
    return NewPost(
        organization_id=request.organization_id,
        post_uuid=post_uuid,
        design=request.design,
        date=date_of(request),
        params=params,
        queue_name=request.queue_name,
    )


def target_of(request: Any, account: str) -> Target:
    return Target(account, getattr(request, "post_type", ""))


def queue_pb(queue: Queue) -> pb.Queue:
    return pb.Queue(
        social_account_id=queue.social_account_id,
        queue_name=queue.name,
        time_zone=queue.zone_name,
        slots=[pb.QueueSlot(weekday=s.weekday_name, time=s.time_text) for s in queue.slots],
        created_at=timestamp(queue.created_at),
        updated_at=timestamp(queue.updated_at),
    )


def stamps(moments: Sequence[datetime]) -> list[Timestamp]:
    """Timestamps of the instants, in order."""
    found: list[Timestamp] = []
    for moment in moments:
        stamp = Timestamp()
        stamp.FromDatetime(moment)
        found.append(stamp)
    return found

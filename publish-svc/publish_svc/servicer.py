"""Thin gRPC methods of PublishService: proto in, domain call, proto out."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

import grpc

from publish_svc.intake import Accepted, NewPost, PostIntake
from publish_svc.listing import ListQuery
from publish_svc.model import Kind, Post, Status
from publish_svc.posts import Posts
from storypost.publish.v1 import publish_pb2 as pb
from storypost.publish.v1 import publish_pb2_grpc
from storypost_runtime.errors import InvalidArgument
from storypost_runtime.protobuf import timestamp, to_datetime
from storypost_runtime.vocabulary import CLIPAPP_DEFAULT_PRIVACY_LEVEL, proto_name

Context = grpc.aio.ServicerContext[Any, Any]

STATUS_PB = {s: pb.PostStatus.Value(proto_name("POST_STATUS", s)) for s in Status}
STATUS_OF_PB = {value: key for key, value in STATUS_PB.items()}
KIND_PB = {
    Kind.STORY: pb.POST_KIND_STORY,
    Kind.REEL: pb.POST_KIND_REEL,
    Kind.CLIPAPP: pb.POST_KIND_CLIPAPP,
    Kind.SOCIAL: pb.POST_KIND_SOCIAL,
}
KIND_OF_PB = {value: key for key, value in KIND_PB.items()}


def _moment(request: Any, name: str) -> datetime | None:
    if not request.HasField(name):
        return None
    moment = to_datetime(getattr(request, name))
    return moment


def _date(request: Any) -> datetime | None:
    return _moment(request, "date")


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
        status=STATUS_PB[post.status],
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
        post_type=str(post.params.get("postType") or ""),
        warnings=post.warnings,
    )


def _accepted(result: Accepted) -> pb.ScheduleResponse:
    return pb.ScheduleResponse(post=post_pb(result.post), warnings=result.warnings)


def _new(kind: Kind, request: Any, post_uuid: str, params: dict[str, Any]) -> NewPost:
    return NewPost(
        kind=kind,
        organization_id=request.organization_id,
        post_uuid=post_uuid,
        design=request.design,
        date=_date(request),
        params=params,
    )


class PublishServicer(publish_pb2_grpc.PublishServiceServicer):
    def __init__(self, intake: PostIntake, posts: Posts) -> None:
        self._intake = intake
        self._posts = posts

    async def ScheduleStory(
        self, request: pb.ScheduleStoryRequest, context: Context
    ) -> pb.ScheduleResponse:
        params: dict[str, Any] = {
            "aiGenerated": request.ai_generated,
            "shareToLinknet": request.share_to_linknet,
        }
        if request.linknet_destination_id:
            params["linknetDestinationId"] = request.linknet_destination_id
        new = _new(Kind.STORY, request, request.story_post_uuid, params)
        return _accepted(await self._intake.story(new, request.photoapp_username))

    async def ScheduleReel(
        self, request: pb.ScheduleReelRequest, context: Context
    ) -> pb.ScheduleResponse:
        params: dict[str, Any] = {
            "caption": request.caption,
            "shareToFeed": request.share_to_feed,
            "aiGenerated": request.ai_generated,
        }
        if request.HasField("share_to_linknet"):
            params["shareToLinknet"] = request.share_to_linknet
        new = _new(Kind.REEL, request, request.reel_post_uuid, params)
        return _accepted(await self._intake.reel(new, request.photoapp_username))

    async def ScheduleClipappPost(
        self, request: pb.ScheduleClipappPostRequest, context: Context
    ) -> pb.ScheduleResponse:
        params: dict[str, Any] = {
            "title": request.title,
            "description": request.description,
            "privacyLevel": request.privacy_level or CLIPAPP_DEFAULT_PRIVACY_LEVEL,
            "disableDuet": request.disable_duet,
            "disableComment": request.disable_comment,
            "disableStitch": request.disable_stitch,
            "brandOrganic": request.brand_organic,
            "brandedContent": request.branded_content,
            "aiGenerated": request.ai_generated,
            "autoAudio": request.auto_audio,
        }
        if request.HasField("video_cover_timestamp_ms"):
            params["videoCoverTimestampMs"] = request.video_cover_timestamp_ms
        new = _new(Kind.CLIPAPP, request, request.clipapp_post_uuid, params)
        return _accepted(await self._intake.clipapp(new, request.clipapp_account_id))

    async def ScheduleSocialPost(
        self, request: pb.ScheduleSocialPostRequest, context: Context
    ) -> pb.ScheduleResponse:
        try:
            options = json.loads(request.options_json) if request.options_json else {}
        except ValueError:
            raise InvalidArgument("options must be a JSON object") from None
        if not isinstance(options, dict):
            raise InvalidArgument("options must be a JSON object")
        params: dict[str, Any] = {"text": request.text, "options": options}
        new = _new(Kind.SOCIAL, request, request.social_post_uuid, params)
        return _accepted(
            await self._intake.social(new, request.social_account_id, request.post_type)
        )

    async def GetStory(self, request: pb.GetPostRequest, context: Context) -> pb.Post:
        return post_pb(
            await self._posts.get(Kind.STORY, request.organization_id, request.post_uuid)
        )

    async def GetReel(self, request: pb.GetPostRequest, context: Context) -> pb.Post:
        return post_pb(await self._posts.get(Kind.REEL, request.organization_id, request.post_uuid))

    async def GetClipappPost(self, request: pb.GetPostRequest, context: Context) -> pb.Post:
        return post_pb(
            await self._posts.get(Kind.CLIPAPP, request.organization_id, request.post_uuid)
        )

    async def GetSocialPost(self, request: pb.GetPostRequest, context: Context) -> pb.Post:
        return post_pb(
            await self._posts.get(Kind.SOCIAL, request.organization_id, request.post_uuid)
        )

    async def CancelStory(self, request: pb.GetPostRequest, context: Context) -> pb.Post:
        return post_pb(
            await self._posts.cancel(Kind.STORY, request.organization_id, request.post_uuid)
        )

    async def CancelReel(self, request: pb.GetPostRequest, context: Context) -> pb.Post:
        return post_pb(
            await self._posts.cancel(Kind.REEL, request.organization_id, request.post_uuid)
        )

    async def CancelClipappPost(self, request: pb.GetPostRequest, context: Context) -> pb.Post:
        return post_pb(
            await self._posts.cancel(Kind.CLIPAPP, request.organization_id, request.post_uuid)
        )

    async def CancelSocialPost(self, request: pb.GetPostRequest, context: Context) -> pb.Post:
        return post_pb(
            await self._posts.cancel(Kind.SOCIAL, request.organization_id, request.post_uuid)
        )

    async def ListPosts(
        self, request: pb.ListPostsRequest, context: Context
    ) -> pb.ListPostsResponse:
        limit = request.limit or 100
        if not 1 <= limit <= 500:
            raise InvalidArgument("limit must be 1 to 500")
        query = ListQuery(
            request.organization_id,
            [KIND_OF_PB[k] for k in request.kinds if k in KIND_OF_PB],
            [STATUS_OF_PB[s] for s in request.statuses if s in STATUS_OF_PB],
            _moment(request, "date_from"),
            _moment(request, "date_to"),
        )
        page = await self._posts.list(query, request.page_token, limit)
        return pb.ListPostsResponse(
            posts=[post_pb(p) for p in page.posts],
            next_page_token=page.next_token,
            previous_page_token=page.previous_token,
        )

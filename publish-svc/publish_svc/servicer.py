"""Thin gRPC methods of PublishService: proto in, domain call, proto out."""

from __future__ import annotations

import json
from typing import Any

import grpc

from publish_svc.convert import KIND_OF_PB, STATUS_OF_PB, accepted_pb, moment_of, new_post, post_pb
from publish_svc.intake import PostIntake
from publish_svc.listing import ListQuery
from publish_svc.model import Kind
from publish_svc.posts import Posts
from storypost.publish.v1 import publish_pb2 as pb
from storypost.publish.v1 import publish_pb2_grpc
from storypost_runtime.errors import InvalidArgument
from storypost_runtime.vocabulary import CLIPAPP_DEFAULT_PRIVACY_LEVEL

Context = grpc.aio.ServicerContext[Any, Any]


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
        new = new_post(Kind.STORY, request, request.story_post_uuid, params)
        return accepted_pb(await self._intake.story(new, request.photoapp_username))

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
        new = new_post(Kind.REEL, request, request.reel_post_uuid, params)
        return accepted_pb(await self._intake.reel(new, request.photoapp_username))

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
        new = new_post(Kind.CLIPAPP, request, request.clipapp_post_uuid, params)
        return accepted_pb(await self._intake.clipapp(new, request.clipapp_account_id))

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
        new = new_post(Kind.SOCIAL, request, request.social_post_uuid, params)
        return accepted_pb(
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
            moment_of(request, "date_from"),
            moment_of(request, "date_to"),
        )
        page = await self._posts.list(query, request.page_token, limit)
        return pb.ListPostsResponse(
            posts=[post_pb(p) for p in page.posts],
            next_page_token=page.next_token,
            previous_page_token=page.previous_token,
        )

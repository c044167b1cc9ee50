"""Thin gRPC methods of PublishService: proto in, domain call, proto out."""

from __future__ import annotations

from dataclasses import KW_ONLY
from typing import Any

import grpc

from publish_svc.convert import (
    KIND_OF_PB,
    POST_STATUSES,
    accepted_pb,
    moment_of,
    new_post,
    post_pb,
    queue_pb,
    repeat_asked,
    series_pb,
    stamps,
    target_of,
)
from publish_svc.intake import NewPost, PostIntake
from publish_svc.listing import ListQuery
from publish_svc.model import Kind, Status
from publish_svc.post_params import ClipappParams, Params, ReelParams, SocialParams, StoryParams
from publish_svc.posts import Posts
from publish_svc.queues import Queues
from publish_svc.reschedule import Rescheduler
from publish_svc.series import SeriesService
from storypost.publish.v1 import publish_pb2 as pb
from storypost.publish.v1 import publish_pb2_grpc
from storypost_runtime.component import component
from storypost_runtime.errors import InvalidArgument, NotFound

Context = grpc.aio.ServicerContext[Any, Any]


@component
class PublishServicer(publish_pb2_grpc.PublishServiceServicer):
    _: KW_ONLY
    intake: PostIntake
    posts: Posts
    rescheduler: Rescheduler
    queues: Queues
    # Series of recurring posts (none: a `repeat` is refused).
    series: SeriesService | None = None

    async def ScheduleStory(
        self, request: pb.ScheduleStoryRequest, context: Context
    ) -> pb.ScheduleResponse:
        new = new_post(request, request.story_post_uuid, StoryParams.of_request(request))
        if repeated := await self._series(new, request, request.photoapp_username):
            return repeated
        return accepted_pb(await self.intake.story(new, request.photoapp_username))

    async def ScheduleReel(
        self, request: pb.ScheduleReelRequest, context: Context
    ) -> pb.ScheduleResponse:
        new = new_post(request, request.reel_post_uuid, ReelParams.of_request(request))
        if repeated := await self._series(new, request, request.photoapp_username):
            return repeated
        return accepted_pb(await self.intake.reel(new, request.photoapp_username))

    async def ScheduleClipappPost(
        self, request: pb.ScheduleClipappPostRequest, context: Context
    ) -> pb.ScheduleResponse:
        new = new_post(request, request.clipapp_post_uuid, ClipappParams.of_request(request))
        if repeated := await self._series(new, request, request.clipapp_account_id):
            return repeated
        return accepted_pb(await self.intake.clipapp(new, request.clipapp_account_id))

    async def ScheduleSocialPost(
        self, request: pb.ScheduleSocialPostRequest, context: Context
    ) -> pb.ScheduleResponse:
        new = new_post(request, request.social_post_uuid, SocialParams.of_request(request))
        if repeated := await self._series(new, request, request.social_account_id):
            return repeated
        return accepted_pb(
            await self.intake.social(new, request.social_account_id, request.post_type)
        )

    async def GetStory(self, request: pb.GetPostRequest, context: Context) -> pb.Post:
        return await self._get(Kind.STORY, request)

    async def GetReel(self, request: pb.GetPostRequest, context: Context) -> pb.Post:
        return await self._get(Kind.REEL, request)

    async def GetClipappPost(self, request: pb.GetPostRequest, context: Context) -> pb.Post:
        return await self._get(Kind.CLIPAPP, request)

    async def GetSocialPost(self, request: pb.GetPostRequest, context: Context) -> pb.Post:
        return await self._get(Kind.SOCIAL, request)

    async def CancelStory(self, request: pb.GetPostRequest, context: Context) -> pb.Post:
        return await self._cancel(Kind.STORY, request)

    async def CancelReel(self, request: pb.GetPostRequest, context: Context) -> pb.Post:
        return await self._cancel(Kind.REEL, request)

    async def CancelClipappPost(self, request: pb.GetPostRequest, context: Context) -> pb.Post:
        return await self._cancel(Kind.CLIPAPP, request)

    async def CancelSocialPost(self, request: pb.GetPostRequest, context: Context) -> pb.Post:
        return await self._cancel(Kind.SOCIAL, request)

    async def ListPosts(
        self, request: pb.ListPostsRequest, context: Context
    ) -> pb.ListPostsResponse:
        limit = request.limit or 100
        if not 1 <= limit <= 500:
            raise InvalidArgument("limit must be 1 to 500")
        query = ListQuery(
            request.organization_id,
            [KIND_OF_PB[k] for k in request.kinds if k in KIND_OF_PB],
            [Status(POST_STATUSES.word[s]) for s in request.statuses if s in POST_STATUSES.word],
            moment_of(request, "date_from"),
            moment_of(request, "date_to"),
            social_account_id=request.social_account_id,
            series_uuid=request.series_uuid.lower(),
        )
        page = await self.posts.list(query, request.page_token, limit)
        return pb.ListPostsResponse(
            posts=[post_pb(p) for p in page.posts],
            next_page_token=page.next_token,
            previous_page_token=page.previous_token,
        )

    async def ReschedulePost(self, request: pb.ReschedulePostRequest, context: Context) -> pb.Post:
        kind = KIND_OF_PB.get(request.kind)
        if kind is None:
            raise InvalidArgument("kind must be one of story, reel, clipapp, social")
        return post_pb(
            await self.rescheduler.reschedule(
                kind,
                request.organization_id,
                request.post_uuid,
                moment_of(request, "date"),
                queue_name=request.queue_name,
            )
        )

    async def SetQueue(self, request: pb.SetQueueRequest, context: Context) -> pb.SetQueueResponse:
        answer = await self.queues.set(
            request.organization_id,
            request.social_account_id,
            request.queue_name,
            request.time_zone,
            [{"weekday": s.weekday, "time": s.time} for s in request.slots],
        )
        return pb.SetQueueResponse(
            queue=queue_pb(answer.queue), next_slots=stamps(answer.next_slots)
        )

    async def ListQueues(
        self, request: pb.ListQueuesRequest, context: Context
    ) -> pb.ListQueuesResponse:
        queues = await self.queues.listed(request.organization_id, request.social_account_id)
        return pb.ListQueuesResponse(queues=[queue_pb(q) for q in queues])

    async def DeleteQueue(self, request: pb.QueueRef, context: Context) -> pb.DeleteQueueResponse:
        deleted = await self.queues.delete(
            request.organization_id, request.social_account_id, request.queue_name
        )
        return pb.DeleteQueueResponse(deleted=deleted)

    async def PreviewQueue(
        self, request: pb.PreviewQueueRequest, context: Context
    ) -> pb.PreviewQueueResponse:
        ref = request.queue
        slots = await self.queues.preview(
            ref.organization_id,
            ref.social_account_id,
            ref.queue_name,
            request.count or 10,
            after=moment_of(request, "after"),
        )
        return pb.PreviewQueueResponse(slots=stamps(slots))

    async def GetSeries(self, request: pb.SeriesRef, context: Context) -> pb.Series:
        return series_pb(
            await self._series_service().view(request.organization_id, request.series_uuid)
        )

    async def CancelSeries(self, request: pb.SeriesRef, context: Context) -> pb.Series:
        return series_pb(
            await self._series_service().cancel(request.organization_id, request.series_uuid)
        )

    def _series_service(self) -> SeriesService:
        if self.series is None:
            raise NotFound("series are not available here")
        return self.series

    async def _series(
        self, new: NewPost[Params], request: Any, account: str
    ) -> pb.ScheduleResponse | None:
        """A schedule call with a `repeat` starts a series (None: it has none)."""
        asked = repeat_asked(request)
        if asked is None:
            return None
        if self.series is None:
            raise InvalidArgument("repeat: recurring posts are not available here")
        accepted, series = await self.series.start(new, target_of(request, account), asked)
        return accepted_pb(accepted, series)

    # The Get* and Cancel* methods differ only in the kind.
    async def _get(self, kind: Kind, request: pb.GetPostRequest) -> pb.Post:
        return post_pb(await self.posts.get(kind, request.organization_id, request.post_uuid))

    async def _cancel(self, kind: Kind, request: pb.GetPostRequest) -> pb.Post:
        return post_pb(await self.posts.cancel(kind, request.organization_id, request.post_uuid))

"""Handlers of photoapp stories and reels (publish-svc)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from edge.backends import Backends
from edge.config import EdgeSettings
from edge.procedures.base import CallContext, Handler, JsonObject, procedure, procedure_methods
from edge.procedures.posts import PublishProcedures, design, post_answer, repeat, timestamp
from storypost.publish.v1 import publish_pb2 as pb


class PhotoappProcedures(PublishProcedures):
    """Stories and reels (publish-svc); each method is the procedure of its name."""

    @procedure("schedule-photoapp-story")
    def schedule_photoapp_story(self, ctx: CallContext, params: Mapping[str, Any]) -> JsonObject:
        destination = params.get("linknetDestinationId")
        return self._schedule(
            self.backends.publish_stub.ScheduleStory,
            pb.ScheduleStoryRequest(
                organization_id=ctx.organization_id,
                story_post_uuid=params["storyPostUuid"],
                design=design(params),
                photoapp_username=params["photoappUsername"],
                date=timestamp(params.get("date")),
                queue_name=params.get("queueName", ""),
                repeat=repeat(params.get("repeat")),
                ai_generated=bool(params.get("aiGenerated")),
                share_to_linknet=bool(params.get("shareToLinknet")),
                linknet_destination_id="" if destination is None else str(destination),
            ),
            "storyPostUuid",
        )

    @procedure("status-photoapp-story")
    def status_photoapp_story(self, ctx: CallContext, params: Mapping[str, Any]) -> JsonObject:
        return post_answer(
            self.backends.publish_stub.GetStory, ctx, params, "storyPostUuid", "previewUrl"
        )

    @procedure("cancel-photoapp-story")
    def cancel_photoapp_story(self, ctx: CallContext, params: Mapping[str, Any]) -> JsonObject:
        return post_answer(self.backends.publish_stub.CancelStory, ctx, params, "storyPostUuid")

    @procedure("schedule-photoapp-reel")
    def schedule_photoapp_reel(self, ctx: CallContext, params: Mapping[str, Any]) -> JsonObject:
        return self._schedule(
            self.backends.publish_stub.ScheduleReel,
            pb.ScheduleReelRequest(
                organization_id=ctx.organization_id,
                reel_post_uuid=params["reelPostUuid"],
                design=design(params),
                photoapp_username=params["photoappUsername"],
                caption=params.get("caption", ""),
                date=timestamp(params.get("date")),
                queue_name=params.get("queueName", ""),
                repeat=repeat(params.get("repeat")),
                share_to_feed=bool(params.get("shareToFeed", False)),
                ai_generated=bool(params.get("aiGenerated")),
                # Unset when not given: publish-svc applies the default.
                share_to_linknet=params.get("shareToLinknet"),
            ),
            "reelPostUuid",
        )

    @procedure("status-photoapp-reel")
    def status_photoapp_reel(self, ctx: CallContext, params: Mapping[str, Any]) -> JsonObject:
        return post_answer(self.backends.publish_stub.GetReel, ctx, params, "reelPostUuid")

    @procedure("cancel-photoapp-reel")
    def cancel_photoapp_reel(self, ctx: CallContext, params: Mapping[str, Any]) -> JsonObject:
        return post_answer(self.backends.publish_stub.CancelReel, ctx, params, "reelPostUuid")


def handlers(backends: Backends, settings: EdgeSettings) -> dict[str, Handler]:
    return procedure_methods(PhotoappProcedures(backends, settings))

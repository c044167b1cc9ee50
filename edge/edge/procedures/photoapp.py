"""Handlers of photoapp stories and reels (publish-svc)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from edge.backends import Backends
from edge.config import EdgeSettings
from edge.procedures.base import CallContext, Handler, JsonObject
from edge.procedures.posts import design, get_handler, scheduled_json, timestamp
from storypost.publish.v1 import publish_pb2 as pb
from storypost.publish.v1 import publish_pb2_grpc


def handlers(backends: Backends, settings: EdgeSettings) -> dict[str, Handler]:
    publish = publish_pb2_grpc.PublishServiceStub(backends.publish)
    deadline = settings.render_deadline_seconds

    def schedule_story(ctx: CallContext, params: Mapping[str, Any]) -> JsonObject:
        destination = params.get("linknetDestinationId")
        reply = publish.ScheduleStory(
            pb.ScheduleStoryRequest(
                organization_id=ctx.organization_id,
                story_post_uuid=params["storyPostUuid"],
                design=design(params),
                photoapp_username=params["photoappUsername"],
                date=timestamp(params.get("date")),
                ai_generated=bool(params.get("aiGenerated")),
                share_to_linknet=bool(params.get("shareToLinknet")),
                linknet_destination_id="" if destination is None else str(destination),
            ),
            timeout=deadline,
        )
        return scheduled_json("storyPostUuid", reply)

    def schedule_reel(ctx: CallContext, params: Mapping[str, Any]) -> JsonObject:
        reply = publish.ScheduleReel(
            pb.ScheduleReelRequest(
                organization_id=ctx.organization_id,
                reel_post_uuid=params["reelPostUuid"],
                design=design(params),
                photoapp_username=params["photoappUsername"],
                caption=params.get("caption", ""),
                date=timestamp(params.get("date")),
                share_to_feed=bool(params.get("shareToFeed", False)),
                ai_generated=bool(params.get("aiGenerated")),
                # Unset when not given: publish-svc applies the default.
                share_to_linknet=params.get("shareToLinknet"),
            ),
            timeout=deadline,
        )
        return scheduled_json("reelPostUuid", reply)

    return {
        "schedule-photoapp-story": schedule_story,
        "status-photoapp-story": get_handler(publish.GetStory, "storyPostUuid", "previewUrl"),
        "cancel-photoapp-story": get_handler(publish.CancelStory, "storyPostUuid"),
        "schedule-photoapp-reel": schedule_reel,
        "status-photoapp-reel": get_handler(publish.GetReel, "reelPostUuid"),
        "cancel-photoapp-reel": get_handler(publish.CancelReel, "reelPostUuid"),
    }

"""Handlers of social posts (publish-svc)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from edge.backends import Backends
from edge.config import EdgeSettings
from edge.procedures.base import CallContext, Handler, JsonObject
from edge.procedures.posts import design, get_handler, scheduled_json, timestamp
from storypost.publish.v1 import publish_pb2 as pb
from storypost.publish.v1 import publish_pb2_grpc

STATUS_FIELDS = ("permalink", "socialAccountId", "platform", "postType", "date")


def handlers(backends: Backends, settings: EdgeSettings) -> dict[str, Handler]:
    publish = publish_pb2_grpc.PublishServiceStub(backends.publish)

    def schedule(ctx: CallContext, params: Mapping[str, Any]) -> JsonObject:
        reply = publish.ScheduleSocialPost(
            pb.ScheduleSocialPostRequest(
                organization_id=ctx.organization_id,
                social_post_uuid=params["socialPostUuid"],
                design=design(params),
                social_account_id=params["socialAccountId"],
                post_type=params["postType"],
                text=params.get("text", ""),
                options_json=json.dumps(params.get("options") or {}),
                date=timestamp(params.get("date")),
            ),
            timeout=settings.render_deadline_seconds,
        )
        return scheduled_json("socialPostUuid", reply, current_status=True)

    return {
        "schedule-social-post": schedule,
        "status-social-post": get_handler(publish.GetSocialPost, "socialPostUuid", *STATUS_FIELDS),
        "cancel-social-post": get_handler(publish.CancelSocialPost, "socialPostUuid"),
    }

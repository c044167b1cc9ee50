"""Handlers of social posts (publish-svc)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from edge.backends import Backends
from edge.config import EdgeSettings
from edge.procedures.base import CallContext, Handler, JsonObject, procedure, procedure_methods
from edge.procedures.posts import PublishProcedures, design, post_answer, repeat, timestamp
from storypost.publish.v1 import publish_pb2 as pb

STATUS_FIELDS = ("permalink", "socialAccountId", "platform", "postType", "date")


class SocialProcedures(PublishProcedures):
    """Social posts (publish-svc); each method is the procedure of its name."""

    @procedure("schedule-social-post")
    def schedule_social_post(self, ctx: CallContext, params: Mapping[str, Any]) -> JsonObject:
        return self._schedule(
            self.backends.publish_stub.ScheduleSocialPost,
            pb.ScheduleSocialPostRequest(
                organization_id=ctx.organization_id,
                social_post_uuid=params["socialPostUuid"],
                design=design(params),
                social_account_id=params["socialAccountId"],
                post_type=params["postType"],
                text=params.get("text", ""),
                options_json=json.dumps(params.get("options") or {}),
                date=timestamp(params.get("date")),
                queue_name=params.get("queueName", ""),
                repeat=repeat(params.get("repeat")),
            ),
            "socialPostUuid",
            current_status=True,
        )

    @procedure("status-social-post")
    def status_social_post(self, ctx: CallContext, params: Mapping[str, Any]) -> JsonObject:
        return post_answer(
            self.backends.publish_stub.GetSocialPost, ctx, params, "socialPostUuid", *STATUS_FIELDS
        )

    @procedure("cancel-social-post")
    def cancel_social_post(self, ctx: CallContext, params: Mapping[str, Any]) -> JsonObject:
        return post_answer(
            self.backends.publish_stub.CancelSocialPost, ctx, params, "socialPostUuid"
        )


def handlers(backends: Backends, settings: EdgeSettings) -> dict[str, Handler]:
    return procedure_methods(SocialProcedures(backends, settings))

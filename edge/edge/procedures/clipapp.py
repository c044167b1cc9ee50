"""Handlers of clipapp posts (publish-svc)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from edge.backends import Backends
from edge.config import EdgeSettings
from edge.procedures.base import CallContext, Handler, JsonObject, procedure, procedure_methods
from edge.procedures.posts import PublishProcedures, design, post_answer, repeat, timestamp
from storypost.publish.v1 import publish_pb2 as pb
from storypost_runtime.vocabulary import CLIPAPP_DEFAULT_PRIVACY_LEVEL

# Clipapp videos are at most 600 s; a cover frame later than that is invalid.
COVER_MAX_MS = 600_000


class ClipappProcedures(PublishProcedures):
    """clipapp posts (publish-svc); each method is the procedure of its name."""

    @procedure("schedule-clipapp-post")
    def schedule_clipapp_post(self, ctx: CallContext, params: Mapping[str, Any]) -> JsonObject:
        request = pb.ScheduleClipappPostRequest(
            organization_id=ctx.organization_id,
            clipapp_post_uuid=params["clipappPostUuid"],
            design=design(params),
            clipapp_account_id=params["clipappAccountId"],
            date=timestamp(params.get("date")),
            queue_name=params.get("queueName", ""),
            repeat=repeat(params.get("repeat")),
            title=params.get("title", ""),
            description=params.get("description", ""),
            privacy_level=params.get("privacyLevel", CLIPAPP_DEFAULT_PRIVACY_LEVEL),
            disable_duet=bool(params.get("disableDuet")),
            disable_comment=bool(params.get("disableComment")),
            disable_stitch=bool(params.get("disableStitch")),
            brand_organic=bool(params.get("brandOrganic")),
            branded_content=bool(params.get("brandedContent")),
            ai_generated=bool(params.get("aiGenerated")),
            auto_audio=bool(params.get("autoAudio")),
        )
        cover = params.get("videoCoverTimestampMs")
        # Past the longest clipapp video it is invalid: the first frame is used (spec), so
        # it is not sent (and a number past int64 cannot reach publish-svc at all).
        if cover is not None and int(cover) <= COVER_MAX_MS:
            request.video_cover_timestamp_ms = int(cover)
        return self._schedule(
            self.backends.publish_stub.ScheduleClipappPost, request, "clipappPostUuid"
        )

    @procedure("status-clipapp-post")
    def status_clipapp_post(self, ctx: CallContext, params: Mapping[str, Any]) -> JsonObject:
        return post_answer(
            self.backends.publish_stub.GetClipappPost,
            ctx,
            params,
            "clipappPostUuid",
            "clipappStatus",
        )

    @procedure("cancel-clipapp-post")
    def cancel_clipapp_post(self, ctx: CallContext, params: Mapping[str, Any]) -> JsonObject:
        return post_answer(
            self.backends.publish_stub.CancelClipappPost, ctx, params, "clipappPostUuid"
        )


def handlers(backends: Backends, settings: EdgeSettings) -> dict[str, Handler]:
    return procedure_methods(ClipappProcedures(backends, settings))

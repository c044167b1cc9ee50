"""Handlers of the insights procedures (publish-svc's InsightsService)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from edge.backends import Backends
from edge.config import EdgeSettings
from edge.procedures.base import CallContext, Handler, JsonObject, procedure, procedure_methods
from storypost.publish.v1 import insights_pb2 as ipb
from storypost.publish.v1 import publish_pb2 as pb
from storypost_runtime.clock import iso_utc
from storypost_runtime.component import component
from storypost_runtime.protobuf import to_datetime
from storypost_runtime.vocabulary import PostKind, proto_name

KIND_PB = {kind.value: pb.PostKind.Value(proto_name("POST_KIND", kind)) for kind in PostKind}
KIND_TEXT = {value: key for key, value in KIND_PB.items()}
STATE_TEXT = {
    ipb.COLLECTION_STATE_COLLECTING: "collecting",
    ipb.COLLECTION_STATE_DONE: "done",
    ipb.COLLECTION_STATE_STOPPED: "stopped",
}


def insights_json(reply: ipb.PostInsights) -> JsonObject:
    body: JsonObject = {"uuid": reply.post_uuid, "kind": KIND_TEXT[reply.kind]}
    if reply.HasField("collected_at"):
        body["collectedAt"] = iso_utc(to_datetime(reply.collected_at))
    body["metrics"] = dict(reply.metrics)
    body["history"] = [
        {"collectedAt": iso_utc(to_datetime(p.collected_at)), "metrics": dict(p.metrics)}
        for p in reply.history
    ]
    body["collectionState"] = STATE_TEXT.get(reply.state, "collecting")
    if reply.HasField("next_collection_at"):
        body["nextCollectionAt"] = iso_utc(to_datetime(reply.next_collection_at))
    if reply.stopped_reason:
        body["stoppedReason"] = reply.stopped_reason
    if reply.last_error:
        body["lastError"] = reply.last_error
    return body


@component
class InsightsProcedures:
    """Insights of posts and accounts; each method is the procedure of its name."""

    backends: Backends

    @procedure("get-post-insights")
    def get_post_insights(self, ctx: CallContext, params: Mapping[str, Any]) -> JsonObject:
        reply = self.backends.insights_stub.GetPostInsights(
            ipb.GetPostInsightsRequest(
                organization_id=ctx.organization_id,
                kind=KIND_PB[params["kind"]],
                post_uuid=params["uuid"],
                refresh=bool(params.get("refresh")),
            )
        )
        return insights_json(reply)

    @procedure("list-account-insights")
    def list_account_insights(self, ctx: CallContext, params: Mapping[str, Any]) -> JsonObject:
        reply = self.backends.insights_stub.ListAccountInsights(
            ipb.ListAccountInsightsRequest(
                organization_id=ctx.organization_id,
                social_account_id=params["socialAccountId"],
                from_day=params["from"],
                to_day=params["to"],
            )
        )
        return {
            "socialAccountId": params["socialAccountId"],
            "days": [
                {"day": d.day, "metrics": dict(sorted(d.metrics.items()))} for d in reply.days
            ],
        }


def handlers(backends: Backends, settings: EdgeSettings) -> dict[str, Handler]:
    return procedure_methods(InsightsProcedures(backends))

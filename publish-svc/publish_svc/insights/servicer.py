"""Thin gRPC methods of InsightsService: proto in, the collector or the store, proto out."""

from __future__ import annotations

from datetime import date
from typing import Any

import grpc

from publish_svc.convert import KIND_OF_PB, KIND_PB
from publish_svc.insights.collector import InsightsCollector
from publish_svc.insights.store import COLLECTING, DONE, STOPPED, InsightStore
from publish_svc.model import Kind, Status, post_id
from publish_svc.posts import NOUN
from storypost.publish.v1 import insights_pb2 as ipb
from storypost.publish.v1 import insights_pb2_grpc
from storypost_runtime.component import component
from storypost_runtime.errors import FailedPrecondition, InvalidArgument, NotFound
from storypost_runtime.mongo import Document
from storypost_runtime.protobuf import timestamp

Context = grpc.aio.ServicerContext[Any, Any]
STATE_PB = {
    COLLECTING: ipb.COLLECTION_STATE_COLLECTING,
    DONE: ipb.COLLECTION_STATE_DONE,
    STOPPED: ipb.COLLECTION_STATE_STOPPED,
}
MAX_DAYS = 366


def _day(value: str, name: str) -> date:
    try:
        return date.fromisoformat(value)
    except ValueError:
        raise InvalidArgument(
            f"{name} must be a day, YYYY-MM-DD", field_violations={name: ["expected YYYY-MM-DD"]}
        ) from None


def insights_pb(kind: Kind, post_uuid: str, schedule: Document, history: list[Document]) -> Any:
    latest = schedule.get("latest") or {}
    return ipb.PostInsights(
        kind=KIND_PB[kind],
        post_uuid=post_uuid,
        collected_at=timestamp(latest.get("collectedAt")),
        metrics=latest.get("metrics") or {},
        history=[
            ipb.InsightPoint(collected_at=timestamp(p["collectedAt"]), metrics=p["metrics"])
            for p in history
        ],
        state=STATE_PB[schedule["state"]],
        stopped_reason=schedule.get("stoppedReason") or "",
        next_collection_at=timestamp(schedule.get("dueAt")),
        last_error=schedule.get("lastError") or "",
    )


@component
class InsightsServicer(insights_pb2_grpc.InsightsServiceServicer):
    collector: InsightsCollector
    store: InsightStore

    async def GetPostInsights(
        self, request: ipb.GetPostInsightsRequest, context: Context
    ) -> ipb.PostInsights:
        kind = KIND_OF_PB.get(request.kind)
        if kind is None:
            raise InvalidArgument("kind is required", field_violations={"kind": ["required"]})
        record_id = post_id(kind, request.organization_id, request.post_uuid)
        if request.refresh:
            await self.collector.refresh(record_id)
        schedule = await self.store.get(record_id)
        if schedule is None:
            status = await self.store.post_status(record_id)
            if status is None:
                raise NotFound(f"{NOUN[kind]} {request.post_uuid} not found")
            if status != Status.EXECUTED.value:
                raise FailedPrecondition(
                    f"{NOUN[kind]} {request.post_uuid} is {status}: insights are collected "
                    "once it is executed"
                )
            # Executed a moment ago: its schedule is being made.
            return ipb.PostInsights(
                kind=request.kind,
                post_uuid=request.post_uuid,
                state=ipb.COLLECTION_STATE_COLLECTING,
            )
        history = await self.store.history(schedule)
        result: ipb.PostInsights = insights_pb(kind, request.post_uuid, schedule, history)
        return result

    async def ListAccountInsights(
        self, request: ipb.ListAccountInsightsRequest, context: Context
    ) -> ipb.ListAccountInsightsResponse:
        first = _day(request.from_day, "from")
        last = _day(request.to_day, "to")
        if last < first or (last - first).days >= MAX_DAYS:
            raise InvalidArgument(
                f"to must not be before from, and the range at most {MAX_DAYS} days",
                field_violations={"to": [f"at most {MAX_DAYS} days after from"]},
            )
        days = await self.store.days(
            request.organization_id, request.social_account_id, first, last
        )
        return ipb.ListAccountInsightsResponse(
            days=[
                ipb.AccountInsightsDay(day=d["day"], metrics=d.get("metrics") or {}) for d in days
            ]
        )

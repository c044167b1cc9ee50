"""Handlers of planning: list-posts, reschedule-post and the queues (publish-svc)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from google.protobuf.timestamp_pb2 import Timestamp

from edge.backends import Backends
from edge.catalog.planning import LIST_LIMIT_DEFAULT, LIST_POSTS, RESCHEDULE_POST
from edge.catalog.queues import DEFAULT_NAME, PREVIEW_DEFAULT
from edge.config import EdgeSettings
from edge.errors import ApiError
from edge.procedures.base import CallContext, Handler, JsonObject, procedure, procedure_methods
from edge.procedures.posts import POST_STATUSES, PublishProcedures, moment, timestamp
from edge.validation import validation_body
from storypost.publish.v1 import publish_pb2 as pb
from storypost_runtime.clock import iso_utc
from storypost_runtime.protobuf import to_datetime
from storypost_runtime.vocabulary import PostKind, proto_name

KIND_PB = {kind.value: pb.PostKind.Value(proto_name("POST_KIND", kind)) for kind in PostKind}
KIND_TEXT = {value: name for name, value in KIND_PB.items()}


class PlanningProcedures(PublishProcedures):
    """Listing and moving posts of every kind; each method is the procedure of its name."""

    @procedure("list-posts")
    def list_posts(self, ctx: CallContext, params: Mapping[str, Any]) -> JsonObject:
        _check_range(params.get("from"), params.get("to"))
        kind, status = params.get("kind"), params.get("status")
        answer = self.backends.publish_stub.ListPosts(
            pb.ListPostsRequest(
                organization_id=ctx.organization_id,
                kinds=[KIND_PB[kind]] if kind else [],
                statuses=[POST_STATUSES.pb[status]] if status else [],
                limit=params.get("limit", LIST_LIMIT_DEFAULT),
                date_from=timestamp(params.get("from")),
                date_to=timestamp(params.get("to")),
                page_token=params.get("cursor", ""),
                social_account_id=params.get("socialAccountId", ""),
                series_uuid=params.get("seriesUuid", ""),
            )
        )
        body: JsonObject = {"posts": [listed_post_json(post) for post in answer.posts]}
        if answer.next_page_token:
            body["nextCursor"] = answer.next_page_token
        return body

    @procedure("reschedule-post")
    def reschedule_post(self, ctx: CallContext, params: Mapping[str, Any]) -> JsonObject:
        if ("date" in params) == ("queueName" in params):
            given = "both" if "date" in params else "neither"
            explanation = f"give date or queueName, not {given}"
            raise ApiError(
                400,
                "invalid params",
                body=validation_body(
                    RESCHEDULE_POST, {"date": [explanation], "queueName": [explanation]}
                ),
            )
        post = self.backends.publish_stub.ReschedulePost(
            pb.ReschedulePostRequest(
                organization_id=ctx.organization_id,
                kind=KIND_PB[params["kind"]],
                post_uuid=params["uuid"],
                date=timestamp(params.get("date")),
                queue_name=params.get("queueName", ""),
            )
        )
        return {
            "kind": KIND_TEXT[post.kind],
            "uuid": post.post_uuid,
            "status": POST_STATUSES.word[post.status],
            "date": iso_utc(to_datetime(post.date)),
        }

    @procedure("status-series")
    def status_series(self, ctx: CallContext, params: Mapping[str, Any]) -> JsonObject:
        return series_json(self.backends.publish_stub.GetSeries(self._series_ref(ctx, params)))

    @procedure("cancel-series")
    def cancel_series(self, ctx: CallContext, params: Mapping[str, Any]) -> JsonObject:
        return series_json(self.backends.publish_stub.CancelSeries(self._series_ref(ctx, params)))

    @staticmethod
    def _series_ref(ctx: CallContext, params: Mapping[str, Any]) -> pb.SeriesRef:
        return pb.SeriesRef(organization_id=ctx.organization_id, series_uuid=params["seriesUuid"])

    @procedure("set-queue")
    def set_queue(self, ctx: CallContext, params: Mapping[str, Any]) -> JsonObject:
        answer = self.backends.publish_stub.SetQueue(
            pb.SetQueueRequest(
                organization_id=ctx.organization_id,
                social_account_id=params["socialAccountId"],
                queue_name=params.get("queueName", DEFAULT_NAME),
                time_zone=params["timeZone"],
                slots=[pb.QueueSlot(weekday=s["weekday"], time=s["time"]) for s in params["slots"]],
            )
        )
        return {**queue_json(answer.queue), "nextSlots": dates_json(answer.next_slots)}

    @procedure("list-queues")
    def list_queues(self, ctx: CallContext, params: Mapping[str, Any]) -> JsonObject:
        answer = self.backends.publish_stub.ListQueues(
            pb.ListQueuesRequest(
                organization_id=ctx.organization_id,
                social_account_id=params.get("socialAccountId", ""),
            )
        )
        return {"queues": [queue_json(queue) for queue in answer.queues]}

    @procedure("preview-queue")
    def preview_queue(self, ctx: CallContext, params: Mapping[str, Any]) -> JsonObject:
        answer = self.backends.publish_stub.PreviewQueue(
            pb.PreviewQueueRequest(
                queue=self._queue_ref(ctx, params),
                count=params.get("count", PREVIEW_DEFAULT),
            )
        )
        return {"slots": dates_json(answer.slots)}

    @procedure("delete-queue")
    def delete_queue(self, ctx: CallContext, params: Mapping[str, Any]) -> JsonObject:
        answer = self.backends.publish_stub.DeleteQueue(self._queue_ref(ctx, params))
        return {
            "socialAccountId": params["socialAccountId"],
            "queueName": params["queueName"],
            "deleted": answer.deleted,
        }

    @staticmethod
    def _queue_ref(ctx: CallContext, params: Mapping[str, Any]) -> pb.QueueRef:
        return pb.QueueRef(
            organization_id=ctx.organization_id,
            social_account_id=params["socialAccountId"],
            queue_name=params["queueName"],
        )


def queue_json(queue: pb.Queue) -> JsonObject:
    return {
        "socialAccountId": queue.social_account_id,
        "queueName": queue.queue_name,
        "timeZone": queue.time_zone,
        "slots": [{"weekday": s.weekday, "time": s.time} for s in queue.slots],
        "createdAt": iso_utc(to_datetime(queue.created_at)),
        "updatedAt": iso_utc(to_datetime(queue.updated_at)),
    }


def series_json(series: pb.Series) -> JsonObject:
    body: JsonObject = {
        "seriesUuid": series.series_uuid,
        "status": series.status,
        "occurrences": [
            {
                "uuid": o.post_uuid,
                "date": iso_utc(to_datetime(o.date)),
                "status": POST_STATUSES.word[o.status],
            }
            for o in series.occurrences
        ],
    }
    if series.HasField("next_date"):
        body["nextDate"] = iso_utc(to_datetime(series.next_date))
    return body


def dates_json(stamps: Iterable[Timestamp]) -> list[str]:
    return [iso_utc(to_datetime(stamp)) for stamp in stamps]


def _check_range(date_from: str | None, date_to: str | None) -> None:
    """`to` must be after `from` (the schema checks each alone): the spec's 400 naming `to`."""
    if date_from is None or date_to is None:
        return
    if moment(date_to) <= moment(date_from):
        raise ApiError(
            400,
            "invalid params",
            body=validation_body(LIST_POSTS, {"to": ["must be after from"]}),
        )


def listed_post_json(post: pb.Post) -> JsonObject:
    """One post of a list-posts page: required fields, then the optional ones it has."""
    body: JsonObject = {
        "kind": KIND_TEXT[post.kind],
        "uuid": post.post_uuid,
        "status": POST_STATUSES.word[post.status],
        "date": iso_utc(to_datetime(post.date)),
        "socialAccountId": post.connected_account_id,
    }
    optional = {
        "seriesUuid": post.series_uuid,
        "previewUrl": post.preview_url,
        "errorMessage": (post.error_message or "failed")
        if post.status == pb.POST_STATUS_FAILED
        else "",
        "permalink": post.permalink,
    }
    body.update((name, value) for name, value in optional.items() if value)
    return body


def handlers(backends: Backends, settings: EdgeSettings) -> dict[str, Handler]:
    return procedure_methods(PlanningProcedures(backends, settings))

"""list-posts and reschedule-post: JSON in, publish-svc's request out, its answer as JSON."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import pytest
from google.protobuf.timestamp_pb2 import Timestamp

from edge.errors import ApiError
from edge.procedures.base import CallContext
from edge.procedures.planning import PlanningProcedures
from storypost.publish.v1 import publish_pb2 as pb
from storypost_runtime.protobuf import timestamp
from tests.support.edge_backends import planning_with

CTX = CallContext("org1", "cred", "req", "http://edge/o/org1/api/v1", "http://edge/o/org1")
UUID = "bc604f8c-650a-46ed-8726-def3cdf9d0c0"
SERIES = "5e0c8f43-7d2a-4f41-9b1e-3c2a1d0e9f87"
DATE = datetime(2026, 7, 1, 9, 30, tzinfo=UTC)
STAMP = Timestamp()
STAMP.FromDatetime(DATE)
QUEUE = pb.Queue(
    social_account_id="sa_1",
    queue_name="default",
    time_zone="Europe/Berlin",
    slots=[pb.QueueSlot(weekday="monday", time="09:30")],
    created_at=STAMP,
    updated_at=STAMP,
)


@dataclass
class FakePublish:
    requests: list[Any] = field(default_factory=list)
    answer: pb.ListPostsResponse = field(default_factory=pb.ListPostsResponse)

    def ListPosts(self, request: pb.ListPostsRequest, **_: Any) -> pb.ListPostsResponse:
        self.requests.append(request)
        return self.answer

    def SetQueue(self, request: pb.SetQueueRequest, **_: Any) -> pb.SetQueueResponse:
        self.requests.append(request)
        return pb.SetQueueResponse(queue=QUEUE, next_slots=[STAMP])

    def PreviewQueue(self, request: pb.PreviewQueueRequest, **_: Any) -> pb.PreviewQueueResponse:
        self.requests.append(request)
        return pb.PreviewQueueResponse(slots=[STAMP, STAMP])

    def ReschedulePost(self, request: pb.ReschedulePostRequest, **_: Any) -> pb.Post:
        self.requests.append(request)
        return pb.Post(
            post_uuid=request.post_uuid.lower(),
            kind=request.kind,
            status=pb.POST_STATUS_SCHEDULED,
            date=request.date,
        )


@pytest.fixture
def publish() -> FakePublish:
    return FakePublish()


@pytest.fixture
def planning(publish: FakePublish) -> PlanningProcedures:
    return planning_with(publish)


def test_list_posts_without_filters_asks_for_the_newest_page_of_50(
    planning: PlanningProcedures, publish: FakePublish
) -> None:
    assert planning.list_posts(CTX, {}) == {"posts": []}
    (request,) = publish.requests
    assert request == pb.ListPostsRequest(organization_id="org1", limit=50)


def test_list_posts_passes_every_filter_and_the_cursor(
    planning: PlanningProcedures, publish: FakePublish
) -> None:
    params = {
        "kind": "clipapp",
        "status": "in-progress",
        "socialAccountId": "sa_1",
        "from": "2026-07-01T00:00:00+02:00",
        "to": "2026-08-01T00:00:00Z",
        "seriesUuid": SERIES,
        "limit": 7,
        "cursor": "abc",
    }
    planning.list_posts(CTX, params)
    (request,) = publish.requests
    assert list(request.kinds) == [pb.POST_KIND_CLIPAPP]
    assert list(request.statuses) == [pb.POST_STATUS_IN_PROGRESS]
    assert (request.social_account_id, request.series_uuid) == ("sa_1", SERIES)
    assert (request.limit, request.page_token) == (7, "abc")
    assert request.date_from.ToDatetime(UTC) == datetime(2026, 6, 30, 22, tzinfo=UTC)
    assert request.date_to.ToDatetime(UTC) == datetime(2026, 8, 1, tzinfo=UTC)


def test_list_posts_answers_each_post_with_the_fields_it_has_and_the_next_cursor(
    planning: PlanningProcedures, publish: FakePublish
) -> None:
    publish.answer = pb.ListPostsResponse(
        posts=[
            pb.Post(
                post_uuid=UUID,
                kind=pb.POST_KIND_STORY,
                status=pb.POST_STATUS_SCHEDULED,
                date=timestamp(DATE),
                connected_account_id="sa_1",
                account="alice",
            ),
            pb.Post(
                post_uuid=SERIES,
                kind=pb.POST_KIND_SOCIAL,
                status=pb.POST_STATUS_FAILED,
                date=timestamp(DATE),
                connected_account_id="sa_2",
                social_account_id="sa_2",
                error_message="refused",
                series_uuid=SERIES,
            ),
        ],
        next_page_token="next",
        previous_page_token="prev",
    )
    assert planning.list_posts(CTX, {}) == {
        "posts": [
            {
                "kind": "story",
                "uuid": UUID,
                "status": "scheduled",
                "date": "2026-07-01T09:30:00Z",
                "socialAccountId": "sa_1",
            },
            {
                "kind": "social",
                "uuid": SERIES,
                "status": "failed",
                "date": "2026-07-01T09:30:00Z",
                "socialAccountId": "sa_2",
                "seriesUuid": SERIES,
                "errorMessage": "refused",
            },
        ],
        "nextCursor": "next",
    }


@pytest.mark.parametrize(
    "to", ["2026-07-01T00:00:00Z", "2026-07-01T01:59:59+02:00", "2026-07-01t00:00:00z"]
)
def test_a_to_not_after_from_is_the_validation_body_naming_to(
    planning: PlanningProcedures, publish: FakePublish, to: str
) -> None:
    with pytest.raises(ApiError) as caught:
        planning.list_posts(CTX, {"from": "2026-07-01T00:00:00Z", "to": to})
    assert caught.value.status == 400
    assert caught.value.body["errorMessage"] == "invalid params for procedure: list-posts"
    assert caught.value.body["validationErrorExplanation"] == {"to": ["must be after from"]}
    assert publish.requests == []


def test_reschedule_post_sends_the_kind_uuid_and_date_and_answers_in_utc(
    planning: PlanningProcedures, publish: FakePublish
) -> None:
    answer = planning.reschedule_post(
        CTX, {"kind": "reel", "uuid": UUID.upper(), "date": "2026-07-01T11:30:00+02:00"}
    )
    assert answer == {
        "kind": "reel",
        "uuid": UUID,
        "status": "scheduled",
        "date": "2026-07-01T09:30:00Z",
    }
    (request,) = publish.requests
    assert (request.organization_id, request.kind, request.post_uuid) == (
        "org1",
        pb.POST_KIND_REEL,
        UUID.upper(),
    )


def test_queue_procedures_map_to_publish_svc(
    planning: PlanningProcedures, publish: FakePublish
) -> None:
    answer = planning.set_queue(
        CTX,
        {
            "socialAccountId": "sa_1",
            "timeZone": "Europe/Berlin",
            "slots": [{"weekday": "monday", "time": "09:30"}],
        },
    )
    assert answer == {
        "socialAccountId": "sa_1",
        "queueName": "default",
        "timeZone": "Europe/Berlin",
        "slots": [{"weekday": "monday", "time": "09:30"}],
        "createdAt": "2026-07-01T09:30:00Z",
        "updatedAt": "2026-07-01T09:30:00Z",
        "nextSlots": ["2026-07-01T09:30:00Z"],
    }
    assert publish.requests[-1].queue_name == "default"
    preview = planning.preview_queue(CTX, {"socialAccountId": "sa_1", "queueName": "q"})
    assert preview == {"slots": ["2026-07-01T09:30:00Z"] * 2}
    assert publish.requests[-1].count == 10
    assert publish.requests[-1].queue == pb.QueueRef(
        organization_id="org1", social_account_id="sa_1", queue_name="q"
    )

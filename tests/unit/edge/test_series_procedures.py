"""status-series, cancel-series, `repeat` on the schedule procedures and reschedule-post's
`queueName`: JSON in, publish-svc's request out, its answer as JSON."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import pytest
from google.protobuf.timestamp_pb2 import Timestamp

from edge.catalog.registry import build_catalog
from edge.config import EdgeSettings
from edge.errors import ApiError
from edge.procedures.base import CallContext
from edge.procedures.social import SocialProcedures
from edge.validation import validate_params
from storypost.publish.v1 import publish_pb2 as pb
from tests.support.edge_backends import PublishBackends
from tests.support.edge_backends import planning_with as planning

CTX = CallContext("org1", "cred", "req", "http://edge/o/org1/api/v1", "http://edge/o/org1")
UUID = "bc604f8c-650a-46ed-8726-def3cdf9d0c0"
SERIES = "3f1c9a52-7d0e-5b6a-9c41-0e8d2b7f6a13"
STAMP = Timestamp()
STAMP.FromDatetime(datetime(2026, 7, 1, 9, 30, tzinfo=UTC))
CATALOG = build_catalog()


@dataclass
class FakePublish:
    requests: list[Any] = field(default_factory=list)

    def _series(self, request: pb.SeriesRef, status: str) -> pb.Series:
        self.requests.append(request)
        return pb.Series(
            series_uuid=request.series_uuid,
            status=status,
            occurrences=[
                pb.SeriesOccurrence(post_uuid=UUID, date=STAMP, status=pb.POST_STATUS_EXECUTED)
            ],
            next_date=STAMP if status == "active" else None,
        )

    def GetSeries(self, request: pb.SeriesRef, **_: Any) -> pb.Series:
        return self._series(request, "active")

    def CancelSeries(self, request: pb.SeriesRef, **_: Any) -> pb.Series:
        return self._series(request, "canceled")

    def ReschedulePost(self, request: pb.ReschedulePostRequest, **_: Any) -> pb.Post:
        self.requests.append(request)
        return pb.Post(
            post_uuid=request.post_uuid,
            kind=request.kind,
            status=pb.POST_STATUS_SCHEDULED,
            date=STAMP,
        )

    def ScheduleSocialPost(self, request: Any, **_: Any) -> pb.ScheduleResponse:
        self.requests.append(request)
        post = pb.Post(post_uuid=request.social_post_uuid, status=pb.POST_STATUS_SCHEDULED)
        return pb.ScheduleResponse(
            post=post, series_uuid=SERIES if request.HasField("repeat") else ""
        )


@pytest.fixture
def publish() -> FakePublish:
    return FakePublish()


def test_status_and_cancel_series_answer_the_series(publish: FakePublish) -> None:
    status = planning(publish).status_series(CTX, {"seriesUuid": SERIES})
    assert status == {
        "seriesUuid": SERIES,
        "status": "active",
        "occurrences": [{"uuid": UUID, "date": "2026-07-01T09:30:00Z", "status": "executed"}],
        "nextDate": "2026-07-01T09:30:00Z",
    }
    canceled = planning(publish).cancel_series(CTX, {"seriesUuid": SERIES})
    assert canceled["status"] == "canceled" and "nextDate" not in canceled
    assert [(r.organization_id, r.series_uuid) for r in publish.requests] == [
        ("org1", SERIES),
        ("org1", SERIES),
    ]


def test_reschedule_post_takes_a_queue_name(publish: FakePublish) -> None:
    answer = planning(publish).reschedule_post(
        CTX, {"kind": "story", "uuid": UUID, "queueName": "default"}
    )
    assert answer["date"] == "2026-07-01T09:30:00Z"
    (request,) = publish.requests
    assert request.queue_name == "default" and not request.HasField("date")


@pytest.mark.parametrize("given", [{}, {"date": "2026-07-01T09:30:00Z", "queueName": "default"}])
def test_reschedule_post_with_both_or_neither_is_a_400_naming_both(
    publish: FakePublish, given: dict[str, str]
) -> None:
    with pytest.raises(ApiError) as caught:
        planning(publish).reschedule_post(CTX, {"kind": "story", "uuid": UUID, **given})
    assert caught.value.status == 400
    assert set(caught.value.body["validationErrorExplanation"]) == {"date", "queueName"}
    assert publish.requests == []


def test_repeat_is_sent_and_the_answer_adds_the_series_uuid(publish: FakePublish) -> None:
    social = SocialProcedures(PublishBackends(publish), EdgeSettings())  # type: ignore[arg-type]
    params = {
        "html": "<p>x</p>",
        "socialAccountId": "sa_1",
        "socialPostUuid": UUID,
        "postType": "IMAGE_POST",
        "repeat": {"every": "P7D", "count": 3, "variants": [{"text": "a"}, {"text": "b"}]},
    }
    answer = social.schedule_social_post(CTX, params)
    assert answer["seriesUuid"] == SERIES
    (request,) = publish.requests
    assert (request.repeat.every, request.repeat.count) == ("P7D", 3)
    assert [v.text for v in request.repeat.variants] == ["a", "b"]
    # Without repeat: no repeat sent, no seriesUuid answered (the spec's answer).
    params.pop("repeat")
    assert "seriesUuid" not in social.schedule_social_post(CTX, params)
    assert not publish.requests[-1].HasField("repeat")


@pytest.mark.parametrize(
    ("repeat", "valid"),
    [
        ({"every": "P7D", "count": 3}, True),
        ({"every": "P2W", "until": "2026-09-01T00:00:00Z"}, True),
        ({"every": "P1M", "count": 3}, False),
        ({"every": "P7D", "count": 1}, False),
        ({"every": "P7D", "count": 366}, False),
        ({"every": "P7D", "count": 3, "variants": []}, False),
        ({"every": "P7D", "count": 3, "variants": [{"caption": "x"}]}, False),
        ({"every": "P7D", "count": 3, "extra": 1}, False),
    ],
)
def test_the_schema_checks_repeat(repeat: dict[str, Any], valid: bool) -> None:
    procedure = CATALOG.get("schedule-social-post")
    assert procedure is not None
    base = {"html": "<p>x</p>", "socialAccountId": "sa_1", "socialPostUuid": UUID}
    params = {**base, "postType": "IMAGE_POST", "repeat": repeat}
    assert (validate_params(procedure, params) is None) is valid

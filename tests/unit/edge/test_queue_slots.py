"""The calendar's free slots: each queue is asked from the shown week's start (so a week a
year ahead shows its slots), and only the slots within the week are shown."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from google.protobuf.timestamp_pb2 import Timestamp

from edge.web.queue_slots import PREVIEW_MOST, free_slots
from storypost.account.v1 import account_pb2 as apb
from storypost.publish.v1 import publish_pb2 as pb

WEEK = datetime(2027, 11, 1, tzinfo=UTC)  # a Monday about a year ahead


def stamp(at: datetime) -> Timestamp:
    value = Timestamp()
    value.FromDatetime(at)
    return value


class Answered:
    def __init__(self, value: Any) -> None:
        self.value = value

    def result(self) -> Any:
        return self.value


class Preview:
    def __init__(self, asked: list[pb.PreviewQueueRequest]) -> None:
        self.asked = asked

    def future(self, request: pb.PreviewQueueRequest) -> Answered:
        self.asked.append(request)
        inside, after_week = WEEK + timedelta(days=2, hours=9), WEEK + timedelta(days=8)
        return Answered(pb.PreviewQueueResponse(slots=[stamp(inside), stamp(after_week)]))


class Publish:
    def __init__(self) -> None:
        self.asked: list[pb.PreviewQueueRequest] = []
        self.PreviewQueue = Preview(self.asked)

    def ListQueues(self, request: pb.ListQueuesRequest) -> pb.ListQueuesResponse:
        return pb.ListQueuesResponse(
            queues=[pb.Queue(social_account_id="sa_1", queue_name="mornings")]
        )


def test_each_queue_is_asked_from_the_weeks_start_and_only_its_slots_are_shown() -> None:
    publish = Publish()
    accounts = {"sa_1": apb.ConnectedAccount(social_account_id="sa_1", username="alice")}
    found = free_slots(publish, accounts, "org", WEEK, WEEK + timedelta(days=7))  # type: ignore[arg-type]
    [asked] = publish.asked
    assert asked.after.ToDatetime(tzinfo=UTC) == WEEK and asked.count == PREVIEW_MOST
    assert asked.queue.queue_name == "mornings" and asked.queue.organization_id == "org"
    assert [(s.at, s.queue_name, s.account) for s in found] == [
        (WEEK + timedelta(days=2, hours=9), "mornings", "@alice")
    ]

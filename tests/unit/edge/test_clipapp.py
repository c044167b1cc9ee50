"""schedule-clipapp-post's handler: what reaches publish-svc for the cover frame (issue #7)."""

from __future__ import annotations

from typing import Any

import pytest

from edge.backends import Backends
from edge.config import EdgeSettings
from edge.procedures import clipapp
from edge.procedures.base import CallContext
from storypost.publish.v1 import publish_pb2 as pb
from storypost.publish.v1 import publish_pb2_grpc

UUID = "1c0f6582-0615-471f-9cd7-6addbf13bda7"
CTX = CallContext("org", "cred", "req", "http://h/o/org/api/v1", "http://h/o/org")


class FakePublish:
    def __init__(self, _channel: Any) -> None:
        self.requests: list[pb.ScheduleClipappPostRequest] = []
        FakePublish.last = self

    last: FakePublish

    def __getattr__(self, name: str) -> Any:  # the other methods: not called here
        return None

    def ScheduleClipappPost(
        self, request: pb.ScheduleClipappPostRequest, timeout: float
    ) -> pb.ScheduleResponse:
        self.requests.append(request)
        return pb.ScheduleResponse(
            post=pb.Post(post_uuid=request.clipapp_post_uuid, status=pb.POST_STATUS_SCHEDULED)
        )


@pytest.mark.parametrize(
    ("cover", "sent"),
    [
        (None, None),
        (0, 0),
        (1500, 1500),
        (clipapp.COVER_MAX_MS, clipapp.COVER_MAX_MS),
        # Invalid (past any clipapp video): the first frame, i.e. nothing sent; also past int64.
        (clipapp.COVER_MAX_MS + 1, None),
        (70035669515032426708992, None),
    ],
)
def test_cover_frame_reaches_publish_svc_only_when_it_can_be_a_frame(
    monkeypatch: pytest.MonkeyPatch, cover: int | None, sent: int | None
) -> None:
    monkeypatch.setattr(publish_pb2_grpc, "PublishServiceStub", FakePublish)
    backends = Backends(account=None, render=None, publish=None, webhook=None)  # type: ignore[arg-type]
    schedule = clipapp.handlers(backends, EdgeSettings())["schedule-clipapp-post"]
    params: dict[str, Any] = {"clipappPostUuid": UUID, "clipappAccountId": "a", "html": "<p>"}
    if cover is not None:
        params["videoCoverTimestampMs"] = cover
    answer = schedule(CTX, params)
    assert answer == {"clipappPostUuid": UUID, "status": "scheduled"}
    request = FakePublish.last.requests[-1]
    if sent is None:
        assert not request.HasField("video_cover_timestamp_ms")
    else:
        assert request.video_cover_timestamp_ms == sent

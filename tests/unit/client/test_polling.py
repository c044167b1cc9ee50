"""`wait_for_*` helpers against a local server: poll with backoff until a final state."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from storypost_client import (
    AsyncStorypostClient,
    PollPolicy,
    StorypostClient,
    WaitTimeoutError,
)
from tests.unit.client.support import ORG_PATH, Reply, scripted

TOKEN = "sp_test-token"
POLL = PollPolicy(initial_interval=0.1, multiplier=2.0, max_interval=0.3, timeout=10.0)
SLACK = 0.4
UUID = "bc604f8c-650a-46ed-8726-def3cdf9d0c0"


def story(status: str, **extra: Any) -> Reply:
    return Reply(200, {"storyPostUuid": UUID, "status": status, **extra})


def test_wait_for_story_polls_with_growing_intervals_until_executed() -> None:
    replies = [story("scheduled")] * 4 + [story("executed", previewUrl="http://x/p.jpg")]
    seen: list[str] = []
    with (
        scripted(replies) as server,
        StorypostClient(server.base_url, TOKEN, poll=POLL) as client,
    ):
        final = client.wait_for_story(UUID, on_status=lambda s: seen.append(s["status"]))
    assert final["status"] == "executed"
    assert final.get("previewUrl") == "http://x/p.jpg"
    assert seen == ["scheduled"] * 4 + ["executed"]
    assert server.paths() == [f"{ORG_PATH}/status-photoapp-story"] * 5
    assert all(s.json() == {"storyPostUuid": UUID} for s in server.seen)
    # 0.1, 0.2, then capped at 0.3: never a tight loop, never slower than max_interval.
    for gap, expected in zip(server.gaps(), (0.1, 0.2, 0.3, 0.3), strict=True):
        assert expected - 0.01 <= gap < expected + SLACK


@pytest.mark.parametrize(
    ("kind", "procedure", "field", "states"),
    [
        ("reel", "status-photoapp-reel", "reelPostUuid", ["scheduled", "in-progress", "failed"]),
        ("clipapp", "status-clipapp-post", "clipappPostUuid", ["in-progress", "canceled"]),
        ("social", "status-social-post", "socialPostUuid", ["scheduled", "executed"]),
        ("draft", "status-draft", "draftUuid", ["rendering", "ready"]),
    ],
)
def test_every_kind_stops_at_its_final_states(
    kind: str, procedure: str, field: str, states: list[str]
) -> None:
    replies = [Reply(200, {field: UUID, "status": state}) for state in states]
    with (
        scripted(replies) as server,
        StorypostClient(server.base_url, TOKEN, poll=POLL) as client,
    ):
        waiter: dict[str, Callable[[str], Any]] = {
            "reel": client.wait_for_reel,
            "clipapp": client.wait_for_clipapp_post,
            "social": client.wait_for_social_post,
            "draft": client.wait_for_draft,
        }
        final = waiter[kind](UUID)
    assert final["status"] == states[-1]
    assert server.paths() == [f"{ORG_PATH}/{procedure}"] * len(states)
    assert server.seen[0].json() == {field: UUID}


def test_wait_gives_up_after_its_timeout_with_the_last_status() -> None:
    with (
        scripted(lambda _seen: story("scheduled")) as server,
        StorypostClient(server.base_url, TOKEN, poll=POLL) as client,
        pytest.raises(WaitTimeoutError) as caught,
    ):
        client.wait_for_story(UUID, timeout=0.5)
    assert caught.value.last == {"storyPostUuid": UUID, "status": "scheduled"}
    assert "still scheduled after 0.5 s" in str(caught.value)
    # 0.1 + 0.2 + 0.2 (cut to the deadline): four polls at most, never a tight loop.
    assert 3 <= len(server.seen) <= 4


def test_poll_policy_never_speeds_up() -> None:
    with pytest.raises(ValueError, match="multiplier"):
        PollPolicy(multiplier=0.5)
    with pytest.raises(ValueError, match="positive"):
        PollPolicy(initial_interval=0)
    intervals = PollPolicy().intervals()
    waits = [next(intervals) for _ in range(12)]
    assert waits[0] == 1.0
    assert waits == sorted(waits)
    assert waits[-1] == 15.0


async def test_async_wait_for_draft() -> None:
    replies = [Reply(200, {"draftUuid": UUID, "status": s}) for s in ("rendering", "failed")]
    with scripted(replies) as server:
        async with AsyncStorypostClient(server.base_url, TOKEN, poll=POLL) as client:
            final = await client.wait_for_draft(UUID)
    assert final["status"] == "failed"
    assert len(server.seen) == 2
    assert 0.09 <= server.gaps()[0] < 0.1 + SLACK

"""`storypost posts list` (a table or JSON, one page or --all) and `storypost post
reschedule`, against a scripted server."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from storypost_cli.output import EXIT_BAD_INPUT
from tests.unit.client.cli_runner import run
from tests.unit.client.support import Reply, logged_in, scripted

UUID = "bc604f8c-650a-46ed-8726-def3cdf9d0c0"


def post(n: int, **extra: str) -> dict[str, str]:
    return {
        "kind": "story",
        "uuid": f"{n:08d}-0000-4000-8000-000000000000",
        "status": "scheduled",
        "date": f"2026-07-0{n}T09:30:00Z",
        "socialAccountId": "sa_1",
        **extra,
    }


def test_posts_list_prints_one_page_and_says_how_to_go_on(
    config: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    page = {
        "posts": [post(2), post(1, status="failed", errorMessage="refused")],
        "nextCursor": "c1",
    }
    with scripted([Reply(200, page)]) as server:
        logged_in(config, server)
        code, out, err = run(
            ["posts", "list", "--status", "scheduled", "--from", "2026-07-01T00:00:00+02:00"],
            capsys,
        )
    assert code == 0, err
    assert server.seen[0].json() == {"status": "scheduled", "from": "2026-06-30T22:00:00Z"}
    rows = out.splitlines()
    assert "DATE" in rows[0] and "UUID" in rows[0]
    assert "2026-07-02T09:30:00Z" in rows[1] and "refused" in rows[2]
    assert "--cursor c1" in err


def test_posts_list_all_follows_the_cursor_and_prints_json(
    config: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pages = [
        Reply(200, {"posts": [post(3)], "nextCursor": "c1"}),
        Reply(200, {"posts": [post(2)], "nextCursor": "c2"}),
        Reply(200, {"posts": [post(1)]}),
    ]
    with scripted(pages) as server:
        logged_in(config, server)
        code, out, err = run(["posts", "list", "--all", "--limit", "1", "--json"], capsys)
    assert code == 0, err
    assert [seen.json() for seen in server.seen] == [
        {"limit": 1},
        {"limit": 1, "cursor": "c1"},
        {"limit": 1, "cursor": "c2"},
    ]
    assert json.loads(out) == {"posts": [post(3), post(2), post(1)]}


def test_post_reschedule_sends_the_date_in_utc(
    config: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    moved = {"kind": "reel", "uuid": UUID, "status": "scheduled", "date": "2026-07-02T07:30:00Z"}
    with scripted([Reply(200, moved)]) as server:
        logged_in(config, server)
        code, out, err = run(
            ["post", "reschedule", "reel", UUID, "--at", "2026-07-02T09:30:00+02:00"], capsys
        )
    assert code == 0, err
    assert server.seen[0].path.endswith("/reschedule-post")
    assert server.seen[0].json() == {"kind": "reel", "uuid": UUID, "date": "2026-07-02T07:30:00Z"}
    assert "2026-07-02T07:30:00Z" in out


def test_a_date_without_offset_is_refused_before_any_request(
    config: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with scripted([]) as server:
        logged_in(config, server)
        code, _, err = run(["posts", "list", "--to", "2026-07-02T09:30:00"], capsys)
    assert code == EXIT_BAD_INPUT
    assert "--to" in err and server.seen == []


QUEUE = {
    "socialAccountId": "sa_1",
    "queueName": "default",
    "timeZone": "Europe/Berlin",
    "slots": [{"weekday": "monday", "time": "09:30"}, {"weekday": "friday", "time": "17:00"}],
    "createdAt": "2026-07-01T00:00:00Z",
    "updatedAt": "2026-07-01T00:00:00Z",
}


def test_queue_set_sends_the_slots_and_list_prints_them(
    config: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    answers = [
        Reply(200, {**QUEUE, "nextSlots": ["2026-07-03T15:00:00Z"]}),
        Reply(200, {"queues": [QUEUE]}),
        Reply(200, {"slots": ["2026-07-03T15:00:00Z", "2026-07-06T07:30:00Z"]}),
        Reply(200, {"socialAccountId": "sa_1", "queueName": "default", "deleted": True}),
    ]
    with scripted(answers) as server:
        logged_in(config, server)
        code, out, err = run(
            [
                "queue", "set", "--account", "sa_1", "--tz", "Europe/Berlin",
                "--slot", "Monday=09:30", "--slot", "friday=17:00",
            ],
            capsys,
        )  # fmt: skip
        assert code == 0, err
        assert server.seen[0].json() == {
            "socialAccountId": "sa_1",
            "queueName": "default",
            "timeZone": "Europe/Berlin",
            "slots": QUEUE["slots"],
        }
        assert "2026-07-03T15:00:00Z" in out
        code, out, _ = run(["queue", "list"], capsys)
        assert code == 0 and "mon@09:30 fri@17:00" in out
        code, out, _ = run(["queue", "preview", "--account", "sa_1", "--count", "2"], capsys)
        assert out.split() == ["2026-07-03T15:00:00Z", "2026-07-06T07:30:00Z"]
        assert server.seen[2].json() == {
            "socialAccountId": "sa_1",
            "queueName": "default",
            "count": 2,
        }
        code, out, _ = run(["queue", "delete", "--account", "sa_1", "--json"], capsys)
        assert json.loads(out)["deleted"] is True


def test_a_slot_without_a_time_is_refused_before_any_request(
    config: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with scripted([]) as server:
        logged_in(config, server)
        code, _, err = run(
            ["queue", "set", "--account", "sa_1", "--tz", "UTC", "--slot", "monday"], capsys
        )
    assert code == EXIT_BAD_INPUT and "--slot" in err and server.seen == []

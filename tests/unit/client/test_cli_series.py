"""`--queue` and `--repeat` of `storypost story|reel|clipapp|social schedule` against a
scripted server: the exact request body sent, `seriesUuid` and the queue's date printed, and
the usage errors refused before any request."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from storypost_client.cli.exits import EXIT_BAD_INPUT
from tests.unit.client.cli_runner import run
from tests.unit.client.support import ORG_PATH, Reply, logged_in, scripted

UUID = "bc604f8c-650a-46ed-8726-def3cdf9d0c0"
SERIES = "5b9a8f0e-3c1d-4e2f-9a7b-6c5d4e3f2a1b"
SLOT = "2026-12-07T08:30:00Z"
URL = "https://x.test/page"


def test_story_from_a_queue_sends_queue_name_and_prints_the_slot_taken(
    config: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    answer = {"storyPostUuid": UUID, "status": "scheduled", "date": SLOT}
    with scripted([Reply(200, answer)]) as server:
        logged_in(config, server)
        argv = ["story", "schedule", "--url", URL, "--account", "alice", "--uuid", UUID]
        code, out, err = run([*argv, "--queue", "mornings"], capsys)
    assert code == 0, err
    assert server.paths() == [f"{ORG_PATH}/schedule-photoapp-story"]
    assert server.seen[0].json() == {
        "url": URL,
        "photoappUsername": "alice",
        "storyPostUuid": UUID,
        "queueName": "mornings",
    }
    assert any(line.split() == ["date", SLOT] for line in out.splitlines())


def test_reel_series_sends_repeat_and_prints_the_series(
    config: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    answer = {"reelPostUuid": UUID, "status": "scheduled", "seriesUuid": SERIES}
    with scripted([Reply(200, answer), Reply(200, answer)]) as server:
        logged_in(config, server)
        argv = [
            "reel", "schedule", "--url", URL, "--account", "alice", "--uuid", UUID,
            "--at", "2026-12-07T09:30:00+01:00", "--caption", "New in",
            "--repeat", "p7d", "--count", "3", "--variant", "Week one", "--variant", "Week two",
        ]  # fmt: skip
        code, out, err = run(argv, capsys)
        assert code == 0, err
        assert any(line.split() == ["seriesUuid", SERIES] for line in out.splitlines())
        code, out, err = run([*argv, "--json"], capsys)
        assert code == 0, err
        assert json.loads(out)["seriesUuid"] == SERIES
    assert server.seen[0].json() == {
        "url": URL,
        "photoappUsername": "alice",
        "reelPostUuid": UUID,
        "date": "2026-12-07T09:30:00+01:00",
        "caption": "New in",
        "repeat": {
            "every": "P7D",
            "count": 3,
            "variants": [{"caption": "Week one"}, {"caption": "Week two"}],
        },
    }
    assert server.seen[1].json() == server.seen[0].json()


def test_clipapp_series_until_a_date_with_variants_of_several_fields(
    config: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    answer = {"clipappPostUuid": UUID, "status": "scheduled", "seriesUuid": SERIES}
    with scripted([Reply(200, answer)]) as server:
        logged_in(config, server)
        code, _, err = run(
            [
                "clipapp", "schedule", "--url", URL, "--account", "7012", "--uuid", UUID,
                "--repeat", "P2W", "--until", "2027-01-31T10:00:00+01:00",
                "--variant-json", '{"title": "Sale", "description": "All week"}',
                "--variant", "Just a description",
            ],
            capsys,
        )  # fmt: skip
    assert code == 0, err
    assert server.seen[0].json()["repeat"] == {
        "every": "P2W",
        "until": "2027-01-31T09:00:00Z",
        "variants": [
            {"title": "Sale", "description": "All week"},
            {"description": "Just a description"},
        ],
    }


def test_social_series_each_taking_the_queues_next_slot(
    config: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    answer = {"socialPostUuid": UUID, "status": "scheduled", "date": SLOT, "seriesUuid": SERIES}
    with scripted([Reply(200, answer)]) as server:
        logged_in(config, server)
        code, out, err = run(
            [
                "social", "schedule", "--url", URL, "--account", "sa_1", "--uuid", UUID,
                "--post-type", "TEXT", "--text", "hi", "--queue", "default",
                "--repeat", "queue", "--count", "5", "--json",
            ],
            capsys,
        )  # fmt: skip
    assert code == 0, err
    assert server.seen[0].json() == {
        "url": URL,
        "socialAccountId": "sa_1",
        "socialPostUuid": UUID,
        "postType": "TEXT",
        "text": "hi",
        "queueName": "default",
        "repeat": {"count": 5},
    }
    assert json.loads(out) == answer


def test_wait_keeps_the_series_and_the_queues_date_in_the_final_answer(
    config: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    scheduled = {"storyPostUuid": UUID, "status": "scheduled", "date": SLOT, "seriesUuid": SERIES}
    executed = {"storyPostUuid": UUID, "status": "executed"}
    with scripted([Reply(200, scheduled), Reply(200, executed)]) as server:
        logged_in(config, server)
        code, out, err = run(
            [
                "story", "schedule", "--url", URL, "--account", "alice", "--uuid", UUID,
                "--queue", "default", "--repeat", "P1D", "--count", "2", "--wait", "--json",
            ],
            capsys,
        )  # fmt: skip
    assert code == 0, err
    assert json.loads(out) == {**executed, "date": SLOT, "seriesUuid": SERIES}
    assert server.seen[0].json()["repeat"] == {"every": "P1D", "count": 2}


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--at", "2026-12-07T09:30:00Z", "--queue", "q"], "--at and --queue cannot be used"),
        (["--repeat", "P7D"], "exactly one of --count N (2 to 365) and --until ISO"),
        (["--repeat", "P7D", "--count", "3", "--until", "2027-01-01T00:00:00Z"], "exactly one"),
        (["--repeat", "P7D", "--count", "1"], "--count 1: from 2 to 365 posts"),
        (["--repeat", "P7D", "--count", "366"], "--count 366: from 2 to 365 posts"),
        (["--repeat", "P0D", "--count", "2"], "whole days or weeks, P1D to P52W"),
        (["--repeat", "P1M", "--count", "2"], "whole days or weeks, P1D to P52W"),
        (["--repeat", "P1DT2H", "--count", "2"], "whole days or weeks, P1D to P52W"),
        (["--repeat", "P53W", "--count", "2"], "at most P52W"),
        (["--repeat", "P365D", "--count", "2"], "at most P52W"),
        (["--repeat", "queue", "--count", "2"], "--repeat queue needs --queue NAME"),
        (["--repeat", "P7D", "--until", "2027-01-01T00:00"], "--until '2027-01-01T00:00': no UTC"),
        (["--count", "3"], "--count goes with --repeat EVERY"),
        (["--until", "2027-01-01T00:00:00Z"], "--until goes with --repeat EVERY"),
        (["--variant", "x"], "--variant goes with --repeat EVERY"),
        (
            ["--repeat", "P7D", "--count", "2", "--variant-json", '{"title": "x"}'],
            "'title' is not a text field here (caption)",
        ),
        (["--repeat", "P7D", "--count", "2", "--variant-json", '["x"]'], "a JSON object of"),
        (["--repeat", "P7D", "--count", "2", *["--variant", "v"] * 11], "11 variants: at most 10"),
    ],
)
def test_usage_errors_are_refused_before_any_request(
    config: Path, capsys: pytest.CaptureFixture[str], options: list[str], message: str
) -> None:
    with scripted([]) as server:
        logged_in(config, server)
        argv = ["reel", "schedule", "--url", URL, "--account", "alice", *options]
        code, _, err = run(argv, capsys)
    assert code == EXIT_BAD_INPUT, err
    assert message in err
    assert server.seen == []


def test_a_story_has_no_text_to_vary(config: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with scripted([]) as server:
        logged_in(config, server)
        argv = ["story", "schedule", "--url", URL, "--account", "alice", "--repeat", "P1D"]
        code, _, err = run([*argv, "--count", "2", "--variant", "x"], capsys)
    assert code == 2  # argparse's usage error: stories take no --variant
    assert "unrecognized arguments: --variant x" in err
    assert server.seen == []

"""Bulk runs against a scripted API: the SDK's sync and async runners and `storypost story|draft
bulk` (progress, 429s waited out, nothing sent twice, the results file, exit codes)."""

from __future__ import annotations

import asyncio
import json
import threading
from dataclasses import KW_ONLY, field
from pathlib import Path
from typing import Any

import pytest

from storypost_cli.output import EXIT_BAD_INPUT
from storypost_client import AsyncStorypostClient, RetryPolicy, StorypostClient
from storypost_client.bulk import BadRowsError, RowResult
from storypost_client.bulk_files import read_results
from storypost_client.cli.exits import EXIT_ROWS_FAILED
from storypost_runtime.component import component
from tests.unit.client.cli_runner import run
from tests.unit.client.support import Reply, Seen, scripted

TOKEN = "sp_bulk-test-token"
PAGE = '<h1 title="{{title}}">{{title}}</h1>'
FAST = RetryPolicy(base_delay=0.05, jitter=0.01)


def rows(count: int) -> list[dict[str, str]]:
    return [
        {"title": f"Post {n}", "when": f"2030-01-{n:02d}T09:00:00Z"} for n in range(1, count + 1)
    ]


@component
class FakeApi:
    """An idempotent API: each UUID is made once; a few calls answer 429 first."""

    _: KW_ONLY
    limited: int = 0
    retry_after: str = "1"
    made: dict[str, dict[str, Any]] = field(init=False, default_factory=dict)
    sends: int = field(init=False, default=0)
    lock: threading.Lock = field(init=False, default_factory=threading.Lock)

    def __call__(self, seen: Seen) -> Reply:
        procedure = seen.path.rsplit("/", 1)[-1]
        body = seen.json()
        with self.lock:
            if procedure == "list-photoapp-users":
                return Reply(
                    200, {"photoappUsers": [{"photoappId": "1", "photoappUsername": "alice"}]}
                )
            if procedure in ("schedule-photoapp-story", "create-draft"):
                self.sends += 1
                if self.limited:
                    self.limited -= 1
                    return Reply(
                        429,
                        {"errorMessage": "rate limit exceeded"},
                        {"Retry-After": self.retry_after},
                    )
                key = body.get("storyPostUuid") or body["draftUuid"]
                if "queueName" in body and key not in self.made:
                    # A queue's next free slot: one a day, each taken once.
                    body = {**body, "date": f"2030-02-{len(self.made) + 1:02d}T09:30:00Z"}
                made = self.made.setdefault(key, body)
                if procedure == "create-draft":
                    return Reply(200, {"draftUuid": key, "editorUrl": f"http://app/drafts/{key}"})
                slot = {"date": made["date"]} if "queueName" in made else {}
                return Reply(200, {"storyPostUuid": key, "status": "scheduled", **slot})
            key = body.get("storyPostUuid") or body["draftUuid"]
            return Reply(200, {"status": "scheduled", "previewUrl": f"http://media/{key}.jpg"})


def test_sync_run_reports_progress_and_makes_each_post_once() -> None:
    api = FakeApi()
    seen: list[tuple[int, int, int, str]] = []
    with scripted(api) as server, StorypostClient(server.base_url, TOKEN, retry=FAST) as client:
        first = client.bulk_schedule_stories(
            PAGE,
            rows(6),
            photoapp_username="alice",
            at_column="when",
            concurrency=3,
            progress=lambda result, done, total: seen.append(
                (result.row, done, total, result.status)
            ),
        )
        again = client.bulk_schedule_stories(
            PAGE, rows(6), photoapp_username="alice", at_column="when", preview=False
        )
    assert first.ok and [r.status for r in first.results] == ["scheduled"] * 6
    assert sorted(done for _, done, _, _ in seen) == [1, 2, 3, 4, 5, 6]
    assert {total for _, _, total, _ in seen} == {6}
    assert all(r.preview_url == f"http://media/{r.uuid}.jpg" for r in first.results)
    assert [r.uuid for r in again.results] == [r.uuid for r in first.results]
    assert len(api.made) == 6 and api.sends == 12  # sent twice, made once
    assert api.made[str(first.results[0].uuid)]["date"] == "2030-01-01T09:00:00Z"


def test_async_run_waits_out_429s_as_retry_after_asks() -> None:
    api = FakeApi(limited=12, retry_after="1")

    async def scenario() -> Any:
        async with AsyncStorypostClient(
            server.base_url, TOKEN, retry=RetryPolicy(max_attempts=2, base_delay=0.05, jitter=0.01)
        ) as client:
            return await client.bulk_create_drafts(
                PAGE, rows(4), folder_name="F", concurrency=4, preview=False
            )

    with scripted(api) as server:
        report = asyncio.run(scenario())
        gaps = server.gaps()
    assert [r.status for r in report.results] == ["created"] * 4
    assert len(api.made) == 4
    # Every 429 asked for a second: some request waited about that long.
    assert max(gaps) >= 0.9
    assert report.results[0].editor_url == f"http://app/drafts/{report.results[0].uuid}"


def test_a_quota_429_fails_the_row_at_once() -> None:
    api = FakeApi(limited=1, retry_after="7200")
    with scripted(api) as server, StorypostClient(server.base_url, TOKEN, retry=FAST) as client:
        report = client.bulk_create_drafts(PAGE, rows(1), preview=False)
    assert report.results[0].status == "failed"
    assert report.results[0].error == "rate limit exceeded (HTTP 429)"
    assert api.sends == 1


def test_bad_rows_send_nothing_unless_skipped() -> None:
    api = FakeApi()
    data: list[dict[str, str]] = [*rows(2), {"title": "late", "when": "2020-01-01T00:00:00Z"}]
    with scripted(api) as server, StorypostClient(server.base_url, TOKEN, retry=FAST) as client:
        with pytest.raises(BadRowsError, match="row 3: date 2020-01-01T00:00:00Z is in the past"):
            client.bulk_schedule_stories(PAGE, data, photoapp_username="alice", at_column="when")
        assert server.seen == []
        report = client.bulk_schedule_stories(
            PAGE, data, photoapp_username="alice", at_column="when", skip_bad_rows=True
        )
    assert [r.status for r in report.results] == ["scheduled", "scheduled", "skipped"]
    assert report.results[2].error == "date 2020-01-01T00:00:00Z is in the past"
    assert len(api.made) == 2


def test_an_unknown_account_is_refused_before_sending() -> None:
    api = FakeApi()
    not_connected = "'bob' is not connected \\(connected: alice\\)"
    with (
        scripted(api) as server,
        StorypostClient(server.base_url, TOKEN, retry=FAST) as client,
        pytest.raises(ValueError, match=not_connected),
    ):
        client.bulk_schedule_stories(PAGE, rows(2), photoapp_username="bob", at_column="when")
    assert api.sends == 0


def test_rows_done_by_an_earlier_run_are_not_sent() -> None:
    api = FakeApi()
    with scripted(api) as server, StorypostClient(server.base_url, TOKEN, retry=FAST) as client:
        first = client.bulk_create_drafts(PAGE, rows(3), preview=False)
        failed = RowResult(row=3, status="failed", uuid=first.results[2].uuid, error="boom")
        previous = [*first.results[:2], failed]
        again = client.bulk_create_drafts(PAGE, rows(3), preview=False, previous=previous)
    assert [r.status for r in again.results] == ["already-created", "already-created", "created"]
    assert api.sends == 4


# The command.


@pytest.fixture
def logged_in(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("STORYPOST_CONFIG", str(tmp_path / "config.json"))
    monkeypatch.setenv("STORYPOST_API_TOKEN", TOKEN)
    return tmp_path


def bulk_files(folder: Path, template: str, data_name: str, data: str) -> list[str]:
    """Writes the template and the data file into `folder`: their --template and --data."""
    (folder / "page.html").write_text(template)
    (folder / data_name).write_text(data)
    return ["--template", str(folder / "page.html"), "--data", str(folder / data_name)]


def test_story_bulk_command(
    logged_in: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    files = bulk_files(
        logged_in, PAGE, "rows.csv", "title\n" + "".join(f"Post {n}\n" for n in range(1, 4))
    )
    api = FakeApi()
    with scripted(api) as server:
        monkeypatch.setenv("STORYPOST_BASE_URL", server.base_url)
        argv = ["story", "bulk", *files]
        argv += ["--account", "alice", "--start", "2030-01-01T09:00:00Z", "--every", "1d"]
        code, out, err = run([*argv, "--progress", "plain"], capsys)
        assert code == 0, err
        lines = [line for line in err.splitlines() if line.startswith("story bulk [")]
        assert len(lines) == 3 and {line[:16] for line in lines} == {
            "story bulk [1/3]",
            "story bulk [2/3]",
            "story bulk [3/3]",
        }
        assert "scheduled  3" in out and "total      3" in out
        results = logged_in / "rows.results.csv"
        assert f"results: {results}" in out
        first = read_results(results)
        assert [(r.row, r.status, r.date) for r in first] == [
            (1, "scheduled", "2030-01-01T09:00:00Z"),
            (2, "scheduled", "2030-01-02T09:00:00Z"),
            (3, "scheduled", "2030-01-03T09:00:00Z"),
        ]
        # Again: the results file says they are done; nothing is sent.
        sends = api.sends
        code, out, err = run([*argv, "--progress", "none", "--json"], capsys)
        assert code == 0, err
        answer = json.loads(out)
        assert answer["counts"] == {"already-scheduled": 3}
        assert [r["uuid"] for r in answer["results"]] == [r.uuid for r in first]
        assert api.sends == sends
        # --fresh sends them again: the API makes nothing twice.
        code, out, err = run([*argv, "--progress", "none", "--fresh", "--no-preview"], capsys)
        assert code == 0, err
        assert api.sends == sends + 3 and len(api.made) == 3


def test_bulk_command_bad_rows_exit_3_and_send_nothing(
    logged_in: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    rows = [{"title": "a", "body": "b"}, {"title": "c"}]
    files = bulk_files(logged_in, PAGE + "{{body}}", "rows.json", json.dumps(rows))
    api = FakeApi()
    with scripted(api) as server:
        monkeypatch.setenv("STORYPOST_BASE_URL", server.base_url)
        argv = ["draft", "bulk", *files]
        code, _, err = run(argv, capsys)
        assert code == EXIT_BAD_INPUT
        assert "1 of 2 rows cannot be sent; nothing was sent" in err
        assert "row 2: no value in column 'body'" in err
        assert server.seen == []
        assert not (logged_in / "rows.results.json").exists()
        code, out, err = run([*argv, "--skip-bad-rows", "--no-preview", "--folder", "F"], capsys)
        assert code == 0, err
        assert "row 2: skipped: no value in column 'body'" in out
        saved = json.loads((logged_in / "rows.results.json").read_text())
        assert [r["status"] for r in saved] == ["created", "skipped"]


def test_bulk_command_failed_rows_exit_10(
    logged_in: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    files = bulk_files(logged_in, PAGE, "rows.csv", "title\nA\n")
    with scripted([Reply(400, {"errorMessage": "draft quota reached"})]) as server:
        monkeypatch.setenv("STORYPOST_BASE_URL", server.base_url)
        argv = ["draft", "bulk", *files]
        code, out, _ = run([*argv, "--results", str(logged_in / "out.json")], capsys)
    assert code == EXIT_ROWS_FAILED
    assert "row 1: failed: draft quota reached (HTTP 400)" in out


def test_story_bulk_to_a_queue_records_each_rows_slot(
    logged_in: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    files = bulk_files(logged_in, PAGE, "rows.csv", "title\nA\nB\n")
    api = FakeApi()
    with scripted(api) as server:
        monkeypatch.setenv("STORYPOST_BASE_URL", server.base_url)
        argv = ["story", "bulk", *files, "--account", "alice", "--queue", "mornings"]
        code, out, err = run([*argv, "--concurrency", "1", "--no-preview", "--json"], capsys)
        assert code == 0, err
        sent = [seen.json() for seen in server.seen if seen.path.endswith("-story")]
        assert [body["queueName"] for body in sent] == ["mornings", "mornings"]
        assert all("date" not in body for body in sent)
        answer = json.loads(out)
        assert [(r["row"], r["date"]) for r in answer["results"]] == [
            (1, "2030-02-01T09:30:00Z"),
            (2, "2030-02-02T09:30:00Z"),
        ]
        assert [r.date for r in read_results(logged_in / "rows.results.csv")] == [
            "2030-02-01T09:30:00Z",
            "2030-02-02T09:30:00Z",
        ]
        code, _, err = run([*argv, "--at", "when"], capsys)
        assert code == 2 and "not allowed with argument" in err  # argparse's usage error

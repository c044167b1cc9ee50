"""The caller commands of `storypost` against a local server: output, exit codes, login file."""

from __future__ import annotations

import io
import json
import stat
from pathlib import Path
from typing import Any

import pytest

from storypost_cli.output import (
    EXIT_AUTH,
    EXIT_BAD_INPUT,
    EXIT_RATE_LIMITED,
    EXIT_SERVER,
    EXIT_UNAVAILABLE,
)
from tests.unit.client.cli_runner import run
from tests.unit.client.support import (
    ORG_PATH,
    TOKEN,
    Reply,
    Seen,
    logged_in,
    scripted,
)

UUID = "bc604f8c-650a-46ed-8726-def3cdf9d0c0"


def uuid_reply() -> Reply:
    return Reply(200, {"uuid": UUID})


def test_login_checks_the_token_and_saves_it_0600(
    config: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    with scripted([uuid_reply(), uuid_reply()]) as server:
        monkeypatch.setattr("sys.stdin", io.StringIO(TOKEN + "\n"))
        code, out, err = run(
            ["login", "--base-url", server.base_url + "/", "--token-stdin"], capsys
        )
        assert code == 0, err
        assert TOKEN not in out + err
        assert f"logged in to {server.base_url}" in out
        assert json.loads(config.read_text()) == {"baseUrl": server.base_url, "token": TOKEN}
        assert stat.S_IMODE(config.stat().st_mode) == 0o600
        assert stat.S_IMODE(config.parent.stat().st_mode) == 0o700
        # The saved login is used by the next command.
        code, out, _ = run(["uuid", "--json"], capsys)
    assert code == 0
    assert json.loads(out) == {"uuid": UUID}
    assert server.paths() == [f"{ORG_PATH}/generate-uuid"] * 2
    assert all(s.headers["Authorization"] == f"Bearer {TOKEN}" for s in server.seen)


def test_login_with_a_refused_token_saves_nothing(
    config: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    with scripted([Reply(401, {"errorMessage": "not authenticated"})]) as server:
        monkeypatch.setattr("sys.stdin", io.StringIO("sp_wrong\n"))
        code, _, err = run(["login", "--base-url", server.base_url, "--token-stdin"], capsys)
    assert code == EXIT_AUTH
    assert "refused" in err
    assert not config.exists()


def test_commands_without_a_login_exit_with_the_auth_code(
    config: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run(["uuid"], capsys)
    assert code == EXIT_AUTH
    assert "storypost login" in err


def test_logout_forgets_the_login(
    config: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    with scripted([]) as server:
        logged_in(config, server)
    code, out, _ = run(["logout"], capsys)
    assert code == 0 and not config.exists() and "removed" in out


@pytest.mark.parametrize(
    ("reply", "code"),
    [
        (
            Reply(
                400,
                {
                    "errorMessage": "invalid params for procedure: status-photoapp-story",
                    "validationErrorExplanation": {"storyPostUuid": ["not a valid uuid"]},
                },
            ),
            EXIT_BAD_INPUT,
        ),
        (Reply(401, {"errorMessage": "not authenticated"}), EXIT_AUTH),
        (
            Reply(429, {"errorMessage": "rate limit exceeded"}, {"Retry-After": "9"}),
            EXIT_RATE_LIMITED,
        ),
        (Reply(503, {"errorMessage": "a service is temporarily unavailable"}), EXIT_UNAVAILABLE),
        (Reply(500, {"errorMessage": "internal server error"}), EXIT_SERVER),
    ],
)
def test_exit_codes_tell_failures_apart(
    config: Path, capsys: pytest.CaptureFixture[str], reply: Reply, code: int
) -> None:
    with scripted([reply]) as server:
        logged_in(config, server)
        exit_code, out, err = run(
            ["status", "story", "not-a-uuid", "--attempts", "1", "--json"], capsys
        )
    assert exit_code == code
    assert reply.body["errorMessage"] in err
    assert json.loads(out)["httpStatus"] == reply.status
    if code == EXIT_BAD_INPUT:
        assert "storyPostUuid: not a valid uuid" in err
    if code == EXIT_RATE_LIMITED:
        assert "retry after 9 s" in err


def test_story_schedule_with_wait_prints_the_final_status(
    config: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    page = tmp_path / "story.html"
    page.write_text("<photoapp-story><h1>Hello</h1></photoapp-story>")
    replies = [
        Reply(200, {"storyPostUuid": UUID, "status": "scheduled", "warnings": ["w1"]}),
        Reply(200, {"storyPostUuid": UUID, "status": "scheduled"}),
        Reply(200, {"storyPostUuid": UUID, "status": "executed", "previewUrl": "http://p/x.jpg"}),
    ]
    with scripted(replies) as server:
        logged_in(config, server)
        code, out, err = run(
            [
                "story", "schedule", "--html", str(page), "--account", "alice",
                "--at", "2020-01-01T10:00:00+02:00", "--uuid", UUID, "--wait", "--json",
            ],
            capsys,
        )  # fmt: skip
    assert code == 0, err
    assert json.loads(out) == {
        "storyPostUuid": UUID,
        "status": "executed",
        "previewUrl": "http://p/x.jpg",
        "warnings": ["w1"],
    }
    assert server.seen[0].json() == {
        "photoappUsername": "alice",
        "html": page.read_text(),
        "storyPostUuid": UUID,
        "date": "2020-01-01T10:00:00+02:00",
    }
    assert server.paths()[1:] == [f"{ORG_PATH}/status-photoapp-story"] * 2
    assert f"story {UUID}: scheduled" in err and f"story {UUID}: executed" in err


def test_wait_for_a_failed_post_exits_8(config: Path, capsys: pytest.CaptureFixture[str]) -> None:
    failed = {"reelPostUuid": UUID, "status": "failed", "errorMessage": "platform said no"}
    with scripted([Reply(200, failed)]) as server:
        logged_in(config, server)
        code, out, _ = run(["status", "reel", UUID, "--wait"], capsys)
    assert code == 8
    assert "platform said no" in out


def test_bad_values_are_refused_before_any_request(
    config: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    with scripted([]) as server:
        logged_in(config, server)
        no_zone = ["story", "schedule", "--url", "https://x.test/", "--account", "a"]
        code, _, err = run([*no_zone, "--at", "2026-07-01T09:30:00"], capsys)
        assert code == EXIT_BAD_INPUT and "no UTC offset" in err
        code, _, err = run(["draft", "create", "--html", str(tmp_path / "missing.html")], capsys)
        assert code == EXIT_BAD_INPUT
        code, _, err = run(["call", "generate-uuid", "[1]"], capsys)
        assert code == EXIT_BAD_INPUT and "JSON object" in err
    assert server.seen == []


def test_social_schedule_sends_typed_options(
    config: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with scripted([Reply(200, {"socialPostUuid": UUID, "status": "in-progress"})]) as server:
        logged_in(config, server)
        code, out, err = run(
            [
                "social", "schedule", "--url", "https://x.test/page", "--account", "sa_1",
                "--post-type", "VIDEO", "--text", "hi", "--option", "privacyLevel=SELF_ONLY",
                "--option", "disableComment=true", "--option", "maxViews=3",
            ],
            capsys,
        )  # fmt: skip
    assert code == 0, err
    sent = server.seen[0].json()
    assert sent["options"] == {"privacyLevel": "SELF_ONLY", "disableComment": True, "maxViews": 3}
    assert sent["url"] == "https://x.test/page" and "html" not in sent
    assert "in-progress" in out


def test_blob_upload_reports_progress_and_prints_the_url(
    config: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    clip = tmp_path / "clip.mp4"
    clip.write_bytes(b"v" * 1_000_000)

    def answer(seen: Seen) -> Reply:
        if seen.method == "PUT":
            return Reply(200, {})
        blob = seen.json()["tempBlobUuid"]
        return Reply(
            200,
            {
                "tempBlobUuid": blob,
                "url": f"http://api.test/blobs/{blob}",
                "uploadUrl": f"{server.url}/store/{blob}",
            },
        )

    with scripted(answer) as server:
        logged_in(config, server)
        code, out, err = run(["blob", "upload", str(clip), "--json"], capsys)
    assert code == 0, err
    uploaded: dict[str, Any] = json.loads(out)
    assert uploaded["url"].startswith("http://api.test/blobs/")
    assert uploaded["method"] == "presigned" and uploaded["sizeBytes"] == 1_000_000
    lines = [line for line in err.splitlines() if line.startswith("upload clip.mp4:")]
    assert lines[0] == "upload clip.mp4: 0% (0 of 1000000 bytes)"
    assert lines[-1] == "upload clip.mp4: 100% (1000000 of 1000000 bytes)"
    assert len(lines) >= 3
    assert server.seen[1].body == clip.read_bytes()


def test_accounts_list_prints_a_table(config: Path, capsys: pytest.CaptureFixture[str]) -> None:
    accounts = {
        "socialAccounts": [
            {
                "socialAccountId": "sa_1",
                "platform": "PHOTOAPP",
                "connection": "direct",
                "displayName": "Sunny",
                "photoappUsername": "sunnyshop",
                "disconnected": False,
                "postTypes": [{"postType": "IMAGE_STORY"}, {"postType": "REEL"}],
            },
            {
                "socialAccountId": "sa_2",
                "platform": "PINBOARD",
                "connection": "social",
                "displayName": "Ideas",
                "disconnected": True,
            },
        ]
    }
    with scripted([Reply(200, accounts)]) as server:
        logged_in(config, server)
        code, out, _ = run(["accounts", "list"], capsys)
    assert code == 0
    rows = out.splitlines()
    assert "PLATFORM" in rows[0] and "USE AS --account" in rows[0]
    assert "sunnyshop" in rows[1] and "IMAGE_STORY,REEL" in rows[1] and "false" in rows[1]
    assert "sa_2" in rows[2] and "true" in rows[2]


def test_a_login_file_readable_by_others_is_reported(
    config: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with scripted([uuid_reply()]) as server:
        logged_in(config, server)
        config.chmod(0o644)
        code, out, err = run(["uuid"], capsys)
    assert code == 0 and out.strip() == UUID
    assert "readable by others; chmod 600" in err

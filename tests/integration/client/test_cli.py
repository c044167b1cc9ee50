"""The `storypost` caller commands end to end: a real process against the real stack."""

from __future__ import annotations

import base64
import stat
import uuid
from pathlib import Path

import httpx
import pytest

from storypost.testing.stack import StackHandle
from storypost_cli.output import EXIT_AUTH, EXIT_BAD_INPUT, EXIT_RATE_LIMITED, EXIT_UNAVAILABLE
from tests.integration.client.conftest import (
    Storypost,
    connect_sandbox_account,
    rate_limit_exhausted,
)
from tests.support.api import Api, Org

pytestmark = pytest.mark.usefixtures("process_pass_only")

# A 1x1 PNG.
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
)


async def login(storypost: Storypost, org: Org) -> None:
    ran = await storypost("login", "--base-url", org.base_url, "--token-stdin", stdin=org.token)
    assert ran.code == 0, ran.err


async def test_login_then_a_call_with_json(storypost: Storypost, cli_home: Path, org: Org) -> None:
    ran = await storypost(
        "login", "--base-url", org.base_url, "--token-stdin", "--json", stdin=org.token + "\n"
    )
    assert ran.code == 0, ran.err
    assert ran.json() == {"baseUrl": org.base_url, "configPath": str(cli_home)}
    assert org.token not in ran.out + ran.err
    assert stat.S_IMODE(cli_home.stat().st_mode) == 0o600
    assert stat.S_IMODE(cli_home.parent.stat().st_mode) == 0o700

    ran = await storypost("uuid", "--json")
    assert ran.code == 0, ran.err
    assert uuid.UUID(ran.json()["uuid"]).version == 4
    ran = await storypost("call", "generate-uuid", "{}")
    assert ran.code == 0 and uuid.UUID(ran.json()["uuid"])


async def test_bad_input_exits_3_with_the_explanation(storypost: Storypost, org: Org) -> None:
    await login(storypost, org)
    ran = await storypost("status", "story", "not-a-uuid")
    assert ran.code == EXIT_BAD_INPUT
    assert "invalid params for procedure: status-photoapp-story (HTTP 400)" in ran.err
    assert "storyPostUuid: not a valid uuid" in ran.err
    ran = await storypost("status", "story", "not-a-uuid", "--json")
    assert ran.code == EXIT_BAD_INPUT
    body = ran.json()
    assert body["httpStatus"] == 400
    assert body["validationErrorExplanation"] == {"storyPostUuid": ["not a valid uuid"]}


async def test_auth_failures_exit_4(storypost: Storypost, cli_home: Path, org: Org) -> None:
    ran = await storypost(
        "login", "--base-url", org.base_url, "--token-stdin", stdin="sp_" + "A" * 43
    )
    assert ran.code == EXIT_AUTH
    assert "refused" in ran.err
    assert not cli_home.exists()
    ran = await storypost("uuid")
    assert ran.code == EXIT_AUTH and "storypost login" in ran.err
    ran = await storypost(
        "uuid",
        env={"STORYPOST_BASE_URL": org.base_url, "STORYPOST_API_TOKEN": org.token + "x"},
    )
    assert ran.code == EXIT_AUTH
    assert "not authenticated (HTTP 401)" in ran.err


async def test_rate_limit_exits_5(storypost: Storypost, api: Api, fresh_org: Org) -> None:
    await login(storypost, fresh_org)
    async with rate_limit_exhausted(api, fresh_org):
        for _ in range(3):  # a token refilled at just the wrong moment lets one call through
            ran = await storypost("uuid", "--attempts", "1")
            if ran.code != 0:
                break
    assert ran.code == EXIT_RATE_LIMITED, ran.err
    assert "rate limit exceeded" in ran.err and "(HTTP 429)" in ran.err
    assert "retry after" in ran.err


async def test_an_unreachable_api_exits_6(storypost: Storypost, org: Org) -> None:
    dead = "http://127.0.0.1:9/o/x/api/v1"
    ran = await storypost(
        "uuid", "--attempts", "2", env={"STORYPOST_BASE_URL": dead, "STORYPOST_API_TOKEN": "t"}
    )
    assert ran.code == EXIT_UNAVAILABLE
    assert "connection failed" in ran.err
    assert "attempt 2 in" in ran.err  # the retry was announced


async def test_blob_upload_shows_progress(storypost: Storypost, org: Org, tmp_path: Path) -> None:
    await login(storypost, org)
    image = tmp_path / "pixel.png"
    image.write_bytes(PNG)
    ran = await storypost("blob", "upload", str(image), "--progress", "plain", "--json")
    assert ran.code == 0, ran.err
    uploaded = ran.json()
    assert uploaded["method"] == "presigned"
    size = len(image.read_bytes())
    lines = [line for line in ran.err.splitlines() if line.startswith("upload pixel.png:")]
    assert lines[0] == f"upload pixel.png: 0% (0 of {size} bytes)"
    assert lines[-1] == f"upload pixel.png: 100% ({size} of {size} bytes)"
    async with httpx.AsyncClient(follow_redirects=True) as http:
        fetched = await http.get(uploaded["url"])
    assert fetched.status_code == 200
    assert fetched.content == image.read_bytes()


async def test_story_schedule_wait_publishes_on_the_sandbox(
    storypost: Storypost, storypost_stack: StackHandle, fresh_org: Org, tmp_path: Path
) -> None:
    account = await connect_sandbox_account(storypost, storypost_stack, fresh_org, "photoapp")
    await login(storypost, fresh_org)
    page = tmp_path / "story.html"
    page.write_text(
        "<!doctype html><html><body style='margin:0;width:1080px;height:1920px;"
        "background:#ff7a59'><photoapp-story><h1 style='font-size:96px'>Hello sandbox</h1>"
        "</photoapp-story></body></html>"
    )
    ran = await storypost(
        "story", "schedule", "--html", str(page), "--account", account["username"],
        "--wait", "--wait-timeout", "180", "--json",
    )  # fmt: skip
    assert ran.code == 0, ran.err
    final = ran.json()
    assert final["status"] == "executed"
    assert uuid.UUID(final["storyPostUuid"])
    assert f"story {final['storyPostUuid']}: executed" in ran.err
    ran = await storypost("status", "story", final["storyPostUuid"], "--json")
    assert ran.code == 0 and ran.json()["status"] == "executed"

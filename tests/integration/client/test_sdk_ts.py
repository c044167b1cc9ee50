"""The TypeScript SDK against the real stack, with Node's own test runner
(sdk-ts/test/stack.test.mjs): a story scheduled and waited for until `executed`, a validation
error's body, a 429 waited out and pacing after it, an upload, another organization's UUID not
found. This test makes the organizations and the sandbox account, then runs the file."""

from __future__ import annotations

import asyncio
import os

import pytest

from storypost.testing.stack import StackHandle
from tests.integration.client.conftest import Storypost, connect_sandbox_account
from tests.support.api import Api, only_in_passes
from tests.support.node import SDK, build_sdk, node_ready

# Rendering and posting a story on a busy machine, a few rate-limit waits: well below this.
NODE_TIMEOUT_SECONDS = 480.0


@pytest.fixture(scope="module")
def process_pass_only(request: pytest.FixtureRequest) -> None:
    only_in_passes(
        request,
        "processes",
        why="the SDK calls the same HTTP API in every shape (the Python SDK's tests run in each)",
    )


@pytest.mark.timeout(NODE_TIMEOUT_SECONDS + 120)
async def test_the_typescript_sdk_against_the_stack(
    process_pass_only: None, storypost: Storypost, storypost_stack: StackHandle, api: Api
) -> None:
    node = node_ready()
    await asyncio.to_thread(build_sdk)
    org = await api.admin.create_org("typescript sdk org")
    other = await api.admin.create_org("typescript sdk other org")
    limited = await api.admin.create_org("typescript sdk rate-limited org")
    account = await connect_sandbox_account(storypost, storypost_stack, org, "photoapp")
    env = {
        **os.environ,
        "STORYPOST_BASE_URL": org.base_url,
        "STORYPOST_API_TOKEN": org.token,
        "STORYPOST_PHOTOAPP_USERNAME": account["username"],
        "STORYPOST_OTHER_BASE_URL": other.base_url,
        "STORYPOST_OTHER_TOKEN": other.token,
        "STORYPOST_LIMITED_BASE_URL": limited.base_url,
        "STORYPOST_LIMITED_TOKEN": limited.token,
    }
    process = await asyncio.create_subprocess_exec(
        node,
        "--test",
        "--test-reporter=spec",
        str(SDK / "test" / "stack.test.mjs"),
        cwd=SDK,
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    try:
        out, _ = await asyncio.wait_for(process.communicate(), NODE_TIMEOUT_SECONDS)
    except TimeoutError:
        process.kill()
        await process.wait()
        raise
    report = out.decode()
    assert process.returncode == 0, report
    # Every test ran (none skipped for a missing setting) and passed.
    assert "skipped 0" in report and "fail 0" in report and "pass 5" in report, report

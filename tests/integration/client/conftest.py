"""Fixtures of the SDK and CLI tests: clients of an organization, the `storypost` command,
connected sandbox accounts, an exhausted rate limit."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sys
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from storypost.testing.stack import StackHandle
from storypost_client import AsyncStorypostClient, StorypostClient
from tests.support.api import Api, Org, only_in_passes

# Render procedures may take long on a busy machine; the spec's 120 s is the floor.
CLI_TIMEOUT_SECONDS = 240.0


@dataclass(frozen=True)
class Ran:
    code: int
    out: str
    err: str

    def json(self) -> Any:
        return json.loads(self.out)


# storypost(*args, stdin=None, env=None) runs the command; env adds to the test environment.
Storypost = Callable[..., Awaitable[Ran]]


def sync_client(org: Org, **options: Any) -> StorypostClient:
    return StorypostClient(org.base_url, org.token, **options)


def async_client(org: Org, **options: Any) -> AsyncStorypostClient:
    return AsyncStorypostClient(org.base_url, org.token, **options)


@pytest.fixture
def cli_home(tmp_path: Path) -> Path:
    """Where the command keeps its login in a test (STORYPOST_CONFIG)."""
    return tmp_path / "config" / "storypost" / "config.json"


@pytest.fixture
def storypost(cli_home: Path) -> Storypost:
    """Runs `python -m storypost_cli ARGS` as its own process, as a user would."""

    async def run(*args: str, stdin: str | None = None, env: dict[str, str] | None = None) -> Ran:
        environment = {
            key: value
            for key, value in os.environ.items()
            if key not in ("STORYPOST_BASE_URL", "STORYPOST_API_TOKEN")
        }
        environment |= {"STORYPOST_CONFIG": str(cli_home), **(env or {})}
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "storypost_cli",
            *args,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=environment,
        )
        try:
            out, err = await asyncio.wait_for(
                process.communicate(stdin.encode() if stdin is not None else b""),
                CLI_TIMEOUT_SECONDS,
            )
        except TimeoutError:
            process.kill()
            await process.wait()
            raise
        assert process.returncode is not None
        return Ran(process.returncode, out.decode(), err.decode())

    return run


async def connect_sandbox_account(
    storypost: Storypost, stack: StackHandle, org: Org, platform: str, **extra: str
) -> dict[str, Any]:
    """Connects a new sandbox account through `storypost sandbox connect` (issue #4's command);
    returns its JSON. The username is unique per call."""
    username = f"{platform[:4]}{uuid.uuid4().hex[:10]}"
    options = [item for key, value in extra.items() for item in (f"--{key}", value)]
    ran = await storypost(
        "sandbox", "connect", "--org", org.organization_id, "--platform", platform,
        "--username", username, *options,
        env=stack.env,
    )  # fmt: skip
    assert ran.code == 0, ran.err
    account: dict[str, Any] = ran.json()
    account.setdefault("username", username)
    return account


@contextlib.asynccontextmanager
async def rate_limit_exhausted(api: Api, org: Org) -> AsyncIterator[None]:
    """Spends the organization's whole bucket and keeps spending what refills (one token a
    second) until the block ends, so a call made inside the block is answered 429."""
    stop = asyncio.Event()
    limited = asyncio.Event()

    async def spend() -> None:
        while not stop.is_set():
            answer = await api.call(org, "generate-uuid", {})
            if answer.status_code == 429:
                limited.set()

    workers = [asyncio.create_task(spend()) for _ in range(4)]
    try:
        await asyncio.wait_for(limited.wait(), 60)
        yield
    finally:
        stop.set()
        await asyncio.gather(*workers, return_exceptions=True)


@pytest.fixture(scope="module")
def process_pass_only(request: pytest.FixtureRequest) -> None:
    """For the CLI's tests: the command is a client of the HTTP API, the same whatever runs
    behind the edge; the SDK's tests run in every pass and hold that contract there."""
    only_in_passes(
        request,
        "processes",
        why="the CLI calls the same HTTP API in every shape (the SDK's tests run in each)",
    )

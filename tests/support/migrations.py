"""Running the migrate command (`python -m storypost_cli.migrate`, what the Job runs) and a
production service against a stand-in database, from a test's event loop (which may be the
one serving that database: the processes are awaited, never waited on)."""

from __future__ import annotations

import asyncio
import os
import sys

import pytest

from publish_svc.config import PublishSettings
from tests.unit.runtime.test_production_keys import own_secrets

LIMIT_SECONDS = 120.0


def production_env(mongo_url: str, database: str) -> dict[str, str]:
    """publish-svc's production settings (and the migrate command's), on this database."""
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": os.environ.get("HOME", "/tmp"),
        **own_secrets(PublishSettings),
        "STORYPOST_ENVIRONMENT": "production",
        "STORYPOST_MONGO_URL": mongo_url,
        "STORYPOST_MONGO_DATABASE": database,
        "STORYPOST_GRPC_PORT": "0",
        # Nothing answers there: the service goes no further than its schema check.
        "STORYPOST_NATS_URL": "nats://127.0.0.1:9",
    }


async def run(
    env: dict[str, str], *args: str, limit_seconds: float = LIMIT_SECONDS
) -> tuple[int, str, str]:
    """Runs `python <args>` to its end (killed after `limit_seconds`): exit code, stdout,
    stderr."""
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        *args,
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        async with asyncio.timeout(limit_seconds):
            out, err = await process.communicate()
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
    assert process.returncode is not None
    return process.returncode, out.decode(), err.decode()


async def schema_checked(env: dict[str, str], module: str = "publish_svc") -> str:
    """Starts a service and returns its log up to the line saying its schema is ready (it is
    stopped there)."""
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        module,
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    lines: list[str] = []
    try:
        async with asyncio.timeout(LIMIT_SECONDS):
            assert process.stdout is not None
            async for raw in process.stdout:
                lines.append(raw.decode())
                if '"schema ready"' in lines[-1]:
                    return "".join(lines)
        pytest.fail(f"{module} exited (code {await process.wait()}): {''.join(lines)}")
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()

"""Render fixtures: a page server, a fake account-svc, and a render-svc of the tests' own.

The shared stack's render-svc has production settings (no address exempt from the sandbox
rules, a quota of 100). Tests that serve pages from 127.0.0.1, need a short settle time or
a small quota start one more render-svc next to it, on the same MongoDB, NATS and S3, with
`STORYPOST_RENDER_ALLOWED_HOSTS` naming the test page server and its mention lookups going
to a fake account-svc whose answers the tests choose by username.
"""

from __future__ import annotations

import os
import signal
import socket
import sys
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
import pytest

from storypost.account.v1 import account_pb2 as apb
from storypost.account.v1 import account_pb2_grpc
from storypost.render.v1 import render_pb2_grpc
from storypost.testing.stack import StackHandle
from storypost_cli.stack.process import ManagedProcess
from storypost_runtime.errors import DomainError, FailedPrecondition, NotFound, ResourceExhausted
from storypost_runtime.grpc_client import aio_channel
from storypost_runtime.service_auth import caller_signer
from storypost_runtime.status import status_for
from tests.support.grpc_service import start_serving
from tests.support.migrations import run as run_module
from tests.support.pages import PageServer, running_page_server
from tests.support.videos import make_video

QUOTA = 3
SETTLE_SECONDS = 4
UPLOAD_SECONDS = 2
# Constant 45 Mbps of noise: over the 30 Mbps rule whatever the encoder would rather do.
HEAVY = (
    "-vf", "noise=alls=60:allf=t",
    "-b:v", "45M", "-minrate", "45M", "-maxrate", "45M", "-bufsize", "20M",
    "-x264-params", "nal-hrd=cbr",
)  # fmt: skip


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@pytest.fixture(scope="session")
def page_server() -> Iterator[PageServer]:
    with running_page_server() as server:
        yield server


class FakeAccounts(account_pb2_grpc.AccountServiceServicer):
    """ResolveMention by username: busy*, ghost*, nobody* fail; others resolve."""

    async def ResolveMention(
        self, request: apb.ResolveMentionRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> apb.ResolvedMention:
        name = request.username.lower()
        error: DomainError | None = None
        if name.startswith("busy"):
            error = ResourceExhausted("every connected account is busy", retry_after_seconds=7)
        elif name.startswith("ghost"):
            error = NotFound("no such user")
        elif name.startswith("nobody"):
            error = FailedPrecondition("the organization has no connected photoapp account")
        if error is not None:
            status = status_for(error)
            await context.abort(status.code, status.details, status.trailing_metadata)
        return apb.ResolvedMention(photoapp_user_id="17841400000000042", username=name)


@pytest.fixture(scope="session")
async def fake_accounts() -> AsyncIterator[str]:
    server = grpc.aio.server()
    # Only ResolveMention is served; the other methods answer UNIMPLEMENTED.
    account_pb2_grpc.add_AccountServiceServicer_to_server(FakeAccounts(), server)  # type: ignore[abstract]
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    yield f"127.0.0.1:{port}"
    await server.stop(1)


@dataclass(frozen=True)
class RenderInstance:
    address: str
    env: dict[str, str]
    log_path: Path
    stub: render_pb2_grpc.RenderServiceAsyncStub


@pytest.fixture(scope="session")
async def render_instance(
    storypost_stack: StackHandle,
    page_server: PageServer,
    fake_accounts: str,
    tmp_path_factory: pytest.TempPathFactory,
) -> AsyncIterator[RenderInstance]:
    port = free_port()
    env = {
        **storypost_stack.env,
        "STORYPOST_GRPC_HOST": "127.0.0.1",
        "STORYPOST_GRPC_PORT": str(port),
        "STORYPOST_METRICS_PORT": "-1",
        "STORYPOST_MONGO_DATABASE": f"render_tests_{uuid.uuid4().hex[:8]}",
        "STORYPOST_ACCOUNT_ADDR": fake_accounts,
        "STORYPOST_RENDER_ALLOWED_HOSTS": f"127.0.0.1:{page_server.port}",
        "STORYPOST_RENDER_SETTLE_SECONDS": str(SETTLE_SECONDS),
        "STORYPOST_RENDER_CONCURRENCY": "2",
        "STORYPOST_DRAFT_QUOTA": str(QUOTA),
        "STORYPOST_TEMP_BLOB_UPLOAD_SECONDS": str(UPLOAD_SECONDS),
        "STORYPOST_RENDER_RESUME_INTERVAL_SECONDS": "1",
        "PYTHONUNBUFFERED": "1",
    }
    log_path = tmp_path_factory.mktemp("render-instance") / "render.log"
    process = ManagedProcess(
        name="render-tests",
        argv=[sys.executable, "-m", "render_svc"],
        env={**os.environ, **env},
        log_path=log_path,
    )
    # A database of its own: migrated first, as the Job does before a release (a production
    # stack's render-svc refuses an unmigrated one; development would migrate itself).
    code, _, err = await run_module(
        {**os.environ, **env}, "-m", "storypost_cli.migrate", "--service", "render-svc"
    )
    assert code == 0, err[-2000:]
    try:
        await start_serving(process, port, attempts=450)
        signer = caller_signer(env["STORYPOST_SERVICE_KEY"])
        channel = aio_channel(f"127.0.0.1:{port}", 60.0, signer)
        yield RenderInstance(
            f"127.0.0.1:{port}", env, log_path, render_pb2_grpc.RenderServiceStub(channel)
        )
        await channel.close()
    finally:
        await process.stop(20.0, signal.SIGTERM)


@pytest.fixture(scope="session")
def render(render_instance: RenderInstance) -> render_pb2_grpc.RenderServiceAsyncStub:
    return render_instance.stub


@pytest.fixture(scope="session")
async def stack_render(
    storypost_stack: StackHandle,
) -> AsyncIterator[render_pb2_grpc.RenderServiceAsyncStub]:
    """The shared stack's own render-svc (production settings)."""
    channel = storypost_stack.channel("render", 60.0)
    yield render_pb2_grpc.RenderServiceStub(channel)
    await channel.close()


@dataclass(frozen=True)
class Videos:
    good: Path
    mpeg4: Path
    small: Path
    long: Path
    short: Path
    heavy: Path


@pytest.fixture(scope="session")
def videos(tmp_path_factory: pytest.TempPathFactory, page_server: PageServer) -> Videos:
    """Test videos, each breaking one rule (served by the page server as /video/<name>)."""
    root = tmp_path_factory.mktemp("videos")
    found = Videos(
        good=make_video(root / "good.mp4", seconds=2, audio=True),
        mpeg4=make_video(root / "mpeg4.mp4", codec="mpeg4", seconds=1, extra=("-q:v", "8")),
        small=make_video(root / "small.mp4", size="720x1280", seconds=1),
        long=make_video(root / "long.mp4", seconds=61, fps=1, source="testsrc"),
        short=make_video(root / "short.mp4", seconds=0.3),
        heavy=make_video(root / "heavy.mp4", seconds=1, extra=HEAVY),
    )
    for name in ("good", "mpeg4", "small", "long", "short", "heavy"):
        page_server.files[f"/video/{name}.mp4"] = getattr(found, name)
    return found

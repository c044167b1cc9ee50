"""Publishing fixtures: a connected photoapp account per test, helpers to wait for outcomes."""

from __future__ import annotations

import time
import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest
from nats.aio.client import Client as NatsClient

from storypost.testing.stack import StackHandle
from tests.support.accounts import connect_account
from tests.support.api import Api, Org, upload_blob

IMAGE_STORY = (
    "<photoapp-story></photoapp-story>"
    "<div style='width:1080px;height:1920px;background:#2a6;display:flex;flex-direction:column;"
    "align-items:center;gap:40px;padding:300px 40px;box-sizing:border-box'>"
    "<h1 style='font:bold 96px sans-serif;color:#fff'>Hello</h1>"
    "<photoapp-hashtag hashtag='storypost'></photoapp-hashtag></div>"
)


def username() -> str:
    """A sandbox user of its own (quotas and limits are per platform account)."""
    return f"t{uuid.uuid4().hex[:12]}"


def platform_timeout(stack: StackHandle) -> float:
    """publish-svc's deadline of one platform call on this stack (its setting's default)."""
    return float(stack.env.get("STORYPOST_PLATFORM_TIMEOUT_SECONDS", "20"))


@pytest.fixture
async def photoapp_user(storypost_stack: StackHandle, fresh_org: Org) -> str:
    name = username()
    await connect_account(
        storypost_stack, fresh_org, "photoapp", name, linknet_destinations=["42:Page:page"]
    )
    return name


@pytest.fixture
async def bus(storypost_stack: StackHandle) -> AsyncIterator[NatsClient]:
    import nats

    client = await nats.connect(**storypost_stack.nats_options())
    yield client
    await client.close()


async def events_of(
    bus: NatsClient,
    event_type: str,
    uuid_field: str,
    post_uuid: str,
    count: int,
    within: float = 60,
) -> list[dict[str, Any]]:
    """The first `count` events of one post from the stream (from its start), in order."""
    import json

    js = bus.jetstream()
    sub = await js.subscribe(f"events.{event_type}", ordered_consumer=True)
    found: list[dict[str, Any]] = []
    deadline = time.monotonic() + within
    try:
        while len(found) < count and time.monotonic() < deadline:
            try:
                message = await sub.next_msg(timeout=max(0.1, deadline - time.monotonic()))
            except TimeoutError:
                break
            body = json.loads(message.data)
            if body["data"].get(uuid_field) == post_uuid:
                found.append({**body["data"], "_id": body["id"]})
    finally:
        await sub.unsubscribe()
    return found


@pytest.fixture(scope="session")
async def sample_video_url(api: Api, tmp_path_factory: pytest.TempPathFactory) -> str:
    """A 2 s 1080x1920 h264 video uploaded as a temp blob; its stable URL."""
    import subprocess

    org = await api.admin.create_org("video owner")
    path = tmp_path_factory.mktemp("video") / "clip.mp4"
    subprocess.run(
        [
            "ffmpeg",
            "-loglevel",
            "error",
            "-f",
            "lavfi",
            "-i",
            "testsrc=size=1080x1920:rate=30",
            "-t",
            "2",
            "-c:v",
            "libx264",
            "-pix_fmt",
            "yuv420p",
            "-b:v",
            "2M",
            str(path),
        ],
        check=True,
    )
    return await upload_blob(api, org, path.read_bytes(), "video/mp4")

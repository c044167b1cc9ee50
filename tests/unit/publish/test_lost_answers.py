"""Each driver after a lost answer, against the in-process sandbox network: the platform did
(or did not) perform the call, the answer never came back, and the next attempt must find out
what happened before sending anything new."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest

from publish_svc.drivers.base import Credentials, Driver, OutcomeKind
from publish_svc.drivers.clipapp import ClipappDriver
from publish_svc.model import Kind, Post
from publish_svc.progress import TooLate
from sandbox_net.app import Sandbox
from sandbox_net.switches import Switch
from tests.support.accounts import in_process_sandbox, sandbox_transport
from tests.unit.publish.test_drivers import (
    IMAGE,
    SECRET,
    MemoryProgress,
    clipapp,
    credentials,
    photoapp,
    post,
    published,
    social,
)

CONTENT_INIT = "/clipapp/v2/post/publish/content/init"


@dataclass
class LosingTransport(httpx.AsyncBaseTransport):
    """The sandbox, except that the answer of the next call to a path in `lose` is lost:
    "after" performs the call first (the answer is what gets lost), "before" never delivers
    the request (the platform times out on us without having seen it)."""

    inner: httpx.AsyncBaseTransport
    lose: dict[str, str] = field(default_factory=dict)
    calls: list[str] = field(default_factory=list)

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        path = request.url.path
        self.calls.append(f"{request.method} {path}")
        how = self.lose.pop(path, None)
        if how == "before":
            raise httpx.ReadTimeout("the platform did not answer", request=request)
        response = await self.inner.handle_async_request(request)
        if how == "after":
            raise httpx.ReadTimeout("the platform did not answer", request=request)
        return response


@dataclass
class World:
    sandbox: Sandbox
    transport: LosingTransport
    http: httpx.AsyncClient

    def clipapp(self) -> ClipappDriver:
        return clipapp(self.http)

    def clipapp_post(self, username: str, **fields: Any) -> tuple[Credentials, Post]:
        """The clipapp account `username` and a clipapp post of it with `fields`."""
        return credentials(self.sandbox, "clipapp", username), post(
            Kind.CLIPAPP, "CLIPAPP", **fields
        )

    def pin(self) -> tuple[Credentials, Post]:
        """The pinboard account `brand` and a pin of it."""
        return credentials(self.sandbox, "pinboard", "brand"), post(
            Kind.SOCIAL, "PINBOARD", post_type="PIN", text="hi", options={}
        )

    def calls(self, path: str) -> int:
        return sum(1 for call in self.transport.calls if path in call)

    async def processed(self, platform: str, count: int) -> None:
        """Waits for the sandbox's media workers (processing takes no time here)."""
        for _ in range(100):
            if len(published(self.sandbox, platform)) >= count:
                return
            await asyncio.sleep(0.02)


@pytest.fixture
async def world() -> AsyncIterator[World]:
    sandbox = in_process_sandbox(
        secret=SECRET, image_processing_seconds=0.0, video_processing_seconds=0.0
    )
    transport = LosingTransport(sandbox_transport(sandbox))
    async with httpx.AsyncClient(transport=transport) as http:
        yield World(sandbox, transport, http)
    sandbox.processor.close()


async def test_clipapp_init_answer_lost_after_posting_is_found_never_posted_again(
    world: World,
) -> None:
    creds, item = world.clipapp_post(
        "clipper", privacy_level="PUBLIC_TO_EVERYONE", title="launch day"
    )
    progress = MemoryProgress({})
    world.transport.lose[CONTENT_INIT] = "after"
    first = await world.clipapp().publish(item, IMAGE, creds, progress)
    # Lost: a retry, with the intent stored before the call and no publish id.
    assert first.kind is OutcomeKind.RETRY and "timed out" in first.message
    assert progress.recorded["awaiting"] == "init" and "publishId" not in progress.recorded
    await world.processed("clipapp", 1)
    again = await world.clipapp().publish(item, IMAGE, creds, progress)
    items = published(world.sandbox, "clipapp")
    assert len(items) == 1
    assert again.kind is OutcomeKind.EXECUTED and again.platform_post_id == items[0]["postId"]
    assert again.permalink == items[0]["permalink"]
    assert world.calls("/init") == 1 and world.calls("/video/list") == 1
    assert progress.recorded["awaiting"] is None


async def test_clipapp_private_post_with_a_lost_answer_fails_as_unknown(world: World) -> None:
    creds, item = world.clipapp_post("clipper", privacy_level="SELF_ONLY", title="just me")
    progress = MemoryProgress({})
    world.transport.lose[CONTENT_INIT] = "after"
    await world.clipapp().publish(item, IMAGE, creds, progress)
    await world.processed("clipapp", 1)
    again = await world.clipapp().publish(item, IMAGE, creds, progress)
    # clipapp cannot be asked about a private post: say so, never post blindly again.
    assert again.kind is OutcomeKind.FAILED
    assert again.message.startswith("clipapp: the outcome is unknown")
    assert "check the clipapp account before posting this again" in again.message
    assert world.calls("/init") == 1 and len(published(world.sandbox, "clipapp")) == 1


async def test_clipapp_lost_request_is_looked_for_until_settled_then_unknown(
    world: World,
) -> None:
    creds, item = world.clipapp_post("clipper", privacy_level="PUBLIC_TO_EVERYONE", title="gone")
    # Another public post of the account with another title is not taken for ours.
    other = MemoryProgress({})
    await world.clipapp().publish(
        post(Kind.CLIPAPP, "CLIPAPP", privacy_level="PUBLIC_TO_EVERYONE", title="x", uuid="u9"),
        IMAGE,
        creds,
        other,
    )
    progress = MemoryProgress({}, settling=True)
    world.transport.lose[CONTENT_INIT] = "before"  # the platform never saw it
    await world.clipapp().publish(item, IMAGE, creds, progress)
    waiting = await world.clipapp().publish(item, IMAGE, creds, progress)
    assert waiting.kind is OutcomeKind.RETRY and "not among" in waiting.message
    progress.settling = False
    final = await world.clipapp().publish(item, IMAGE, creds, progress)
    assert final.kind is OutcomeKind.FAILED and "outcome is unknown" in final.message
    assert world.calls("/init") == 2 and len(published(world.sandbox, "clipapp")) == 1


async def test_clipapp_init_refused_by_the_platform_may_be_sent_again(world: World) -> None:
    creds, item = world.clipapp_post("clipper", privacy_level="SELF_ONLY", title="t")
    progress = MemoryProgress({})
    world.sandbox.store.set_switch(
        Switch("clipapp", None, "offline", endpoint="post/publish/content/init")
    )
    refused = await world.clipapp().publish(item, IMAGE, creds, progress)
    # The platform answered 503: nothing was posted, so the intent is cleared.
    assert refused.kind is OutcomeKind.RETRY and progress.recorded["awaiting"] is None
    world.sandbox.store.reset_switches("clipapp")
    done = await world.clipapp().publish(item, IMAGE, creds, progress)
    assert done.kind is OutcomeKind.EXECUTED
    assert world.calls("/init") == 2 and len(published(world.sandbox, "clipapp")) == 1


async def test_social_post_found_by_its_key_past_the_deadline(world: World) -> None:
    creds, pin = world.pin()
    driver = social(world.http, "pinboard")
    progress = MemoryProgress({})
    world.transport.lose["/pinboard/v1/posts"] = "after"
    lost = await driver.publish(pin, IMAGE, creds, progress)
    assert lost.kind is OutcomeKind.RETRY
    # Past the deadline nothing new may be sent; the look-up by key still finds the post.
    progress.fail_irreversible = TooLate
    found = await driver.publish(pin, IMAGE, creds, progress)
    items = published(world.sandbox, "pinboard")
    assert found.kind is OutcomeKind.EXECUTED and found.platform_post_id == items[0]["postId"]
    assert len(items) == 1 and progress.irreversible_calls == 1


async def test_social_post_never_sent_is_not_sent_late(world: World) -> None:
    creds, pin = world.pin()
    driver = social(world.http, "pinboard")
    progress = MemoryProgress({})
    world.transport.lose["/pinboard/v1/posts"] = "before"
    await driver.publish(pin, IMAGE, creds, progress)
    progress.fail_irreversible = TooLate
    with pytest.raises(TooLate):
        await driver.publish(pin, IMAGE, creds, progress)
    assert published(world.sandbox, "pinboard") == []


async def test_photoapp_publish_answer_lost_is_found_on_its_container_past_the_deadline(
    world: World,
) -> None:
    creds = credentials(world.sandbox, "photoapp", "alice")
    driver = photoapp(world.http)
    progress = MemoryProgress({})
    world.transport.lose[f"/photoapp/v1/users/{creds.platform_account_id}/media_publish"] = "after"
    lost = await driver.publish(post(Kind.STORY), IMAGE, creds, progress)
    assert lost.kind is OutcomeKind.RETRY and progress.recorded["containerId"]
    progress.fail_irreversible = TooLate
    found = await driver.publish(post(Kind.STORY), IMAGE, creds, progress)
    items = published(world.sandbox, "photoapp")
    assert found.kind is OutcomeKind.EXECUTED and found.platform_post_id == items[0]["postId"]
    assert len(items) == 1


def refuse_once(world: World, platform: str, endpoint: str) -> None:
    """The platform's next call to `endpoint` answers 400 (a refusal, not a lost answer)."""
    world.sandbox.store.set_switch(Switch(platform, None, "fail", endpoint=endpoint, times=1))


async def test_a_refused_look_up_after_a_lost_answer_is_looked_at_again_never_failed(
    world: World,
) -> None:
    # Each driver: the publishing call performed, its answer lost, then the look-up refused.
    # "failed" would say the post did not go out; it did, so the next attempt finds it.
    photo = credentials(world.sandbox, "photoapp", "alice")
    pin_creds, pin = world.pin()
    clip_creds, clip = world.clipapp_post("cleo", title="found", privacy_level="PUBLIC_TO_EVERYONE")
    cases: list[tuple[Driver, Post, Credentials, str]] = [
        (
            photoapp(world.http),
            post(Kind.STORY),
            photo,
            f"/photoapp/v1/users/{photo.platform_account_id}/media_publish",
        ),
        (social(world.http, "pinboard"), pin, pin_creds, "/pinboard/v1/posts"),
        (world.clipapp(), clip, clip_creds, CONTENT_INIT),
    ]
    lookups = {"photoapp": "containers/*", "pinboard": "posts", "clipapp": "video/list"}
    for driver, item, creds, path in cases:
        progress = MemoryProgress({})
        platform = item.account.platform.lower()
        world.transport.lose[path] = "after"
        lost = await driver.publish(item, IMAGE, creds, progress)
        assert lost.kind is OutcomeKind.RETRY, (platform, lost)
        await world.processed(platform, 1)
        refuse_once(world, platform, lookups[platform])
        refused = await driver.publish(item, IMAGE, creds, progress)
        assert refused.kind is OutcomeKind.RETRY, (platform, refused)
        assert "whether the post was published" in refused.message
        found = await driver.publish(item, IMAGE, creds, progress)
        items = published(world.sandbox, platform)
        assert found.kind is OutcomeKind.EXECUTED, (platform, found)
        assert len(items) == 1 and found.platform_post_id == items[0]["postId"], platform


async def test_a_refused_clipapp_status_after_init_is_looked_at_again_never_failed(
    world: World,
) -> None:
    creds, item = world.clipapp_post("cleo", title="status", privacy_level="SELF_ONLY")
    progress = MemoryProgress({})
    refuse_once(world, "clipapp", "post/publish/status/fetch")
    refused = await world.clipapp().publish(item, IMAGE, creds, progress)
    assert refused.kind is OutcomeKind.RETRY and progress.recorded["publishId"]
    done = await world.clipapp().publish(item, IMAGE, creds, progress)
    assert done.kind is OutcomeKind.EXECUTED
    assert world.calls("/init") == 1 and len(published(world.sandbox, "clipapp")) == 1

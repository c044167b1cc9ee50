"""The drivers against the real sandbox network, in process (no ports, no stack)."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest

from publish_svc.drivers.base import Canceled, Credentials, LeaseLost, Media, OutcomeKind
from publish_svc.drivers.clipapp import ClipappDriver
from publish_svc.drivers.http import PlatformClient
from publish_svc.drivers.photoapp import PhotoappDriver
from publish_svc.drivers.social import SocialDriver
from publish_svc.model import AccountInfo, Kind, Post, Status
from sandbox_net.app import Sandbox
from sandbox_net.switches import Switch
from sandbox_net.tokens import TokenClaims, TokenSigner
from tests.support.accounts import in_process_sandbox, sandbox_transport
from tests.support.pages import running_page_server
from tests.unit.publish.fakes import params

SECRET = "driver-tests-secret"
BASE = "http://sandbox.test"
IMAGE = Media(kind="image", url="http://media.test/story.jpg")
VIDEO = Media(kind="video", url="http://media.test/clip.mp4", duration_seconds=12.0)


@dataclass
class MemoryProgress:
    recorded: dict[str, Any]
    fail_irreversible: type[Exception] | None = None
    irreversible_calls: int = 0
    # What `unsettled()` answers (an earlier call may still be performed).
    settling: bool = False

    async def record(self, **fields: Any) -> None:
        self.recorded.update(fields)

    async def irreversible(self, **fields: Any) -> None:
        self.irreversible_calls += 1
        if self.fail_irreversible is Canceled:
            raise Canceled("stop")
        # The mark and its fields are stored in one write, then (here) the replica dies.
        self.recorded.update(fields, irreversible=True, sentAt=datetime.now(UTC))
        if self.fail_irreversible:
            raise self.fail_irreversible("stop")

    @property
    def sent_at(self) -> datetime | None:
        value = self.recorded.get("sentAt")
        return value if isinstance(value, datetime) else None

    def unsettled(self) -> bool:
        return self.settling


@pytest.fixture
async def world() -> AsyncIterator[tuple[Sandbox, httpx.AsyncClient]]:
    sandbox = in_process_sandbox(
        secret=SECRET, image_processing_seconds=0.0, video_processing_seconds=0.0
    )
    async with httpx.AsyncClient(transport=sandbox_transport(sandbox)) as http:
        yield sandbox, http


def credentials(sandbox: Sandbox, platform: str, username: str) -> Credentials:
    account = sandbox.store.ensure_account(platform, username)
    token = TokenSigner(SECRET).issue(
        TokenClaims("at", platform, account["id"], username, time.time() + 3600)
    )
    return Credentials(token, account["id"], username)


def post(kind: Kind, platform: str = "PHOTOAPP", uuid: str = "u1", **fields: Any) -> Post:
    now = datetime(2026, 11, 23, tzinfo=UTC)
    return Post(
        id=f"{kind.value}:org:{uuid}",
        organization_id="org",
        kind=kind,
        post_uuid="u1",
        status=Status.SCHEDULED,
        account=AccountInfo("sa_1", platform, "1", "alice"),
        params=params(kind, **fields),
        date=None,
        due_at=now,
        future_date=False,
        media="image",
        warnings=[],
        stickers=[
            {
                "kind": "hashtag",
                "attributes": {"hashtag": "x"},
                "x": 1.0,
                "y": 2.0,
                "width": 3.0,
                "height": 4.0,
            }
        ],
        created_at=now,
    )


def photoapp(http: httpx.AsyncClient) -> PhotoappDriver:
    return PhotoappDriver(
        PlatformClient(http=http, base_url=f"{BASE}/photoapp/v1", platform="photoapp")
    )


def clipapp(http: httpx.AsyncClient) -> ClipappDriver:
    return ClipappDriver(
        PlatformClient(http=http, base_url=f"{BASE}/clipapp/v2", platform="clipapp")
    )


def social(http: httpx.AsyncClient, platform: str) -> SocialDriver:
    """The driver of a platform the social API serves (`pinboard`, `pronet`, ...)."""
    return SocialDriver(
        PlatformClient(http=http, base_url=f"{BASE}/{platform}/v1", platform=platform)
    )


def published(sandbox: Sandbox, platform: str) -> list[Mapping[str, Any]]:
    return [p for p in sandbox.store.published if p["platform"] == platform]


async def test_photoapp_story_publishes_with_native_stickers(world: Any) -> None:
    sandbox, http = world
    progress = MemoryProgress({})
    outcome = await photoapp(http).publish(
        post(Kind.STORY), IMAGE, credentials(sandbox, "photoapp", "alice"), progress
    )
    assert outcome.kind is OutcomeKind.EXECUTED, outcome
    items = published(sandbox, "photoapp")
    assert len(items) == 1 and items[0]["kind"] == "story"
    assert items[0]["request"]["stickers"][0]["type"] == "hashtag"
    # The container is stored with the irreversible mark, before the publish call.
    assert progress.recorded["containerId"] == items[0]["containerId"]
    assert items[0]["postId"] == outcome.platform_post_id


async def test_photoapp_resumes_a_recorded_container_and_never_publishes_twice(world: Any) -> None:
    sandbox, http = world
    creds = credentials(sandbox, "photoapp", "alice")
    progress = MemoryProgress({}, fail_irreversible=LeaseLost)
    with pytest.raises(LeaseLost):  # the replica dies right after the mark, before publishing
        await photoapp(http).publish(post(Kind.STORY), IMAGE, creds, progress)
    container = progress.recorded["containerId"]
    resumed = MemoryProgress({"containerId": container})
    first = await photoapp(http).publish(post(Kind.STORY), IMAGE, creds, resumed)
    assert first.kind is OutcomeKind.EXECUTED
    # Crash after publishing but before the outcome was stored: asking again finds it.
    again = await photoapp(http).publish(
        post(Kind.STORY), IMAGE, creds, MemoryProgress({"containerId": container})
    )
    assert again.platform_post_id == first.platform_post_id
    assert len(published(sandbox, "photoapp")) == 1


async def test_canceled_before_the_irreversible_call_publishes_nothing(world: Any) -> None:
    sandbox, http = world
    with pytest.raises(Canceled):
        await photoapp(http).publish(
            post(Kind.STORY),
            IMAGE,
            credentials(sandbox, "photoapp", "alice"),
            MemoryProgress({}, fail_irreversible=Canceled),
        )
    assert published(sandbox, "photoapp") == []


@pytest.mark.parametrize(
    ("switch", "kind", "text"),
    [
        (
            Switch("photoapp", None, "fail", message="media rejected", status=400),
            OutcomeKind.FAILED,
            "media rejected",
        ),
        (Switch("photoapp", None, "offline"), OutcomeKind.RETRY, "photoapp"),
        (
            Switch("photoapp", None, "rate-limited", retry_after_seconds=30),
            OutcomeKind.RETRY,
            "photoapp",
        ),
        (Switch("photoapp", None, "token-expired"), OutcomeKind.UNAUTHORIZED, "photoapp"),
    ],
)
async def test_platform_answers_are_classified(
    world: Any, switch: Switch, kind: OutcomeKind, text: str
) -> None:
    sandbox, http = world
    creds = credentials(sandbox, "photoapp", "alice")
    sandbox.store.set_switch(switch)
    outcome = await photoapp(http).publish(post(Kind.STORY), IMAGE, creds, MemoryProgress({}))
    assert outcome.kind is kind and text in outcome.message
    if switch.mode == "rate-limited":
        assert outcome.retry_after_seconds == 30


async def test_clipapp_refuses_what_the_creator_may_not_do_and_publishes_the_rest(
    world: Any,
) -> None:
    sandbox, http = world
    creds = credentials(sandbox, "clipapp", "clipper")
    driver = clipapp(http)
    refused = await driver.publish(
        post(Kind.CLIPAPP, "CLIPAPP", privacy_level="NOT_A_LEVEL"), VIDEO, creds, MemoryProgress({})
    )
    assert refused.kind is OutcomeKind.FAILED and "privacy level" in refused.message
    done = await driver.publish(
        post(Kind.CLIPAPP, "CLIPAPP", privacy_level="SELF_ONLY", title="t", uuid="u2"),
        IMAGE,
        creds,
        MemoryProgress({}),
    )
    assert done.kind is OutcomeKind.EXECUTED and done.raw_status == "PUBLISH_COMPLETE"
    assert len(published(sandbox, "clipapp")) == 1


async def test_social_publish_is_idempotent_by_key(world: Any) -> None:
    sandbox, http = world
    creds = credentials(sandbox, "pinboard", "brand")
    driver = social(http, "pinboard")
    pin = post(Kind.SOCIAL, "PINBOARD", post_type="PIN", text="hi", options={"boardId": "b1"})
    first = await driver.publish(pin, IMAGE, creds, MemoryProgress({}))
    second = await driver.publish(pin, IMAGE, creds, MemoryProgress({}))
    assert first.kind is OutcomeKind.EXECUTED and first.permalink
    assert second.platform_post_id == first.platform_post_id
    assert len(published(sandbox, "pinboard")) == 1


@pytest.mark.parametrize(
    ("media_url", "kind"),
    [
        # Nothing listens there: "the media could not be downloaded" (our store was away).
        ("http://127.0.0.1:9/story.jpg", OutcomeKind.RETRY),
        # Our store answered 404 for a moment (SeaweedFS restarting, seen): its answer, not
        # the media's.
        ("PAGES/missing", OutcomeKind.RETRY),
        ("ftp://media.test/story.jpg", OutcomeKind.FAILED),  # refused for what it is
    ],
)
async def test_media_the_network_could_not_download_is_retried_not_failed(
    media_url: str, kind: OutcomeKind
) -> None:
    sandbox = in_process_sandbox(
        secret=SECRET, image_processing_seconds=0.0, video_processing_seconds=0.0, fetch_media=True
    )
    with running_page_server() as pages:
        async with httpx.AsyncClient(transport=sandbox_transport(sandbox)) as http:
            progress = MemoryProgress({})
            outcome = await photoapp(http).publish(
                post(Kind.STORY),
                Media(kind="image", url=media_url.replace("PAGES", pages.url(""))),
                credentials(sandbox, "photoapp", "alice"),
                progress,
            )
    assert outcome.kind is kind, outcome
    assert published(sandbox, "photoapp") == []
    # Nothing irreversible happened: the next attempt makes a container of its own.
    assert progress.irreversible_calls == 0

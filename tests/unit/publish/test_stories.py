"""Stories: idempotent intake, the scheduler's lease, the 60-minute window, cancel rules."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest

from publish_svc.drivers.base import Outcome
from publish_svc.model import Kind, Status
from publish_svc.post_params import ReelParams, expect
from storypost.render.v1 import render_pb2 as rpb
from storypost_runtime.errors import FailedPrecondition, InvalidArgument, ResourceExhausted
from tests.unit.publish.conftest import START, Core
from tests.unit.publish.fakes import photoapp_account

UUID = "6f1c1f9e-4f0e-4c7a-9d6b-2f6f0a4b9c01"


async def test_story_is_scheduled_then_executed_at_its_date(core: Core) -> None:
    date = START + timedelta(minutes=30)
    accepted = await core.intake.story(core.new(Kind.STORY, UUID, date), "alice")
    assert accepted.post.status is Status.SCHEDULED
    assert await core.run_due() == []  # not due yet
    core.clock.advance(timedelta(minutes=30))
    assert len(await core.run_due()) == 1
    post = await core.posts.get(Kind.STORY, "org", UUID)
    assert post.status is Status.EXECUTED
    assert post.preview_url == f"http://media/{post.id}-preview.jpg"
    assert "previewUrl" not in (await core.db["posts"].find_one({"_id": post.id}) or {})
    events = await core.events(post)
    assert [e["status"] for e in events] == ["scheduled", "executed"]
    assert events[0] == {"storyPostUuid": UUID, "status": "scheduled"}
    assert core.driver.calls == [post.id]


async def test_twenty_identical_schedules_make_one_post(core: Core) -> None:
    results = await asyncio.gather(
        *(core.intake.story(core.new(Kind.STORY, UUID), "alice") for _ in range(20))
    )
    assert {r.post.id for r in results} == {results[0].post.id}
    assert {r.post.status for r in results} == {Status.SCHEDULED}
    assert await core.db["posts"].count_documents({}) == 1
    # The quota counted the post once.
    doc = await core.db["story_quota"].find_one({})
    assert doc is not None and len(doc["slots"]) == 1
    await core.run_due()
    assert len(core.driver.calls) == 1


async def test_a_story_is_never_posted_late(core: Core) -> None:
    await core.intake.story(core.new(Kind.STORY, UUID, START + timedelta(minutes=5)), "alice")
    core.clock.advance(timedelta(minutes=5 + 61))
    await core.run_due()
    post = await core.posts.get(Kind.STORY, "org", UUID)
    assert post.status is Status.FAILED
    assert post.error_message is not None and "within 60 minutes" in post.error_message
    assert core.driver.calls == []
    assert [e["status"] for e in await core.events(post)] == ["scheduled", "failed"]
    assert (await core.events(post))[1]["errorMessage"] == post.error_message


async def test_transient_errors_retry_inside_the_window_then_fail(core: Core) -> None:
    core.driver.outcomes = [Outcome.retry("photoapp: the platform is unreachable")]
    await core.intake.story(core.new(Kind.STORY, UUID), "alice")
    for _ in range(40):
        await core.run_due()
        post = await core.posts.get(Kind.STORY, "org", UUID)
        if post.status is not Status.SCHEDULED:
            break
        core.clock.advance(timedelta(minutes=3))
    assert post.status is Status.FAILED
    assert post.error_message is not None
    assert "within 60 minutes" in post.error_message and "unreachable" in post.error_message
    assert 3 <= len(core.driver.calls) <= 25


async def test_permanent_error_fails_at_once_with_the_platform_reason(core: Core) -> None:
    core.driver.outcomes = [Outcome.failed("photoapp refused the media: too small")]
    await core.intake.story(core.new(Kind.STORY, UUID), "alice")
    await core.run_due()
    post = await core.posts.get(Kind.STORY, "org", UUID)
    assert (
        post.status is Status.FAILED
        and post.error_message == "photoapp refused the media: too small"
    )


async def test_cancel_rules(core: Core) -> None:
    await core.intake.story(core.new(Kind.STORY, UUID, START + timedelta(hours=1)), "alice")
    assert (await core.posts.cancel(Kind.STORY, "org", UUID)).status is Status.CANCELED
    assert (await core.posts.cancel(Kind.STORY, "org", UUID)).status is Status.CANCELED
    core.clock.advance(timedelta(hours=1))
    assert await core.run_due() == []
    other = "6f1c1f9e-4f0e-4c7a-9d6b-2f6f0a4b9c02"
    await core.intake.story(core.new(Kind.STORY, other), "alice")
    await core.run_due()
    with pytest.raises(FailedPrecondition, match="already executed"):
        await core.posts.cancel(Kind.STORY, "org", other)
    post = await core.posts.get(Kind.STORY, "org", UUID)
    assert [e["status"] for e in await core.events(post)] == ["scheduled", "canceled"]


async def test_a_cancel_does_not_ask_render_svc_for_a_preview(core: Core) -> None:
    # Its answer is the status alone; the status call is the one that shows the preview.
    await core.intake.story(core.new(Kind.STORY, UUID, START + timedelta(hours=1)), "alice")
    core.renderer.read.clear()
    for _ in range(2):
        canceled = await core.posts.cancel(Kind.STORY, "org", UUID)
        assert canceled.status is Status.CANCELED and not canceled.preview_url
    assert core.renderer.read == []
    assert (await core.posts.get(Kind.STORY, "org", UUID)).preview_url
    assert len(core.renderer.read) == 1


async def test_cancel_while_publishing_is_429_and_changes_nothing(core: Core) -> None:
    core.driver.outcomes = [Outcome.retry("photoapp timed out")]
    await core.intake.story(core.new(Kind.STORY, UUID), "alice")
    await core.run_due()  # the publish call was made, its outcome unknown
    with pytest.raises(ResourceExhausted) as busy:
        await core.posts.cancel(Kind.STORY, "org", UUID)
    assert busy.value.retry_after_seconds == 60
    assert (await core.posts.get(Kind.STORY, "org", UUID)).status is Status.SCHEDULED


async def test_two_replicas_never_publish_one_post_twice(core: Core) -> None:
    for n in range(3):
        await core.intake.story(
            core.new(Kind.STORY, f"6f1c1f9e-4f0e-4c7a-9d6b-2f6f0a4b9c1{n}"), "alice"
        )
    await asyncio.gather(core.run_due("replica-a"), core.run_due("replica-b"))
    assert sorted(core.driver.calls) == sorted(set(core.driver.calls))
    assert len(core.driver.calls) == 3


async def test_a_crashed_replica_s_post_is_taken_over_with_its_progress(core: Core) -> None:
    await core.intake.story(core.new(Kind.STORY, UUID), "alice")
    now = core.clock.now()
    claimed = await core.store.claim_due("crashed", now, now + timedelta(seconds=60))
    assert claimed is not None
    await core.store.update_fields(claimed.id, {"progress.containerId": "c-1"}, holder="crashed")
    # Nobody else may take it while the lease holds.
    assert await core.run_due("replica-b") == []
    core.clock.advance(timedelta(seconds=61))
    await core.run_due("replica-b")
    assert core.driver.seen_progress[0].get("containerId") == "c-1"
    assert (await core.posts.get(Kind.STORY, "org", UUID)).status is Status.EXECUTED


async def test_quota_and_bad_input(core: Core) -> None:
    for n in range(3):
        await core.intake.story(
            core.new(Kind.STORY, f"6f1c1f9e-4f0e-4c7a-9d6b-2f6f0a4b9c2{n}"), "alice"
        )
    with pytest.raises(ResourceExhausted, match="story quota") as full:
        await core.intake.story(core.new(Kind.STORY, UUID), "alice")
    assert full.value.reason == "QUOTA_EXCEEDED" and full.value.retry_after_seconds
    core.clock.advance(timedelta(hours=24, seconds=1))
    assert (
        await core.intake.story(core.new(Kind.STORY, UUID), "alice")
    ).post.status is Status.SCHEDULED
    with pytest.raises(InvalidArgument, match="not connected"):
        await core.intake.story(core.new(Kind.STORY, "6f1c1f9e-4f0e-4c7a-9d6b-2f6f0a4b9c99"), "bob")
    with pytest.raises(InvalidArgument, match="not linked"):
        await core.intake.story(
            core.new(
                Kind.STORY,
                "6f1c1f9e-4f0e-4c7a-9d6b-2f6f0a4b9c98",
                share_to_linknet=True,
                linknet_destination_id="9",
            ),
            "alice",
        )
    with pytest.raises(InvalidArgument, match="in the past"):
        await core.intake.story(
            core.new(
                Kind.STORY,
                "6f1c1f9e-4f0e-4c7a-9d6b-2f6f0a4b9c97",
                core.clock.now() - timedelta(hours=2),
            ),
            "alice",
        )


async def test_refused_design_stores_nothing_and_frees_the_quota_slot(core: Core) -> None:
    core.renderer.refuse = "video codec must be h264"
    with pytest.raises(InvalidArgument, match="h264"):
        await core.intake.story(core.new(Kind.STORY, UUID), "alice")
    assert await core.db["posts"].count_documents({}) == 0
    doc = await core.db["story_quota"].find_one({})
    assert doc is not None and doc["slots"] == []


async def test_a_reel_is_shared_to_linknet_unless_told_or_unable(core: Core) -> None:
    core.renderer.media_kind = rpb.MEDIA_KIND_VIDEO
    # Unset: the default (recommended on linknet) where the account has a destination.
    shared = await core.intake.reel(
        core.new(Kind.REEL, "00000000-0000-4000-8000-00000000000a"), "alice"
    )
    assert expect(shared.post.params, ReelParams).share_to_linknet is True
    assert not any("linknet" in warning for warning in shared.warnings)
    told = await core.intake.reel(
        core.new(Kind.REEL, "00000000-0000-4000-8000-00000000000b", share_to_linknet=False), "alice"
    )
    assert expect(told.post.params, ReelParams).share_to_linknet is False
    # An account without a linknet destination posts the reel unshared, and says so.
    core.accounts.accounts["bob"] = photoapp_account("bob")
    del core.accounts.accounts["bob"].linknet_destinations[:]
    unable = await core.intake.reel(
        core.new(Kind.REEL, "00000000-0000-4000-8000-00000000000c"), "bob"
    )
    assert expect(unable.post.params, ReelParams).share_to_linknet is False
    assert any("not shared to linknet" in warning for warning in unable.warnings)

"""Social posts: the spec's event rules, options, credits, daily limits, cancel; reels; clipapp."""

from __future__ import annotations

from datetime import timedelta

import pytest

from publish_svc.drivers.base import Outcome
from publish_svc.model import Kind, Status
from publish_svc.post_params import ClipappParams, ReelParams, SocialParams, expect
from storypost.account.v1 import account_pb2 as apb
from storypost.render.v1 import render_pb2 as rpb
from storypost_runtime.errors import FailedPrecondition, InvalidArgument, ResourceExhausted
from tests.unit.publish.conftest import START, Core

UUID = "9a0e7c52-8f3d-4b59-a4a0-5d2c6f1e3b10"


async def test_future_social_post_sends_no_event_when_its_date_arrives(core: Core) -> None:
    core.driver.outcomes = [Outcome.executed("p1", permalink="http://sandbox/p/1")]
    accepted = await core.intake.social(
        core.new(Kind.SOCIAL, UUID, START + timedelta(hours=1), text="hello world, long"),
        "sa_social",
        "IMAGE_POST",
    )
    assert accepted.post.status is Status.SCHEDULED
    # Shortened to maxCaptionLength 10.
    assert expect(accepted.post.params, SocialParams).text == "hello worl"
    core.clock.advance(timedelta(hours=1))
    await core.run_due()
    post = await core.posts.get(Kind.SOCIAL, "org", UUID)
    assert post.status is Status.EXECUTED and post.permalink == "http://sandbox/p/1"
    events = await core.events(post)
    assert [e["status"] for e in events] == ["scheduled", "executed"]
    assert events[1] == {
        "socialPostUuid": UUID,
        "status": "executed",
        "socialAccountId": "sa_social",
        "platform": "LINKNET",
        "permalink": "http://sandbox/p/1",
    }
    assert core.accounts.consumed == [post.id]


async def test_social_post_without_date_is_in_progress_at_once(core: Core) -> None:
    accepted = await core.intake.social(core.new(Kind.SOCIAL, UUID), "sa_social", "IMAGE_POST")
    assert accepted.post.status is Status.IN_PROGRESS
    await core.run_due()
    post = await core.posts.get(Kind.SOCIAL, "org", UUID)
    assert [e["status"] for e in await core.events(post)] == ["in-progress", "executed"]


async def test_repeat_uuid_returns_current_status_and_other_account_is_refused(core: Core) -> None:
    await core.intake.social(core.new(Kind.SOCIAL, UUID), "sa_social", "IMAGE_POST")
    await core.run_due()
    again = await core.intake.social(core.new(Kind.SOCIAL, UUID, text="other"), "sa_social", "X")
    assert again.post.status is Status.EXECUTED
    with pytest.raises(InvalidArgument, match="another socialAccountId"):
        await core.intake.social(core.new(Kind.SOCIAL, UUID), "sa_elsewhere", "IMAGE_POST")


async def test_options_post_type_and_media_are_checked(core: Core) -> None:
    with pytest.raises(InvalidArgument) as bad:
        await core.intake.social(
            core.new(Kind.SOCIAL, UUID, options={"notfy": True, "visibility": 3}),
            "sa_social",
            "IMAGE_POST",
        )
    assert bad.value.field_violations == {
        "options.notfy": ["disallowed key", "did you mean 'notify'?"],
        "options.visibility": ["expected string"],
    }
    with pytest.raises(InvalidArgument, match="not offered"):
        await core.intake.social(core.new(Kind.SOCIAL, UUID), "sa_social", "PIN")
    core.renderer.media_kind = rpb.MEDIA_KIND_VIDEO
    with pytest.raises(InvalidArgument, match="takes image, but the design renders a video"):
        await core.intake.social(core.new(Kind.SOCIAL, UUID), "sa_social", "IMAGE_POST")
    assert await core.db["posts"].count_documents({}) == 0


async def test_due_post_waits_in_progress_for_credits_then_proceeds(core: Core) -> None:
    core.accounts.balance = 0
    await core.intake.social(
        core.new(Kind.SOCIAL, UUID, START + timedelta(minutes=1)), "sa_social", "IMAGE_POST"
    )
    core.clock.advance(timedelta(minutes=1))
    await core.run_due()
    post = await core.posts.get(Kind.SOCIAL, "org", UUID)
    assert post.status is Status.IN_PROGRESS and core.driver.calls == []
    assert [e["status"] for e in await core.events(post)] == ["scheduled"]
    core.accounts.balance = 5
    core.clock.advance(timedelta(seconds=5))
    await core.run_due()
    post = await core.posts.get(Kind.SOCIAL, "org", UUID)
    assert post.status is Status.EXECUTED and core.accounts.balance == 4


async def test_daily_limit_fails_the_post_with_a_clear_message(core: Core) -> None:
    core.accounts.daily_full = True
    await core.intake.social(core.new(Kind.SOCIAL, UUID), "sa_social", "IMAGE_POST")
    await core.run_due()
    post = await core.posts.get(Kind.SOCIAL, "org", UUID)
    assert post.status is Status.FAILED
    assert post.error_message is not None and "daily limit" in post.error_message
    assert core.driver.calls == []


async def test_cancel_social_needs_a_reachable_platform(core: Core) -> None:
    await core.intake.social(
        core.new(Kind.SOCIAL, UUID, START + timedelta(hours=2)), "sa_social", "IMAGE_POST"
    )
    core.driver.reachable_answer = False
    with pytest.raises(ResourceExhausted, match="unreachable"):
        await core.posts.cancel(Kind.SOCIAL, "org", UUID)
    assert (await core.posts.get(Kind.SOCIAL, "org", UUID)).status is Status.SCHEDULED
    core.driver.reachable_answer = True
    assert (await core.posts.cancel(Kind.SOCIAL, "org", UUID)).status is Status.CANCELED
    post = await core.posts.get(Kind.SOCIAL, "org", UUID)
    assert core.accounts.released == [post.id]


async def test_reel_needs_video_and_goes_in_progress_then_executed(core: Core) -> None:
    with pytest.raises(InvalidArgument, match="reel needs a video"):
        await core.intake.reel(core.new(Kind.REEL, UUID), "alice")
    core.renderer.media_kind = rpb.MEDIA_KIND_VIDEO
    accepted = await core.intake.reel(core.new(Kind.REEL, UUID, caption="hi"), "alice")
    assert any("not native" in w for w in accepted.warnings)
    assert expect(accepted.post.params, ReelParams).share_to_linknet is True
    await core.run_due()
    post = await core.posts.get(Kind.REEL, "org", UUID)
    assert [e["status"] for e in await core.events(post)] == [
        "scheduled",
        "in-progress",
        "executed",
    ]


async def test_reel_waits_for_rendering_and_cannot_be_canceled_once_started(core: Core) -> None:
    core.renderer.media_kind = rpb.MEDIA_KIND_VIDEO
    core.renderer.state = rpb.RENDERING_STATE_FINISHING
    await core.intake.reel(core.new(Kind.REEL, UUID), "alice")
    await core.run_due()
    assert (await core.posts.get(Kind.REEL, "org", UUID)).status is Status.SCHEDULED
    core.renderer.state = rpb.RENDERING_STATE_FINISHED
    core.driver.outcomes = [Outcome.retry("photoapp timed out")]
    core.clock.advance(timedelta(seconds=2))
    await core.run_due()
    post = await core.posts.get(Kind.REEL, "org", UUID)
    assert post.status is Status.IN_PROGRESS
    with pytest.raises(FailedPrecondition, match="posting already started"):
        await core.posts.cancel(Kind.REEL, "org", UUID)


async def test_clipapp_photo_title_limit_and_status(core: Core) -> None:
    core.accounts.accounts["7001"] = apb.ConnectedAccount(
        social_account_id="sa_clip",
        platform="CLIPAPP",
        connection=apb.CONNECTION_DIRECT,
        platform_account_id="7001",
        username="clipper",
    )
    with pytest.raises(InvalidArgument, match="photo posts allow at most 90"):
        await core.intake.clipapp(core.new(Kind.CLIPAPP, UUID, title="x" * 91), "7001")
    core.driver.outcomes = [Outcome.executed("v1", raw_status="PUBLISH_COMPLETE")]
    await core.intake.clipapp(core.new(Kind.CLIPAPP, UUID, title="short"), "7001")
    await core.run_due()
    post = await core.posts.get(Kind.CLIPAPP, "org", UUID)
    assert post.status is Status.EXECUTED and post.clipapp_status == "PUBLISH_COMPLETE"
    assert expect(post.params, ClipappParams).privacy_level == "SELF_ONLY"

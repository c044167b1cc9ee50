"""The processor after a lost answer or a crash: credits owed and paid once, a post already
sent never waits for credits, past the deadline only look-ups (and never "late" for a post the
platform may still be publishing), and "outcome unknown" when nobody could tell."""

from __future__ import annotations

from datetime import timedelta

from publish_svc.drivers.base import Outcome
from publish_svc.model import Kind, Status
from tests.unit.publish.conftest import Core

UUID = "3c1d1f7e-0b7a-4a57-9a51-6f3f0c2b7d21"


async def owed(core: Core, record_id: str) -> bool:
    doc = await core.db["posts"].find_one({"_id": record_id})
    assert doc is not None
    return "creditDueAt" in doc


async def test_the_credit_debt_is_written_with_executed_and_paid_once(core: Core) -> None:
    await core.intake.social(core.new(Kind.SOCIAL, UUID), "sa_social", "IMAGE_POST")
    await core.run_due()
    post = await core.posts.get(Kind.SOCIAL, "org", UUID)
    assert post.status is Status.EXECUTED
    assert core.accounts.consumed == [post.id] and core.accounts.balance == 9
    assert not await owed(core, post.id)
    # Later sweeps find nothing owed: nothing is taken twice.
    core.clock.advance(timedelta(minutes=1))
    assert await core.processor().settle_credits() == 0
    assert core.accounts.consume_calls == 1 and core.accounts.balance == 9


async def test_a_credit_not_taken_at_publish_time_is_taken_later_by_any_replica(
    core: Core,
) -> None:
    # account-svc does not answer right after the executed transition (as if the replica died
    # between the two calls): the post is executed and the debt stays on its record.
    core.accounts.consume_failures = 1
    await core.intake.social(core.new(Kind.SOCIAL, UUID), "sa_social", "IMAGE_POST")
    await core.run_due("replica-a")
    post = await core.posts.get(Kind.SOCIAL, "org", UUID)
    assert post.status is Status.EXECUTED
    assert core.accounts.consumed == [] and core.accounts.balance == 10
    assert await owed(core, post.id)
    assert [e["status"] for e in await core.events(post)] == ["in-progress", "executed"]
    # Not yet due for another try.
    assert await core.processor().settle_credits() == 0
    core.clock.advance(timedelta(seconds=11))
    # Two replicas settle at once: account-svc takes one credit per post whatever the repeats.
    paid = [
        await core.processor().settle_credits(),
        await core.processor().settle_credits(),
    ]
    assert paid == [1, 0]
    assert core.accounts.consumed == [post.id] and core.accounts.balance == 9
    assert not await owed(core, post.id)


async def test_a_post_already_sent_does_not_wait_for_credits(core: Core) -> None:
    core.driver.outcomes = [Outcome.retry("linknet: the platform timed out"), Outcome.executed("p")]
    await core.intake.social(core.new(Kind.SOCIAL, UUID), "sa_social", "IMAGE_POST")
    await core.run_due()  # sent, answer lost
    core.accounts.balance = 0  # other posts used the credits meanwhile
    core.clock.advance(timedelta(seconds=5))
    await core.run_due()
    post = await core.posts.get(Kind.SOCIAL, "org", UUID)
    assert post.status is Status.EXECUTED and len(core.driver.calls) == 2
    # The debt is kept (no credit to take): paid when the balance is positive again.
    assert await owed(core, post.id)
    core.accounts.balance = 3
    core.clock.advance(timedelta(seconds=11))
    assert await core.processor().settle_credits() == 1
    assert core.accounts.balance == 2 and not await owed(core, post.id)


async def test_past_the_deadline_a_recent_call_is_waited_for_not_failed_late(core: Core) -> None:
    core.driver.outcomes = [Outcome.retry("photoapp: the platform timed out")]
    await core.intake.story(core.new(Kind.STORY, UUID), "alice")
    core.clock.advance(timedelta(minutes=59))
    await core.run_due()  # the publish call went out at minute 59; its answer was lost
    core.clock.advance(timedelta(minutes=2))  # past the deadline, 2 minutes after the call
    await core.run_due()
    post = await core.posts.get(Kind.STORY, "org", UUID)
    # The platform may still publish it: no new call, no failure yet.
    assert post.status is Status.SCHEDULED
    assert post.progress["lastError"] == "photoapp: the platform timed out"
    core.clock.advance(timedelta(minutes=5))
    await core.run_due()
    post = await core.posts.get(Kind.STORY, "org", UUID)
    assert post.status is Status.FAILED
    assert post.error_message is not None and "it was not posted late" in post.error_message
    assert "timed out" in post.error_message


async def test_a_sent_post_nobody_could_ask_about_fails_as_unknown(core: Core) -> None:
    core.driver.outcomes = [Outcome.retry("clipapp: the platform timed out")]
    await core.intake.story(core.new(Kind.STORY, UUID), "alice")
    await core.run_due()  # sent, answer lost; the platform then stays unreachable
    core.clock.advance(timedelta(minutes=121))
    await core.run_due()
    post = await core.posts.get(Kind.STORY, "org", UUID)
    assert post.status is Status.FAILED and post.error_message is not None
    assert post.error_message.startswith("the outcome is unknown")
    assert "check the account before posting it again" in post.error_message
    assert [e["status"] for e in await core.events(post)] == ["scheduled", "failed"]


async def test_an_answer_lost_just_before_the_deadline_is_looked_up_not_failed_late(
    core: Core,
) -> None:
    core.driver.outcomes = [Outcome.retry("photoapp: the platform timed out")]
    await core.intake.story(core.new(Kind.STORY, UUID), "alice")
    # The publish call goes out a moment before the deadline and its answer is lost: the next
    # attempt comes after the deadline, but the post may be published, so it is not "late".
    core.clock.advance(timedelta(minutes=59, seconds=59, milliseconds=900))
    await core.run_due()
    post = await core.posts.get(Kind.STORY, "org", UUID)
    assert post.status is Status.SCHEDULED, post.error_message
    assert post.progress["lastError"] == "photoapp: the platform timed out"


async def test_a_token_refused_before_sending_fails_as_disconnected_and_gives_the_day_back(
    core: Core,
) -> None:
    core.driver.sends = False
    core.driver.outcomes = [Outcome.unauthorized("linknet: the token was revoked")]
    await core.intake.social(core.new(Kind.SOCIAL, UUID), "sa_social", "IMAGE_POST")
    await core.run_due()
    post = await core.posts.get(Kind.SOCIAL, "org", UUID)
    assert post.status is Status.FAILED and post.error_message is not None
    assert post.error_message.endswith(
        "is disconnected (linknet: the token was revoked): reconnect it in the app"
    ), post.error_message
    # Refreshed once, then the account is marked; nothing went out: the day is given back.
    assert len(core.driver.calls) == 2 and core.accounts.disconnected == ["sa_social"]
    assert core.accounts.released == [post.id] and core.accounts.consumed == []


async def test_a_token_refused_after_a_possible_publish_fails_as_unknown_not_disconnected(
    core: Core,
) -> None:
    # The publishing call went out and its answer was lost; the look-up of the next attempt
    # is refused 401 for good (the user revoked the app meanwhile): nobody can tell whether
    # the post went out, so it is not reported as "not published" and keeps its daily slot.
    core.driver.outcomes = [
        Outcome.retry("linknet: the platform timed out"),
        Outcome.unauthorized("linknet: the token was revoked"),
    ]
    await core.intake.social(core.new(Kind.SOCIAL, UUID), "sa_social", "IMAGE_POST")
    await core.run_due()
    core.clock.advance(timedelta(seconds=5))
    await core.run_due()
    post = await core.posts.get(Kind.SOCIAL, "org", UUID)
    assert post.status is Status.FAILED and post.error_message is not None
    assert post.error_message.startswith("the outcome is unknown"), post.error_message
    assert "the token was revoked" in post.error_message
    assert "check the account before posting it again" in post.error_message
    assert core.accounts.disconnected == ["sa_social"]
    assert core.accounts.released == [] and core.accounts.consumed == []
    assert [e["status"] for e in await core.events(post)] == ["in-progress", "failed"]


async def test_a_token_refused_in_the_attempt_that_sent_fails_as_unknown(core: Core) -> None:
    # The first attempt's publishing call is marked sent, then answers 401 (and again after
    # the refresh): the platform may have performed it before refusing the token.
    core.driver.outcomes = [Outcome.unauthorized("photoapp: the session expired")]
    await core.intake.story(core.new(Kind.STORY, UUID), "alice")
    await core.run_due()
    post = await core.posts.get(Kind.STORY, "org", UUID)
    assert post.status is Status.FAILED and post.error_message is not None
    assert post.error_message.startswith("the outcome is unknown"), post.error_message

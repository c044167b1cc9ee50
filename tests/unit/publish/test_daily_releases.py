"""#23 item 2: a social post that ends without publishing (failed or canceled) gives its
daily-limit reservation back exactly once, also when account-svc does not answer right then
(the debt is written with the status and settled later by any replica)."""

from __future__ import annotations

from datetime import timedelta

from publish_svc.daily import DUE_FIELD
from publish_svc.drivers.base import Outcome
from publish_svc.model import Kind, Status
from tests.unit.publish.conftest import Core

UUID = "8f0e4f65-3b0c-4d1b-9f8a-2d8e6c1c0b11"


async def owed(core: Core, record_id: str) -> bool:
    doc = await core.db["posts"].find_one({"_id": record_id})
    assert doc is not None
    return DUE_FIELD in doc


async def test_a_failed_post_gives_its_reservation_back_once(core: Core) -> None:
    core.driver.outcomes = [Outcome.failed("linknet: the image was refused")]
    await core.intake.social(core.new(Kind.SOCIAL, UUID), "sa_social", "IMAGE_POST")
    await core.run_due()
    post = await core.posts.get(Kind.SOCIAL, "org", UUID)
    assert post.status is Status.FAILED
    assert core.accounts.released == [post.id] and not await owed(core, post.id)
    core.clock.advance(timedelta(minutes=1))
    assert await core.processor().settle_owed() == 0
    assert core.accounts.released == [post.id]


async def test_a_release_account_svc_missed_is_settled_later_by_any_replica(core: Core) -> None:
    core.accounts.release_failures = 1
    core.driver.outcomes = [Outcome.failed("linknet: the image was refused")]
    await core.intake.social(core.new(Kind.SOCIAL, UUID), "sa_social", "IMAGE_POST")
    await core.run_due("replica-a")
    post = await core.posts.get(Kind.SOCIAL, "org", UUID)
    assert post.status is Status.FAILED
    # The failure is stored with the debt; the reservation is still held.
    assert core.accounts.released == [] and await owed(core, post.id)
    assert [e["status"] for e in await core.events(post)] == ["in-progress", "failed"]
    assert await core.processor().settle_owed() == 0  # not due yet
    core.clock.advance(timedelta(seconds=11))
    settled = [
        await core.processor().settle_owed(),
        await core.processor().settle_owed(),
    ]
    assert settled == [1, 0]
    assert core.accounts.released == [post.id] and not await owed(core, post.id)


async def test_a_canceled_post_gives_its_reservation_back_with_the_same_guarantee(
    core: Core,
) -> None:
    core.accounts.release_failures = 1
    later = core.clock.now() + timedelta(hours=2)
    await core.intake.social(core.new(Kind.SOCIAL, UUID, date=later), "sa_social", "IMAGE_POST")
    canceled = await core.posts.cancel(Kind.SOCIAL, "org", UUID)
    assert canceled.status is Status.CANCELED
    assert core.accounts.released == [] and await owed(core, canceled.id)
    core.clock.advance(timedelta(seconds=11))
    assert await core.processor().settle_owed() == 1
    assert core.accounts.released == [canceled.id]

"""Calendar feeds' limit of live feeds per workspace holds under racing creations, a revoked
feed frees its place, and the migration step counts feeds stored before the limit was kept."""

from __future__ import annotations

import asyncio

import pytest

from account_svc import migrations
from account_svc.identity.calendar_feeds import MAX_FEEDS, CalendarFeeds
from account_svc.records import AccountCollections
from storypost_runtime.clock import SystemClock
from storypost_runtime.errors import FailedPrecondition


async def live(records: AccountCollections, org: str) -> int:
    return await records.calendar_feeds.count_documents({"organizationId": org, "revokedAt": None})


async def test_racing_creations_never_pass_the_limit_and_a_revoke_frees_a_place(
    records: AccountCollections,
) -> None:
    feeds = CalendarFeeds(records, SystemClock())
    for n in range(MAX_FEEDS - 3):
        await feeds.create("org-a", f"feed {n}")
    answers = await asyncio.gather(
        *(feeds.create("org-a", f"racer {n}") for n in range(10)), return_exceptions=True
    )
    refused = [a for a in answers if isinstance(a, FailedPrecondition)]
    assert len(refused) == 7, answers
    assert "revoke one first" in str(refused[0])
    assert await live(records, "org-a") == MAX_FEEDS
    # Another workspace has its own places.
    await feeds.create("org-b", "other")
    first = (await feeds.list("org-a"))[-1]
    await feeds.revoke("org-a", first.feed_id)
    await feeds.revoke("org-a", first.feed_id)  # again: the same answer, one place freed
    await feeds.create("org-a", "after a revoke")
    with pytest.raises(FailedPrecondition):
        await feeds.create("org-a", "one too many")
    assert await live(records, "org-a") == MAX_FEEDS


async def test_the_migration_counts_feeds_stored_before_the_limit_was_kept(
    records: AccountCollections,
) -> None:
    feeds = CalendarFeeds(records, SystemClock())
    for n in range(MAX_FEEDS):
        await feeds.create("org-old", f"feed {n}")
    revoked = (await feeds.list("org-old"))[0]
    await feeds.revoke("org-old", revoked.feed_id)
    # As stored before calendar_feed_slots existed: the feeds, no places.
    await records.calendar_feed_slots.delete_many({})
    plan = migrations.plan(records.calendar_feeds.database)
    step = next(s for s in plan.steps if s.name == "calendar_feed_slots")
    assert callable(step.action)
    await step.action()
    await feeds.create("org-old", "the 20th")
    with pytest.raises(FailedPrecondition):
        await feeds.create("org-old", "the 21st")

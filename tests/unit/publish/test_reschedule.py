"""ReschedulePost: a scheduled post moves with its event, anything else is refused unchanged,
and a reschedule racing the scheduler's claim never moves a post being published."""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta
from typing import Any

import pytest

from publish_svc.model import Kind, Post, Status
from publish_svc.reschedule import BEING_PUBLISHED, NOT_SCHEDULED
from storypost.publish.v1 import publish_pb2 as pb
from storypost_runtime.errors import FailedPrecondition, InvalidArgument, NotFound
from storypost_runtime.mongo import Document
from storypost_runtime.protobuf import timestamp
from tests.unit.publish.conftest import LEASE, START, Core
from tests.unit.publish.fakes import photoapp_account

UUID = "0b5d1c2e-3f40-4a51-8b62-7c8d9e0f1a2b"
HOUR = timedelta(hours=1)


async def _story(core: Core, date: datetime | None = START + HOUR) -> Post:
    return (await core.intake.story(core.new(Kind.STORY, UUID, date), "alice")).post


async def _stored(core: Core, post: Post) -> Document:
    doc = await core.db["posts"].find_one({"_id": post.id})
    assert doc is not None
    return doc


async def test_a_scheduled_story_moves_with_its_event_and_publishes_at_the_new_date(
    core: Core,
) -> None:
    post = await _story(core)
    later = START + 3 * HOUR
    moved = await core.rescheduler.reschedule(Kind.STORY, "org", UUID.upper(), later)
    assert (moved.status, moved.date, moved.due_at, moved.listed_at) == (
        Status.SCHEDULED,
        later,
        later,
        later,
    )
    events = await core.events(post)
    assert events == [
        {"storyPostUuid": UUID, "status": "scheduled"},
        {"storyPostUuid": UUID, "status": "scheduled", "date": "2026-11-23T13:00:00Z"},
    ]
    # Not at the old date; at the new one.
    core.clock.advance(HOUR)
    assert await core.run_due() == []
    core.clock.advance(2 * HOUR)
    assert len(await core.run_due()) == 1
    assert (await core.posts.get(Kind.STORY, "org", UUID)).status is Status.EXECUTED


async def test_a_move_to_now_or_a_recent_past_is_due_at_once(core: Core) -> None:
    await _story(core)
    moved = await core.rescheduler.reschedule(
        Kind.STORY, "org", UUID, START - 10 * timedelta(minutes=1)
    )
    assert moved.due_at == START and not moved.future_date
    assert len(await core.run_due()) == 1


async def _refused(
    core: Core, post: Post, date: datetime, error: type[Exception], match: str
) -> None:
    """The reschedule is refused with `error` and the stored post is exactly as before."""
    before = await _stored(core, post)
    with pytest.raises(error, match=match):
        await core.rescheduler.reschedule(post.kind, "org", post.post_uuid, date)
    assert await _stored(core, post) == before


async def test_a_date_beyond_the_window_in_the_past_is_refused_unchanged(core: Core) -> None:
    post = await _story(core)
    await _refused(core, post, START - 61 * timedelta(minutes=1), InvalidArgument, "60 minutes")


async def test_a_post_no_longer_scheduled_is_refused_unchanged(core: Core) -> None:
    post = await _story(core)
    await core.posts.cancel(Kind.STORY, "org", UUID)
    await _refused(core, post, START + 2 * HOUR, FailedPrecondition, "canceled: only a scheduled")
    with pytest.raises(FailedPrecondition) as caught:
        await core.rescheduler.reschedule(Kind.STORY, "org", UUID, START + 2 * HOUR)
    assert caught.value.reason == NOT_SCHEDULED


async def test_a_post_leased_by_an_attempt_is_refused_unchanged(core: Core) -> None:
    post = await _story(core, date=None)
    assert await core.store.claim(post.id, "replica-a", START, START + LEASE) is not None
    await _refused(core, post, START + 2 * HOUR, FailedPrecondition, "being published")


async def test_a_post_with_an_irreversible_call_is_refused_unchanged(core: Core) -> None:
    post = await _story(core)
    await core.db["posts"].update_one({"_id": post.id}, {"$set": {"progress.irreversible": True}})
    await _refused(core, post, START + 2 * HOUR, FailedPrecondition, "being published")


async def test_an_account_no_longer_connected_is_refused_unchanged(core: Core) -> None:
    post = await _story(core)
    core.accounts.accounts["alice"] = photoapp_account("alice", disconnected=True)
    await _refused(core, post, START + 2 * HOUR, InvalidArgument, "'alice' is disconnected")


async def test_an_unknown_post_is_not_found(core: Core) -> None:
    with pytest.raises(NotFound, match=r"story post .* not found"):
        await core.rescheduler.reschedule(Kind.STORY, "org", UUID, START + HOUR)


async def test_a_social_post_moves_only_to_a_future_date(core: Core) -> None:
    new = core.new(Kind.SOCIAL, UUID, START + HOUR)
    post = (await core.intake.social(new, "sa_social", "IMAGE_POST")).post
    await _refused(core, post, START, InvalidArgument, "date must be in the future")
    await core.rescheduler.reschedule(Kind.SOCIAL, "org", UUID, START + 2 * HOUR)
    events = await core.events(post)
    assert events[-1] == {
        "socialPostUuid": UUID,
        "status": "scheduled",
        "socialAccountId": "sa_social",
        "platform": "LINKNET",
        "date": "2026-11-23T12:00:00Z",
    }


async def test_a_reschedule_racing_the_claim_never_moves_a_post_being_published(
    core: Core,
) -> None:
    # Due now; the claim and the move race, many times over: exactly one of them wins each
    # time, and a post the claim won keeps its date.
    outcomes: set[str] = set()
    for round_ in range(12):
        uuid = f"{round_:08d}-0000-4000-8000-000000000000"
        await core.db["story_quota"].delete_many({})  # the test's quota is 3 stories a day
        post = (await core.intake.story(core.new(Kind.STORY, uuid, START), "alice")).post

        async def move(post: Post = post) -> Any:
            try:
                return await core.rescheduler.reschedule(
                    Kind.STORY, "org", post.post_uuid, START + HOUR
                )
            except FailedPrecondition as error:
                assert error.reason == BEING_PUBLISHED
                return None

        async def claim(post: Post = post, pause: float = (round_ % 4) * 0.002) -> Any:
            await asyncio.sleep(pause)
            return await core.store.claim(post.id, "replica-a", START, START + LEASE)

        claimed, moved = await asyncio.gather(claim(), move())
        assert (claimed is None) != (moved is None), round_
        doc = await _stored(core, post)
        if claimed is not None:
            outcomes.add("claimed")
            assert doc["date"] == START and doc["leaseOwner"] == "replica-a"
        else:
            outcomes.add("moved")
            assert doc["date"] == START + HOUR and doc.get("leaseOwner") is None
    # Which one wins depends on timing; with the claim delayed in some rounds both happen.
    assert outcomes


async def test_the_rpc_names_a_missing_kind_or_date(core: Core) -> None:
    await _story(core)
    servicer = core.servicer()
    with pytest.raises(InvalidArgument, match="kind must be one of"):
        await servicer.ReschedulePost(
            pb.ReschedulePostRequest(organization_id="org", post_uuid=UUID),
            None,  # type: ignore[arg-type]
        )
    with pytest.raises(InvalidArgument, match="give date, queueName or both"):
        await servicer.ReschedulePost(
            pb.ReschedulePostRequest(
                organization_id="org", kind=pb.POST_KIND_STORY, post_uuid=UUID
            ),
            None,  # type: ignore[arg-type]
        )
    answer = await servicer.ReschedulePost(
        pb.ReschedulePostRequest(
            organization_id="org",
            kind=pb.POST_KIND_STORY,
            post_uuid=UUID,
            date=timestamp(START + 2 * HOUR),
        ),
        None,  # type: ignore[arg-type]
    )
    assert answer.status == pb.POST_STATUS_SCHEDULED
    assert answer.date.ToDatetime() == (START + 2 * HOUR).replace(tzinfo=None)
    assert answer.connected_account_id == "sa_alice"

"""reschedule-post with queueName: the post takes the queue's earliest free slot; with date
too, that slot of the queue (a move onto a free slot in the calendar), and a date that is no
free slot is a 400 naming date; neither is a 400 naming both, and nothing changes."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta
from typing import Any

import pytest

from publish_svc.intake import NewPost
from publish_svc.model import Kind
from publish_svc.reschedule import Rescheduler
from storypost_runtime.errors import InvalidArgument
from tests.unit.publish.conftest import START, WINDOW, Core
from tests.unit.publish.fakes import photoapp_account

UUID = "bc604f8c-650a-46ed-8726-def3cdf9d0c0"
# START is Monday 2026-11-23 10:00 UTC; the queue's slot is Tuesday 09:00 Berlin (08:00 UTC).
SLOTS = [{"weekday": "tuesday", "time": "09:00"}]


def queued_story(core: Core) -> NewPost[Any]:
    return replace(core.new(Kind.STORY, UUID), queue_name="default")


def rescheduler(core: Core) -> Rescheduler:
    return Rescheduler(
        store=core.store,
        accounts=core.accounts,  # type: ignore[arg-type]
        clock=core.clock,
        window=WINDOW,
        wake_scheduler=lambda: None,
        slots=core.queues.store,
        queues=core.queues,
    )


async def test_a_post_moves_into_the_queues_next_free_slot(core: Core) -> None:
    core.accounts.accounts["sa_alice"] = photoapp_account("alice")
    await core.queues.set("org", "sa_alice", "default", "Europe/Berlin", SLOTS)
    await core.intake.story(core.new(Kind.STORY, UUID, START + timedelta(hours=2)), "alice")
    moved = await rescheduler(core).reschedule(Kind.STORY, "org", UUID, None, queue_name="default")
    assert moved.date == START + timedelta(hours=22)
    slot = await core.queues.store.slot_of(moved.id)
    assert slot is not None and slot.at == moved.date
    # The next post into the queue takes the slot a week later.
    assert await core.queues.preview("org", "sa_alice", "default", 1) == [
        START + timedelta(days=7, hours=22)
    ]


async def test_neither_date_nor_queue_name_is_a_400_naming_both(core: Core) -> None:
    post = (await core.intake.story(core.new(Kind.STORY, UUID, START), "alice")).post
    with pytest.raises(InvalidArgument) as raised:
        await rescheduler(core).reschedule(Kind.STORY, "org", UUID, None)
    assert sorted(raised.value.field_violations) == ["date", "queueName"]
    assert (await core.store.get(Kind.STORY, "org", UUID)) == post


async def test_a_post_moved_onto_a_free_slot_holds_it_and_gives_its_old_one_back(
    core: Core,
) -> None:
    core.accounts.accounts["sa_alice"] = photoapp_account("alice")
    await core.queues.set("org", "sa_alice", "default", "Europe/Berlin", SLOTS)
    first, second = await core.queues.preview("org", "sa_alice", "default", 2)
    queued = (
        await core.intake.story(replace(core.new(Kind.STORY, UUID), queue_name="default"), "alice")
    ).post
    assert queued.date == first
    # Onto the slot a week later (the calendar's drag): the post holds it, the first is free.
    moved = await rescheduler(core).reschedule(
        Kind.STORY, "org", UUID, second, queue_name="default"
    )
    assert moved.date == second
    held = await core.queues.store.slot_of(moved.id)
    assert held is not None and held.at == second
    assert (await core.queues.preview("org", "sa_alice", "default", 2))[0] == first
    # The same move again answers the same; another post cannot take that slot by date.
    again = await rescheduler(core).reschedule(
        Kind.STORY, "org", UUID, second, queue_name="default"
    )
    assert again.date == second
    other = "2b6e1a5c-95c3-4f60-a3a7-4b1a6c1f4d10"
    await core.intake.story(core.new(Kind.STORY, other, START + timedelta(hours=3)), "alice")
    with pytest.raises(InvalidArgument) as raised:
        await rescheduler(core).reschedule(Kind.STORY, "org", other, second, queue_name="default")
    assert list(raised.value.field_violations) == ["date"]
    assert "is not a free slot of queue 'default'" in raised.value.message
    assert (await core.store.get(Kind.STORY, "org", other)).date == START + timedelta(hours=3)  # type: ignore[union-attr]


async def test_a_date_that_is_no_slot_of_the_queue_is_a_400_and_keeps_the_old_slot(
    core: Core,
) -> None:
    core.accounts.accounts["sa_alice"] = photoapp_account("alice")
    await core.queues.set("org", "sa_alice", "default", "Europe/Berlin", SLOTS)
    queued = (
        await core.intake.story(replace(core.new(Kind.STORY, UUID), queue_name="default"), "alice")
    ).post
    with pytest.raises(InvalidArgument) as raised:
        await rescheduler(core).reschedule(
            Kind.STORY, "org", UUID, START + timedelta(hours=30), queue_name="default"
        )
    assert list(raised.value.field_violations) == ["date"]
    assert (await core.store.get(Kind.STORY, "org", UUID)) == queued
    held = await core.queues.store.slot_of(queued.id)
    assert held is not None and held.at == queued.date


async def test_an_unknown_queue_is_a_400_naming_queue_name(core: Core) -> None:
    post = (await core.intake.story(core.new(Kind.STORY, UUID, START), "alice")).post
    with pytest.raises(InvalidArgument) as raised:
        await rescheduler(core).reschedule(Kind.STORY, "org", UUID, None, queue_name="nope")
    assert list(raised.value.field_violations) == ["queueName"]
    assert (await core.store.get(Kind.STORY, "org", UUID)) == post

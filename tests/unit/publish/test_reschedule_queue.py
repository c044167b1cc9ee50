"""reschedule-post with queueName: the post takes the queue's earliest free slot; date and
queueName together, or neither, are a 400 naming both, and nothing changes."""

from __future__ import annotations

from datetime import timedelta

import pytest

from publish_svc.model import Kind
from publish_svc.reschedule import Rescheduler
from storypost_runtime.errors import InvalidArgument
from tests.unit.publish.conftest import START, WINDOW, Core
from tests.unit.publish.fakes import photoapp_account

UUID = "bc604f8c-650a-46ed-8726-def3cdf9d0c0"
# START is Monday 2026-11-23 10:00 UTC; the queue's slot is Tuesday 09:00 Berlin (08:00 UTC).
SLOTS = [{"weekday": "tuesday", "time": "09:00"}]


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


@pytest.mark.parametrize("given", [{"date": START, "queue_name": "default"}, {"date": None}])
async def test_date_and_queue_name_together_or_neither_is_a_400_naming_both(
    core: Core, given: dict[str, object]
) -> None:
    post = (await core.intake.story(core.new(Kind.STORY, UUID, START), "alice")).post
    with pytest.raises(InvalidArgument) as raised:
        await rescheduler(core).reschedule(Kind.STORY, "org", UUID, **given)  # type: ignore[arg-type]
    assert sorted(raised.value.field_violations) == ["date", "queueName"]
    assert (await core.store.get(Kind.STORY, "org", UUID)) == post


async def test_an_unknown_queue_is_a_400_naming_queue_name(core: Core) -> None:
    post = (await core.intake.story(core.new(Kind.STORY, UUID, START), "alice")).post
    with pytest.raises(InvalidArgument) as raised:
        await rescheduler(core).reschedule(Kind.STORY, "org", UUID, None, queue_name="nope")
    assert list(raised.value.field_violations) == ["queueName"]
    assert (await core.store.get(Kind.STORY, "org", UUID)) == post

"""Queues: slots in their time zone (the 2027 clock changes of Europe/Berlin and
America/New_York), input refused naming its field with nothing stored, and slots taken by
racing posts, once per post, freed when the post is canceled or failed."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from datetime import UTC, date, datetime, time, timedelta
from typing import Any

import pytest
from pymongo import AsyncMongoClient

from publish_svc.model import Kind, Status
from publish_svc.queue_times import WeeklySlot, instant, instants, time_zone
from publish_svc.queues import MAX_QUEUES, Queues, QueueStore, slot_id
from storypost_runtime.errors import InvalidArgument
from storypost_runtime.mongo import Document
from tests.unit.publish.conftest import Core
from tests.unit.publish.fakes import photoapp_account, social_account

BERLIN = time_zone("Europe/Berlin")
NEW_YORK = time_zone("America/New_York")


def utc(year: int, month: int, day: int, hour: int = 0, minute: int = 0) -> datetime:
    return datetime(year, month, day, hour, minute, tzinfo=UTC)


@pytest.mark.parametrize(
    ("zone", "day", "at", "expected"),
    [
        # Spring forward, Berlin 2027-03-28 02:00 → 03:00: 02:30 does not exist.
        (BERLIN, date(2027, 3, 28), time(2, 30), utc(2027, 3, 28, 1, 0)),
        (BERLIN, date(2027, 3, 28), time(2, 0), utc(2027, 3, 28, 1, 0)),
        (BERLIN, date(2027, 3, 28), time(3, 0), utc(2027, 3, 28, 1, 0)),
        (BERLIN, date(2027, 3, 28), time(1, 59), utc(2027, 3, 28, 0, 59)),
        # Fall back, Berlin 2027-10-31 03:00 → 02:00: 02:30 exists twice, the first is taken.
        (BERLIN, date(2027, 10, 31), time(2, 30), utc(2027, 10, 31, 0, 30)),
        (BERLIN, date(2027, 10, 31), time(3, 0), utc(2027, 10, 31, 2, 0)),
        # Spring forward, New York 2027-03-14 02:00 → 03:00.
        (NEW_YORK, date(2027, 3, 14), time(2, 15), utc(2027, 3, 14, 7, 0)),
        (NEW_YORK, date(2027, 3, 14), time(3, 15), utc(2027, 3, 14, 7, 15)),
        # Fall back, New York 2027-11-07 02:00 → 01:00: 01:30 twice, the first (EDT).
        (NEW_YORK, date(2027, 11, 7), time(1, 30), utc(2027, 11, 7, 5, 30)),
        (NEW_YORK, date(2027, 11, 7), time(2, 30), utc(2027, 11, 7, 7, 30)),
    ],
)
def test_local_times_around_the_2027_clock_changes(
    zone: Any, day: date, at: time, expected: datetime
) -> None:
    assert instant(day, at, zone) == expected


def test_slots_in_a_gap_are_one_slot_and_a_repeated_hour_is_used_once() -> None:
    sunday = 6
    gap = (WeeklySlot(sunday, time(2, 15)), WeeklySlot(sunday, time(2, 45)))
    spring = list(instants(gap, BERLIN, utc(2027, 3, 27), utc(2027, 3, 29)))
    assert spring == [utc(2027, 3, 28, 1, 0)]
    twice = (WeeklySlot(sunday, time(2, 30)),)
    fall = list(instants(twice, BERLIN, utc(2027, 10, 30), utc(2027, 11, 1)))
    assert fall == [utc(2027, 10, 31, 0, 30)]
    # Weekly, in order, across the change: the local time stays, the UTC instant moves.
    weekly = list(instants(twice, NEW_YORK, utc(2027, 10, 30), utc(2027, 11, 15)))
    assert weekly == [utc(2027, 10, 31, 6, 30), utc(2027, 11, 7, 7, 30), utc(2027, 11, 14, 7, 30)]


@pytest.fixture
def queues(core: Core) -> Queues:
    core.accounts.accounts["sa_alice"] = photoapp_account("alice")
    core.accounts.accounts["sa_other_org"] = photoapp_account("bob")
    # A Friday before Berlin's change, for the queues and the intake that uses them.
    core.clock.advance(utc(2027, 3, 26, 12, 0) - core.clock.now())
    return core.queues


async def _ready(queues: Queues) -> Queues:
    await queues.store.ensure_indexes()
    return queues


SLOTS = [{"weekday": "sunday", "time": "02:30"}, {"weekday": "monday", "time": "09:00"}]


async def test_set_queue_answers_the_next_free_slots_in_utc(queues: Queues) -> None:
    await _ready(queues)
    answer = await queues.set("org", "sa_alice", "", "Europe/Berlin", SLOTS)
    assert answer.queue.name == "default"
    assert [s.time_text for s in answer.queue.slots] == ["09:00", "02:30"]  # Monday first
    assert answer.next_slots == [
        utc(2027, 3, 28, 1, 0),  # Sunday 02:30 does not exist that night: 03:00 CEST
        utc(2027, 3, 29, 7, 0),  # Monday 09:00 CEST
        utc(2027, 4, 4, 0, 30),
        utc(2027, 4, 5, 7, 0),
        utc(2027, 4, 11, 0, 30),
    ]
    # Replacing keeps one queue of that name.
    again = await queues.set("org", "sa_alice", "default", "America/New_York", SLOTS[:1])
    assert again.queue.zone_name == "America/New_York"
    assert [q.name for q in await queues.listed("org", "")] == ["default"]


async def test_a_preview_from_a_later_week_lists_that_weeks_free_slots(queues: Queues) -> None:
    """The app's calendar asks from a week's start: weeks beyond the next 50 free slots show."""
    await _ready(queues)
    await queues.set("org", "sa_alice", "", "Europe/Berlin", SLOTS)
    later = utc(2028, 1, 3)  # a Monday, 40 weeks (80 slots) ahead
    assert await queues.preview("org", "sa_alice", "default", 3, after=later) == [
        utc(2028, 1, 3, 8, 0),  # Monday 09:00 CET
        utc(2028, 1, 9, 1, 30),  # Sunday 02:30 CET
        utc(2028, 1, 10, 8, 0),
    ]
    # A time before the lead counts from now, as without it.
    assert await queues.preview(
        "org", "sa_alice", "default", 2, after=utc(2020, 1, 1)
    ) == await queues.preview("org", "sa_alice", "default", 2)


@pytest.mark.parametrize(
    ("account", "zone", "slots", "field"),
    [
        ("sa_alice", "Mars/Olympus", SLOTS, "timeZone"),
        ("sa_alice", "", SLOTS, "timeZone"),
        ("sa_alice", "Europe/Berlin", [{"weekday": "monday", "time": "25:00"}], "slots.0.time"),
        ("sa_alice", "Europe/Berlin", [{"weekday": "mon", "time": "09:00"}], "slots.0.weekday"),
        ("sa_alice", "Europe/Berlin", [{"weekday": "monday", "time": "9:00"}], "slots.0.time"),
        ("sa_alice", "Europe/Berlin", [], "slots"),
        ("sa_alice", "Europe/Berlin", [{"weekday": "monday", "time": "09:00"}] * 101, "slots"),
        ("sa_nobody", "Europe/Berlin", SLOTS, "socialAccountId"),
    ],
)
async def test_bad_input_is_refused_naming_its_field_and_nothing_is_stored(
    queues: Queues, account: str, zone: str, slots: list[dict[str, str]], field: str
) -> None:
    await _ready(queues)
    with pytest.raises(InvalidArgument) as caught:
        await queues.set("org", account, "default", zone, slots)
    assert list(caught.value.field_violations) == [field]
    assert await queues.store.queues.count_documents({}) == 0


async def test_a_disconnected_account_is_refused(queues: Queues, core: Core) -> None:
    await _ready(queues)
    core.accounts.accounts["sa_alice"] = photoapp_account("alice", disconnected=True)
    with pytest.raises(InvalidArgument) as caught:
        await queues.set("org", "sa_alice", "default", "Europe/Berlin", SLOTS)
    assert "disconnected" in caught.value.field_violations["socialAccountId"][0]


async def test_at_most_twenty_queues_per_account(queues: Queues) -> None:
    await _ready(queues)
    for n in range(MAX_QUEUES):
        await queues.set("org", "sa_alice", f"q{n}", "UTC", SLOTS)
    with pytest.raises(InvalidArgument) as caught:
        await queues.set("org", "sa_alice", "one-more", "UTC", SLOTS)
    assert list(caught.value.field_violations) == ["queueName"]
    await queues.set("org", "sa_alice", "q3", "Europe/Berlin", SLOTS)  # replacing is fine
    assert await queues.store.queues.count_documents({}) == MAX_QUEUES
    assert await queues.delete("org", "sa_alice", "q3") is True
    assert await queues.delete("org", "sa_alice", "q3") is False
    await queues.set("org", "sa_alice", "one-more", "UTC", SLOTS)  # the deleted one's place


async def test_racing_creations_stop_at_twenty_queues(
    queues: Queues, core: Core, mongo_url: str
) -> None:
    """Counting, then inserting, let racing creations past the limit; one conditional write
    per creation lets exactly the room left in."""
    await _ready(queues)
    for n in range(MAX_QUEUES - 3):
        await queues.set("org", "sa_alice", f"q{n}", "UTC", SLOTS)
    client: AsyncMongoClient[Document] = AsyncMongoClient(
        mongo_url, maxPoolSize=32, timeoutMS=120_000, tz_aware=True
    )
    racing = replace(queues, store=QueueStore.of(client[core.db.name]))
    try:
        answers = await asyncio.gather(
            *(racing.set("org", "sa_alice", f"new{n}", "UTC", SLOTS) for n in range(10)),
            return_exceptions=True,
        )
    finally:
        await client.close()
    refused = [a for a in answers if isinstance(a, InvalidArgument)]
    assert len(refused) == 7, answers
    assert await queues.store.queues.count_documents({}) == MAX_QUEUES


async def test_fifty_racing_posts_take_fifty_distinct_slots_and_a_repeat_takes_none(
    queues: Queues, core: Core, mongo_url: str
) -> None:
    await _ready(queues)
    answer = await queues.set("org", "sa_alice", "daily", "Europe/Berlin", _every_day("10:00"))
    account = photoapp_account("alice")
    posts = [f"story:org:{n:04d}" for n in range(50)]
    # A client of its own with room for 50 callers at once (the fixture's pools 8 with a 5 s
    # wait, which a loaded machine can exceed while 50 takes queue for it).
    client: AsyncMongoClient[Document] = AsyncMongoClient(
        mongo_url, maxPoolSize=64, timeoutMS=120_000, tz_aware=True
    )
    db = client[core.db.name]
    racing = replace(queues, store=QueueStore.of(db))
    try:
        taken = await asyncio.gather(
            *(racing.take("org", answer.queue, account, post) for post in posts)
        )
    finally:
        await client.close()
    assert len({t.at for t in taken}) == 50
    again = await queues.take("org", answer.queue, account, posts[7])
    assert again == taken[7]
    assert await core.db["queue_slots"].count_documents({}) == 50
    # The queue's next free slot is after all of them.
    (first_free,) = await queues.free(answer.queue, account, 1)
    assert first_free > max(t.at for t in taken)


async def test_a_canceled_or_failed_post_frees_its_slot(queues: Queues, core: Core) -> None:
    await _ready(queues)
    answer = await queues.set("org", "sa_alice", "daily", "UTC", _every_day("10:00"))
    account = photoapp_account("alice")
    first = await queues.take("org", answer.queue, account, "story:org:a")
    await core.db["posts"].insert_one({"_id": "story:org:a", "status": "canceled"})
    assert (await queues.free(answer.queue, account, 1)) == [first.at]
    second = await queues.take("org", answer.queue, account, "story:org:b")
    assert second.at == first.at and second.id == slot_id("sa_alice", first.at)
    slot = await core.db["queue_slots"].find_one({"_id": second.id})
    assert slot is not None and slot["postId"] == "story:org:b"


async def test_slots_on_a_day_the_daily_limit_fills_are_passed_over(
    queues: Queues, core: Core
) -> None:
    await _ready(queues)
    limited = social_account()
    limited.daily_post_limit = 1
    core.accounts.accounts["sa_social"] = limited
    answer = await queues.set("org", "sa_social", "twice", "UTC", _every_day("10:00", "16:00"))
    await core.db["posts"].insert_one(
        {
            "_id": "social:org:x",
            "organizationId": "org",
            "account": {"socialAccountId": "sa_social"},
            "status": "scheduled",
            "listedAt": utc(2027, 3, 27, 8, 0),
        }
    )
    # One a day: the 26th's 16:00, not the 27th (it has its post), then one a day.
    assert await queues.free(answer.queue, limited, 3) == [
        utc(2027, 3, 26, 16, 0),
        utc(2027, 3, 28, 10, 0),
        utc(2027, 3, 29, 10, 0),
    ]


async def test_every_walk_gives_a_day_the_same_verdict_and_a_check_reads_one_window(
    queues: Queues, core: Core
) -> None:
    """With a daily limit, the free slots listed from now, listed from a later calendar week
    (which starts mid-way through a UTC day here) and checked one by one (stale_at, as a drop
    on the calendar does) agree; a check reads only its day's window."""
    await _ready(queues)
    limited = social_account()
    limited.daily_post_limit = 1
    core.accounts.accounts["sa_social"] = limited
    answer = await queues.set("org", "sa_social", "twice", "UTC", _every_day("10:00", "16:00"))
    start = utc(2027, 12, 1, 12, 0)  # 36 weeks ahead, between a day's two slots
    days = 20
    from_now = await queues.free(answer.queue, limited, 300)  # one a day, into January 2028
    listed = [at for at in from_now if start <= at < start + timedelta(days=days)]
    assert len(listed) == days and all(at.hour == 10 for at in listed[1:])
    assert listed[0] == utc(2027, 12, 2, 10, 0)  # the 1st's 10:00 counts, though not listed
    assert await queues.free(answer.queue, limited, days, after=start) == listed
    reads = 0
    held = queues.store.held

    async def counted(*args: Any) -> Any:
        nonlocal reads
        reads += 1
        return await held(*args)

    queues.store.held = counted  # type: ignore[method-assign,assignment]
    zone = time_zone("UTC")
    for at in instants(answer.queue.slots, zone, start, start + timedelta(days=days)):
        reads = 0
        if at in listed:
            assert await queues.stale_at(answer.queue, limited, at) is None
        else:
            with pytest.raises(InvalidArgument, match="is not a free slot"):
                await queues.stale_at(answer.queue, limited, at)
        assert reads == 1


def _every_day(*times: str) -> list[dict[str, str]]:
    days = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
    return [{"weekday": day, "time": at} for day in days for at in times]


def test_a_slot_id_names_the_account_and_the_instant() -> None:
    at = utc(2027, 3, 28, 1, 0)
    assert slot_id("sa_1", at) == "sa_1:2027-03-28T01:00:00+00:00"
    assert slot_id("sa_1", at.astimezone(BERLIN)) == slot_id("sa_1", at)
    assert timedelta(0) == at - at


QUEUED = "5d3c1b2a-0f9e-4d8c-8b7a-6e5d4c3b2a19"


async def test_a_post_scheduled_into_a_queue_takes_the_earliest_free_slot_once(
    queues: Queues, core: Core
) -> None:
    await _ready(queues)
    await queues.set("org", "sa_alice", "default", "Europe/Berlin", SLOTS)
    new = replace(core.new(Kind.STORY, QUEUED), queue_name="default")
    accepted = await core.intake.story(new, "alice")
    assert accepted.post.date == utc(2027, 3, 28, 1, 0)
    assert accepted.post.status is Status.SCHEDULED and accepted.post.future_date
    again = await core.intake.story(new, "alice")
    assert again.post.date == accepted.post.date
    assert await core.db["queue_slots"].count_documents({}) == 1
    second = replace(
        core.new(Kind.STORY, "6d3c1b2a-0f9e-4d8c-8b7a-6e5d4c3b2a19"), queue_name="default"
    )
    assert (await core.intake.story(second, "alice")).post.date == utc(2027, 3, 29, 7, 0)
    # Canceled: its slot is the next post's.
    await core.posts.cancel(Kind.STORY, "org", QUEUED)
    third = replace(
        core.new(Kind.STORY, "7d3c1b2a-0f9e-4d8c-8b7a-6e5d4c3b2a19"), queue_name="default"
    )
    assert (await core.intake.story(third, "alice")).post.date == utc(2027, 3, 28, 1, 0)


async def test_queue_and_date_together_or_an_unknown_queue_are_refused_storing_nothing(
    queues: Queues, core: Core
) -> None:
    await _ready(queues)
    both = replace(core.new(Kind.STORY, QUEUED, utc(2027, 4, 1)), queue_name="default")
    with pytest.raises(InvalidArgument) as caught:
        await core.intake.story(both, "alice")
    assert set(caught.value.field_violations) == {"date", "queueName"}
    unknown = replace(core.new(Kind.STORY, QUEUED), queue_name="nightly")
    with pytest.raises(InvalidArgument) as missing:
        await core.intake.story(unknown, "alice")
    assert list(missing.value.field_violations) == ["queueName"]
    core.renderer.refuse = "video codec must be h264"
    await queues.set("org", "sa_alice", "default", "UTC", SLOTS)
    with pytest.raises(InvalidArgument, match="h264"):
        await core.intake.story(replace(unknown, queue_name="default"), "alice")
    assert await core.db["posts"].count_documents({}) == 0
    assert await core.db["queue_slots"].count_documents({}) == 0


async def test_an_orphaned_slot_is_free_after_a_while_but_not_before(
    queues: Queues, core: Core
) -> None:
    await _ready(queues)
    answer = await queues.set("org", "sa_alice", "daily", "UTC", _every_day("10:00"))
    account = photoapp_account("alice")
    taken = await queues.take("org", answer.queue, account, "story:org:never-stored")
    # Its schedule call may still be rendering: the slot is held…
    assert (await queues.free(answer.queue, account, 1)) != [taken.at]
    # …until it is clearly dead.
    core.clock.advance(timedelta(minutes=11))
    later = await queues.take("org", answer.queue, account, "story:org:next")
    assert later.at == taken.at


async def test_a_queued_post_moved_by_reschedule_gives_its_slot_back(
    queues: Queues, core: Core
) -> None:
    await _ready(queues)
    await queues.set("org", "sa_alice", "default", "Europe/Berlin", SLOTS)
    new = replace(core.new(Kind.STORY, QUEUED), queue_name="default")
    post = (await core.intake.story(new, "alice")).post
    assert await core.db["queue_slots"].count_documents({"postId": post.id}) == 1
    await core.rescheduler.reschedule(Kind.STORY, "org", QUEUED, utc(2027, 4, 20, 12, 0))
    assert await core.db["queue_slots"].count_documents({}) == 0
    account = photoapp_account("alice")
    queue = await queues.get("org", "sa_alice", "default")
    assert (await queues.free(queue, account, 1)) == [utc(2027, 3, 28, 1, 0)]


async def test_queues_stored_before_their_names_were_counted_are_counted_by_migration(
    queues: Queues, core: Core
) -> None:
    """Migration step 2 (`queue_names`): an account's queues stored by a release that only
    counted them count toward its 20 afterwards."""
    await _ready(queues)
    for n in range(MAX_QUEUES):
        await queues.set("org", "sa_alice", f"q{n}", "UTC", SLOTS)
    await queues.store.names.delete_many({})  # as a database of the release before
    await queues.store.count_names_of_stored_queues()
    await queues.store.count_names_of_stored_queues()  # again: the same
    with pytest.raises(InvalidArgument):
        await queues.set("org", "sa_alice", "one-more", "UTC", SLOTS)
    (names,) = [doc async for doc in queues.store.names.find({})]
    assert sorted(names["names"]) == sorted(f"q{n}" for n in range(MAX_QUEUES))

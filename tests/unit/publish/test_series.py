"""Series of recurring posts on the in-process MongoDB: starting one (idempotent), the worker
creating each next occurrence ahead of its date exactly once, status, cancel, the limit."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest

from publish_svc.model import Kind, Status, post_id
from publish_svc.series import RepeatAsked, SeriesService, Target
from publish_svc.series_rules import MAX_ACTIVE_PER_ACCOUNT, occurrence_uuid
from publish_svc.series_store import SeriesStore
from publish_svc.series_worker import SeriesWorker
from storypost.render.v1 import render_pb2 as rpb
from storypost_runtime.errors import InvalidArgument
from storypost_runtime.vocabulary import SeriesStatus
from tests.unit.publish.conftest import START, Core

HOUR = timedelta(hours=1)
DAY = timedelta(days=1)
FIRST = "bc604f8c-650a-46ed-8726-def3cdf9d0c0"


async def parts(core: Core) -> tuple[SeriesService, SeriesWorker, SeriesStore]:
    store = SeriesStore(core.db["series"], core.db["series_accounts"])
    await store.ensure_indexes()
    service = SeriesService(
        store=store,
        posts=core.store,
        intake=core.intake,
        cancels=core.posts,
        accounts=core.accounts,  # type: ignore[arg-type]
        clock=core.clock,
    )
    worker = SeriesWorker(
        store=store, series=service, intake=core.intake, clock=core.clock, queues=core.queues
    )
    return service, worker, store


def daily(count: int = 3, **given: object) -> RepeatAsked:
    return RepeatAsked(every="P1D", count=count, until=None, variants=given.get("variants", []))  # type: ignore[arg-type]


async def story_series(core: Core, service: SeriesService, count: int = 3) -> str:
    new = core.new(Kind.STORY, FIRST, START + HOUR)
    accepted, series = await service.start(new, Target("alice"), daily(count))
    assert accepted.post.series_uuid == series
    return series


async def test_the_same_call_again_answers_the_same_series_and_creates_nothing(
    core: Core,
) -> None:
    service, _, _ = await parts(core)
    series = await story_series(core, service)
    again = await story_series(core, service)
    assert again == series
    assert await core.db["posts"].count_documents({}) == 1
    assert await core.db["series"].count_documents({}) == 1
    view = await service.view("org", series)
    assert view.status is SeriesStatus.ACTIVE
    assert [(o.post_uuid, o.date) for o in view.occurrences] == [(FIRST, START + HOUR)]
    assert view.next_date == START + DAY + HOUR


async def test_each_occurrence_is_created_once_at_most_24_hours_ahead_and_reuses_the_html(
    core: Core,
) -> None:
    service, worker, _ = await parts(core)
    series = await story_series(core, service)
    assert await worker.run_once() == 0  # occurrence 1 is more than 24 h ahead
    core.clock.advance(HOUR)  # now 24 h before occurrence 1
    assert await worker.run_once() == 1
    assert await worker.run_once() == 0  # once
    second = await core.store.get(Kind.STORY, "org", occurrence_uuid(series, 1))
    assert second is not None
    assert second.date == START + DAY + HOUR
    assert second.series_uuid == series
    # The html was rendered once: the occurrence posts the first post's rendering.
    assert core.renderer.prepared == [post_id(Kind.STORY, "org", FIRST)]
    assert second.rendering_id == post_id(Kind.STORY, "org", FIRST)
    core.clock.advance(DAY)
    assert await worker.run_once() == 1
    view = await service.view("org", series)
    assert [o.post_uuid for o in view.occurrences] == [
        FIRST,
        occurrence_uuid(series, 1),
        occurrence_uuid(series, 2),
    ]
    assert view.status is SeriesStatus.FINISHED  # count 3: nothing left to create
    assert view.next_date is None
    assert await core.db["posts"].count_documents({"seriesUuid": series}) == 3


async def test_a_worker_killed_after_creating_an_occurrence_loses_none_and_doubles_none(
    core: Core,
) -> None:
    service, worker, store = await parts(core)
    series = await story_series(core, service)
    core.clock.advance(HOUR)
    record = await store.get("org", series)
    assert record is not None
    # The killed worker leased the series and created occurrence 1, then died.
    assert await store.lease(record, core.clock.now(), core.clock.now() + worker.lease)
    await worker.intake.story(worker._occurrence(record, 1), "alice")  # type: ignore[arg-type]
    assert await worker.run_once() == 0  # its lease still holds
    core.clock.advance(worker.lease)
    assert await worker.run_once() == 1
    assert await core.db["posts"].count_documents({"seriesUuid": series}) == 2
    moved = await store.get("org", series)
    assert moved is not None and moved.next_index == 2


async def test_variants_rotate_over_the_occurrences_after_the_first(core: Core) -> None:
    service, worker, _ = await parts(core)
    new = core.new(Kind.SOCIAL, FIRST, START + HOUR, text="first")
    asked = daily(4, variants=[{"text": "v-a"}, {"text": "v-b"}])
    _, series = await service.start(new, Target("sa_social", "IMAGE_POST"), asked)
    texts = []
    for _ in range(3):
        core.clock.advance(DAY)
        await worker.run_once()
    for n in range(1, 4):
        post = await core.store.get(Kind.SOCIAL, "org", occurrence_uuid(series, n))
        assert post is not None
        texts.append(post.params.text)  # type: ignore[union-attr]
    assert texts == ["v-a", "v-b", "v-a"]


async def test_a_url_design_is_rendered_again_for_each_occurrence(core: Core) -> None:
    service, worker, _ = await parts(core)
    new = core.new(Kind.STORY, FIRST, START + HOUR)
    new = type(new)(**{**new.__dict__, "design": rpb.Design(url="https://example.com/p")})
    _, series = await service.start(new, Target("alice"), daily(2))
    core.clock.advance(HOUR)
    await worker.run_once()
    second = post_id(Kind.STORY, "org", occurrence_uuid(series, 1))
    assert core.renderer.prepared == [post_id(Kind.STORY, "org", FIRST), second]


async def test_cancel_series_cancels_the_unstarted_posts_and_stops_it(core: Core) -> None:
    service, worker, _ = await parts(core)
    series = await story_series(core, service, count=5)
    core.clock.advance(HOUR)
    await core.run_due()  # the first one is published
    await worker.run_once()  # occurrence 1 is created, scheduled
    view = await service.cancel("org", series)
    assert view.status is SeriesStatus.CANCELED
    assert [o.status for o in view.occurrences] == [Status.EXECUTED, Status.CANCELED]
    core.clock.advance(3 * DAY)
    assert await worker.run_once() == 0
    assert await core.db["posts"].count_documents({"seriesUuid": series}) == 2
    assert (await service.cancel("org", series)).status is SeriesStatus.CANCELED


async def test_an_account_has_at_most_10_active_series_also_under_races(core: Core) -> None:
    _, _, store = await parts(core)
    now = core.clock.now()
    granted = await asyncio.gather(
        *(store.reserve("org", "sa_x", f"series-{i}", now) for i in range(11))
    )
    assert sorted(granted) == [False] + [True] * MAX_ACTIVE_PER_ACCOUNT
    # The same series again is counted once.
    winner = next(f"series-{i}" for i, ok in enumerate(granted) if ok)
    assert await store.reserve("org", "sa_x", winner, now)


async def test_the_11th_active_series_of_an_account_is_a_400_and_stores_nothing(
    core: Core,
) -> None:
    service, _, store = await parts(core)
    account = core.accounts.accounts["alice"].social_account_id
    for i in range(MAX_ACTIVE_PER_ACCOUNT):
        assert await store.reserve("org", account, f"other-{i}", core.clock.now())
    with pytest.raises(InvalidArgument) as raised:
        await story_series(core, service)
    assert list(raised.value.field_violations) == ["repeat"]
    assert await core.db["posts"].count_documents({}) == 0


async def test_a_weekly_series_of_three_publishes_three_posts_at_their_dates(
    core: Core,
) -> None:
    """Issue #51's "a weekly series of 3 posts publishes 3 posts": weeks on a frozen clock,
    each occurrence created ahead, then published at its date, once."""
    service, worker, _ = await parts(core)
    new = core.new(Kind.STORY, FIRST, START + HOUR)
    weekly = RepeatAsked(every="P7D", count=3, until=None, variants=[])
    _, series = await service.start(new, Target("alice"), weekly)
    dates = [START + HOUR + n * timedelta(days=7) for n in range(3)]
    published = []
    for date in dates:
        core.clock.advance(date - core.clock.now())
        await worker.run_once()
        published += [post.post_uuid for post in await core.run_due()]
        # Nothing of the next occurrence is published before its date.
        assert await core.run_due() == []
    uuids = [FIRST, occurrence_uuid(series, 1), occurrence_uuid(series, 2)]
    assert published == uuids
    view = await service.view("org", series)
    assert [(o.post_uuid, o.date, o.status) for o in view.occurrences] == [
        (uuid, date, Status.EXECUTED) for uuid, date in zip(uuids, dates, strict=True)
    ]
    assert view.status is SeriesStatus.FINISHED

"""Insight collection with a frozen clock: the schedule of points, each point read once across
collectors, backoff on refusals (the post untouched), a disconnected account, refresh, the
daily roll-ups and the servicer's answers."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from typing import Any

import grpc
import pytest

from publish_svc.drivers.base import Outcome
from publish_svc.drivers.http import PlatformError
from publish_svc.insights.collector import InsightsCollector
from publish_svc.insights.config import InsightsSettings
from publish_svc.insights.schedule import Plan
from publish_svc.insights.servicer import InsightsServicer
from publish_svc.insights.store import InsightStore
from publish_svc.model import Kind, Status
from storypost.account.v1 import account_pb2 as apb
from storypost.publish.v1 import insights_pb2 as ipb
from storypost.publish.v1 import publish_pb2 as pb
from storypost_runtime.errors import FailedPrecondition, NotFound, ResourceExhausted
from tests.unit.publish.conftest import START, Core

UUID = "6f1c1e52-3a8e-4a51-9d0b-2f7f4f4a9a01"
HOUR = timedelta(hours=1)
SETTINGS = InsightsSettings(insights_backoff_seconds=60, insights_max_backoff_seconds=3600)


def grow(post_id: str, at: datetime) -> dict[str, int]:
    """Figures that grow with the frozen clock (hours since START)."""
    hours = int((at - START).total_seconds() // 3600)
    return {"impressions": 100 + 10 * hours, "reach": 50 + 5 * hours}


@dataclass
class FakeReader:
    core: Core
    # Raised by the next calls, in order (then figures again).
    refusals: list[PlatformError] = field(default_factory=list)
    calls: list[str] = field(default_factory=list)
    follower_calls: int = 0

    async def post(self, token: str, account_id: str, post_id: str) -> dict[str, int]:
        self.calls.append(post_id)
        if self.refusals:
            raise self.refusals.pop(0)
        return grow(post_id, self.core.clock.now())

    async def followers(self, token: str, account_id: str, day: date) -> int | None:
        self.follower_calls += 1
        return 1000 + day.day


@dataclass
class Readers:
    reader: FakeReader

    def get(self, platform: str) -> FakeReader:
        return self.reader


class Disconnected(grpc.aio.AioRpcError):
    def __init__(self) -> None:
        super().__init__(
            grpc.StatusCode.FAILED_PRECONDITION,
            grpc.aio.Metadata(),
            grpc.aio.Metadata(),
            details="the account is disconnected",
        )


@dataclass
class Accounts:
    disconnected: bool = False
    marked: list[str] = field(default_factory=list)

    async def access_token(
        self, organization_id: str, social_account_id: str, *, force_refresh: bool = False
    ) -> apb.AccessToken:
        if self.disconnected:
            raise Disconnected()
        return apb.AccessToken(access_token="tok", platform_account_id="1", username="alice")

    async def mark_disconnected(
        self, organization_id: str, social_account_id: str, reason: str
    ) -> None:
        self.marked.append(social_account_id)


@dataclass
class Rig:
    core: Core
    store: InsightStore
    reader: FakeReader
    accounts: Accounts
    collectors: list[InsightsCollector]

    @property
    def collector(self) -> InsightsCollector:
        return self.collectors[0]

    async def pass_(self) -> int:
        """One pass of every collector: plan new posts, read every due point."""
        read = 0
        for collector in self.collectors:
            await collector.plan_pending()
            now = self.core.clock.now()
            for record_id in await self.store.due_ids(now, 100):
                holder = f"{collector.owner}/x"
                claimed = await self.store.claim(record_id, holder, now, now + HOUR)
                if claimed is not None:
                    await collector.collect(claimed, holder)
                    read += 1
        return read

    async def schedule(self) -> dict[str, Any]:
        doc = await self.store.schedules.find_one({})
        assert doc is not None
        return doc


@pytest.fixture
async def rig(core: Core) -> Rig:
    store = InsightStore(db=core.db, wake_relay=lambda: None, retention=timedelta(days=90))
    await store.ensure_indexes()
    reader = FakeReader(core)
    accounts = Accounts()
    collectors = [
        InsightsCollector(
            store=store,
            readers=Readers(reader),
            accounts=accounts,
            clock=core.clock,
            settings=SETTINGS,
            owner=name,
            jitter=lambda: 0.0,
        )
        for name in ("replica-a", "replica-b")
    ]
    return Rig(core, store, reader, accounts, collectors)


async def publish_story(core: Core) -> str:
    await core.intake.story(core.new(Kind.STORY, UUID), "alice")
    [post] = await core.run_due()
    done = await core.posts.get(Kind.STORY, "org", UUID)
    assert done.status is Status.EXECUTED
    return post.id


def test_the_points_of_a_post_and_of_a_story() -> None:
    story = Plan.of(InsightsSettings(), Kind.STORY)
    reel = Plan.of(InsightsSettings(), Kind.REEL)
    assert [story.due(START, i) for i in range(5)] == [
        START, START + HOUR, START + 6 * HOUR, START + 23 * HOUR, None
    ]  # fmt: skip
    assert [reel.due(START, i) for i in range(7)] == [
        START, START + HOUR, START + 6 * HOUR, START + 24 * HOUR,
        START + timedelta(days=7), START + timedelta(days=30), None,
    ]  # fmt: skip
    assert story.readable(START, START + 23 * HOUR)
    assert not story.readable(START, START + 24 * HOUR)
    assert reel.readable(START, START + timedelta(days=400))


def test_the_points_are_settings() -> None:
    settings = InsightsSettings.model_validate(
        {"insights_points_seconds": "0,2,4", "insights_story_points_seconds": [0, 1]}
    )
    assert settings.insights_points_seconds == (0.0, 2.0, 4.0)
    assert Plan.of(settings, Kind.STORY).offsets == (0.0, 1.0)
    with pytest.raises(ValueError, match="increasing"):
        InsightsSettings.model_validate({"insights_points_seconds": "0,5,3"})


def test_backoff_doubles_honours_retry_after_and_ends_with_the_story() -> None:
    ten_minutes = InsightsSettings(insights_backoff_seconds=60, insights_max_backoff_seconds=600)
    plan = Plan.of(ten_minutes, Kind.REEL, lambda: 0.0)
    waits = [(plan.retry_at(START, n, START) or START) - START for n in (1, 2, 3, 4, 5, 6)]
    assert [w.total_seconds() for w in waits] == [60, 120, 240, 480, 600, 600]
    assert plan.retry_at(START, 1, START, retry_after_seconds=300) == START + timedelta(seconds=300)
    jittered = Plan.of(ten_minutes, Kind.REEL, lambda: 1.0)
    assert jittered.retry_at(START, 1, START) == START + timedelta(seconds=72)
    assert 60 <= Plan.of(ten_minutes, Kind.REEL).retry.delay(1) <= 72  # 1.0 to 1.2 times
    two_hours = InsightsSettings(
        insights_max_backoff_seconds=7200, insights_story_lifetime_seconds=86400
    )
    story = Plan.of(two_hours, Kind.STORY, lambda: 0.0)
    late = START + timedelta(hours=23, minutes=59)
    assert story.retry_at(late, 1, START) is None  # past the story's 24 hours: given up


async def test_a_published_story_is_read_at_each_point_once(rig: Rig) -> None:
    record_id = await publish_story(rig.core)
    post_doc = await rig.core.db["posts"].find_one({"_id": record_id})
    assert post_doc is not None and post_doc["insightsDueAt"] == START
    # Two collectors: each point is read by one of them.
    assert await rig.pass_() == 1
    schedule = await rig.schedule()
    assert schedule["latest"] == {"collectedAt": START, "metrics": grow("", START)}
    assert (schedule["nextPoint"], schedule["dueAt"], schedule["state"]) == (
        1, START + HOUR, "collecting"
    )  # fmt: skip
    post_doc = await rig.core.db["posts"].find_one({"_id": record_id})
    assert post_doc is not None and "insightsDueAt" not in post_doc
    assert await rig.pass_() == 0  # nothing due before +1 h
    for hours in (1, 6, 23):
        rig.core.clock.advance(START + hours * HOUR - rig.core.clock.now())
        assert await rig.pass_() == 1
    schedule = await rig.schedule()
    assert (schedule["state"], schedule["dueAt"]) == ("done", None)
    assert len(rig.reader.calls) == 4
    points = [doc async for doc in rig.store.points.find({}).sort("collectedAt", 1)]
    assert [p["collectedAt"] for p in points] == [START + h * HOUR for h in (0, 1, 6, 23)]
    events = [e for e in schedule["outbox"] if e["type"] == "post.insights_updated"]
    assert len(events) == 4
    assert events[-1]["data"] == {
        "kind": "story",
        "uuid": UUID,
        "socialAccountId": schedule["account"]["socialAccountId"],
        "platform": "PHOTOAPP",
        "collectedAt": "2026-11-24T09:00:00Z",
        "metrics": {"impressions": 330, "reach": 165},
    }


async def test_a_late_collector_reads_once_instead_of_once_per_missed_point(rig: Rig) -> None:
    await publish_story(rig.core)
    rig.core.clock.advance(7 * HOUR)
    assert await rig.pass_() == 1  # the 0, +1 h and +6 h points are one reading
    schedule = await rig.schedule()
    assert (schedule["nextPoint"], schedule["dueAt"]) == (3, START + 23 * HOUR)


async def test_a_refusal_moves_the_point_and_leaves_the_post_executed(rig: Rig) -> None:
    record_id = await publish_story(rig.core)
    rig.reader.refusals = [
        PlatformError(Outcome.retry("photoapp: too many requests (rate_limited)", 30)),
        PlatformError(Outcome.retry("photoapp: the platform is offline (unavailable)")),
    ]
    before = await rig.core.db["posts"].find_one({"_id": record_id}, {"outbox": 0})
    assert await rig.pass_() == 1
    schedule = await rig.schedule()
    assert schedule["dueAt"] == START + timedelta(seconds=60)  # backoff; Retry-After 30 is less
    assert (schedule["failures"], schedule["nextPoint"]) == (1, 0)
    assert "rate_limited" in schedule["lastError"]
    rig.core.clock.advance(timedelta(seconds=60))
    assert await rig.pass_() == 1
    schedule = await rig.schedule()
    assert schedule["dueAt"] == START + timedelta(seconds=180)  # 60 s, then 120 s
    assert schedule["failures"] == 2 and "latest" not in schedule
    rig.core.clock.advance(timedelta(seconds=120))
    assert await rig.pass_() == 1
    schedule = await rig.schedule()
    assert (schedule["nextPoint"], schedule["failures"], schedule["lastError"]) == (1, 0, None)
    after = await rig.core.db["posts"].find_one({"_id": record_id}, {"outbox": 0})
    assert before is not None and after is not None
    before.pop("insightsDueAt")
    assert after == before  # the post itself is untouched: still executed


async def test_a_final_refusal_gives_the_point_up(rig: Rig) -> None:
    await publish_story(rig.core)
    rig.reader.refusals = [PlatformError(Outcome.failed("photoapp: story expired"))]
    await rig.pass_()
    schedule = await rig.schedule()
    assert (schedule["nextPoint"], schedule["dueAt"]) == (1, START + HOUR)
    assert schedule["lastError"] == "photoapp: story expired"


async def test_a_disconnected_account_stops_the_collection(rig: Rig) -> None:
    await publish_story(rig.core)
    rig.accounts.disconnected = True
    await rig.pass_()
    schedule = await rig.schedule()
    assert (schedule["state"], schedule["dueAt"]) == ("stopped", None)
    assert "is disconnected (the account is disconnected)" in schedule["stoppedReason"]
    rig.core.clock.advance(2 * HOUR)
    assert await rig.pass_() == 0 and rig.reader.calls == []


async def test_a_token_refused_twice_marks_the_account_and_stops(rig: Rig) -> None:
    await publish_story(rig.core)
    refused = PlatformError(Outcome.unauthorized("photoapp: token expired (token_expired)"))
    rig.reader.refusals = [refused, refused]
    await rig.pass_()
    schedule = await rig.schedule()
    assert schedule["state"] == "stopped" and "token_expired" in schedule["stoppedReason"]
    assert rig.accounts.marked == [schedule["account"]["socialAccountId"]]


async def test_refresh_reads_now_within_limits(rig: Rig) -> None:
    record_id = await publish_story(rig.core)
    await rig.pass_()
    servicer = InsightsServicer(rig.collector, rig.store)
    request = ipb.GetPostInsightsRequest(
        organization_id="org", kind=pb.POST_KIND_STORY, post_uuid=UUID, refresh=True
    )
    rig.core.clock.advance(timedelta(seconds=30))
    answer = await servicer.GetPostInsights(request, None)  # type: ignore[arg-type]
    assert len(answer.history) == 1 and len(rig.reader.calls) == 1  # read 30 s ago: stored
    rig.core.clock.advance(2 * HOUR)
    answer = await servicer.GetPostInsights(request, None)  # type: ignore[arg-type]
    assert len(rig.reader.calls) == 2 and len(answer.history) == 2
    assert dict(answer.metrics) == grow("", rig.core.clock.now())
    assert answer.collected_at.ToDatetime().hour == 12
    schedule = await rig.schedule()
    assert schedule["nextPoint"] == 1  # the planned points are unchanged
    rig.core.clock.advance(2 * HOUR)
    rig.reader.refusals = [PlatformError(Outcome.retry("photoapp: too many requests", 42))]
    with pytest.raises(ResourceExhausted) as refused:
        await servicer.GetPostInsights(request, None)  # type: ignore[arg-type]
    assert refused.value.retry_after_seconds == 42
    assert (await rig.store.schedules.find_one({"_id": record_id}) or {})["leaseUntil"].year == 1970


async def test_daily_rollups_count_each_point_once(rig: Rig) -> None:
    await publish_story(rig.core)
    await rig.pass_()
    rig.core.clock.advance(HOUR)
    await rig.pass_()
    schedule = await rig.schedule()
    account = schedule["account"]["socialAccountId"]
    # A point stored again (a crash between its steps) adds nothing more.
    await rig.store.add_to_day("org", account, "2026-11-23", "org:x:1", {"impressions": 5}, None)
    await rig.store.add_to_day("org", account, "2026-11-23", "org:x:1", {"impressions": 5}, None)
    servicer = InsightsServicer(rig.collector, rig.store)
    answer = await servicer.ListAccountInsights(
        ipb.ListAccountInsightsRequest(
            organization_id="org", social_account_id=account, from_day="2026-11-22",
            to_day="2026-11-30",
        ),
        None,  # type: ignore[arg-type]
    )  # fmt: skip
    assert [d.day for d in answer.days] == ["2026-11-23"]
    assert dict(answer.days[0].metrics) == {
        "impressions": 110 + 5, "reach": 55, "followers": 1023
    }  # fmt: skip
    assert rig.reader.follower_calls == 1  # once a day per account
    other = await servicer.ListAccountInsights(
        ipb.ListAccountInsightsRequest(
            organization_id="other", social_account_id=account, from_day="2026-11-22",
            to_day="2026-11-30",
        ),
        None,  # type: ignore[arg-type]
    )  # fmt: skip
    assert list(other.days) == []


async def test_another_organizations_post_is_not_found(rig: Rig) -> None:
    await publish_story(rig.core)
    await rig.pass_()
    servicer = InsightsServicer(rig.collector, rig.store)
    mine = await servicer.GetPostInsights(
        ipb.GetPostInsightsRequest(organization_id="org", kind=pb.POST_KIND_STORY, post_uuid=UUID),
        None,  # type: ignore[arg-type]
    )
    assert mine.state == ipb.COLLECTION_STATE_COLLECTING and mine.post_uuid == UUID
    with pytest.raises(NotFound, match=f"story post {UUID} not found"):
        await servicer.GetPostInsights(
            ipb.GetPostInsightsRequest(
                organization_id="other", kind=pb.POST_KIND_STORY, post_uuid=UUID
            ),
            None,  # type: ignore[arg-type]
        )


async def test_a_post_not_executed_has_no_insights_yet(rig: Rig) -> None:
    await rig.core.intake.story(rig.core.new(Kind.STORY, UUID, START + HOUR), "alice")
    servicer = InsightsServicer(rig.collector, rig.store)
    with pytest.raises(FailedPrecondition, match="is scheduled"):
        await servicer.GetPostInsights(
            ipb.GetPostInsightsRequest(organization_id="org", kind=pb.POST_KIND_STORY,
                                       post_uuid=UUID),
            None,  # type: ignore[arg-type]
        )  # fmt: skip


async def test_a_point_being_recorded_is_not_shown_before_its_schedule_takes_it(
    rig: Rig,
) -> None:
    """`record` stores the raw point, then the day, then the schedule: an answer read in
    between (CI saw one: a history of one point and no figures) shows neither, and a point
    whose attempt lost its lease never shows."""
    await publish_story(rig.core)
    await rig.pass_()
    servicer = InsightsServicer(rig.collector, rig.store)
    request = ipb.GetPostInsightsRequest(
        organization_id="org", kind=pb.POST_KIND_STORY, post_uuid=UUID
    )
    schedule = await rig.schedule()
    later = START + HOUR
    await rig.store.points.insert_one(
        {
            "_id": f"{schedule['_id']}:1",
            "postId": schedule["_id"],
            "organizationId": "org",
            "collectedAt": later,
            "metrics": grow("", later),
        }
    )
    answer = await servicer.GetPostInsights(request, None)  # type: ignore[arg-type]
    assert [p.collected_at.ToDatetime(tzinfo=UTC) for p in answer.history] == [START]
    assert dict(answer.metrics) == dict(answer.history[-1].metrics) == grow("", START)

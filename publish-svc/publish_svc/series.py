"""Recurring posts: a schedule call with a `repeat` starts a series; status and cancel.

The call's own post is occurrence 0, stored by the intake as any post (with the series'
UUID); then the series document. Both are idempotent (the post on its UUID, the series on
an id derived from the call), so the same call again answers the same series and creates
nothing. The series worker (series_worker.py) creates the occurrences after it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import KW_ONLY, dataclass, replace
from datetime import datetime

from publish_svc.accounts_client import AccountsClient, clipapp_ref, photoapp_ref, social_ref
from publish_svc.intake import Accepted, NewPost, PostIntake
from publish_svc.model import Kind, Post, Status
from publish_svc.post_params import (
    ClipappParams,
    Params,
    ReelParams,
    StoryParams,
    params_doc,
)
from publish_svc.posts import CANCEL_IN_PROGRESS, Posts
from publish_svc.queue_times import invalid
from publish_svc.records import PostStore
from publish_svc.series_rules import (
    CREATE_AHEAD,
    MAX_ACTIVE_PER_ACCOUNT,
    RepeatRule,
    occurrence_uuid,
    repeat_rule,
    series_uuid,
)
from publish_svc.series_store import NEVER, SeriesRecord, SeriesStore, series_id
from storypost.account.v1 import account_pb2 as apb
from storypost_runtime.clock import Clock
from storypost_runtime.component import component
from storypost_runtime.errors import FailedPrecondition, NotFound, ResourceExhausted
from storypost_runtime.mongo import Document
from storypost_runtime.vocabulary import SeriesStatus


@dataclass(frozen=True)
class Target:
    """The account a schedule call names, as it names it, and a social post's type."""

    account: str
    post_type: str = ""


@dataclass(frozen=True)
class RepeatAsked:
    """A schedule call's `repeat`, as given."""

    every: str
    count: int
    until: datetime | None
    variants: Sequence[Mapping[str, str]]


@dataclass(frozen=True)
class Occurrence:
    post_uuid: str
    date: datetime | None
    status: Status | None  # None: it could not be created (see `skipped`)


@dataclass(frozen=True)
class SeriesView:
    series_uuid: str
    kind: Kind
    status: SeriesStatus
    occurrences: list[Occurrence]
    next_date: datetime | None


async def intake_call(intake: PostIntake, new: NewPost[Params], target: Target) -> Accepted:
    """The intake's method of the post's kind."""
    params = new.params
    if isinstance(params, StoryParams):
        return await intake.story(_with(new, params), target.account)
    if isinstance(params, ReelParams):
        return await intake.reel(_with(new, params), target.account)
    if isinstance(params, ClipappParams):
        return await intake.clipapp(_with(new, params), target.account)
    return await intake.social(_with(new, params), target.account, target.post_type)


def _with[P: Params](new: NewPost[Params], params: P) -> NewPost[P]:
    """`new` typed by its params' kind."""
    return NewPost(
        organization_id=new.organization_id,
        post_uuid=new.post_uuid,
        design=new.design,
        date=new.date,
        params=params,
        queue_name=new.queue_name,
        series_uuid=new.series_uuid,
        rendering_id=new.rendering_id,
    )


def account_ref(kind: Kind, target: Target) -> tuple[apb.AccountRef, str]:
    if kind in (Kind.STORY, Kind.REEL):
        return photoapp_ref(target.account), f"photoapp account '{target.account}'"
    if kind is Kind.CLIPAPP:
        return clipapp_ref(target.account), f"clipapp account '{target.account}'"
    return social_ref(target.account), f"social account '{target.account}'"


@component
class SeriesService:
    _: KW_ONLY
    store: SeriesStore
    posts: PostStore
    intake: PostIntake
    cancels: Posts
    accounts: AccountsClient
    clock: Clock

    async def start(
        self, new: NewPost[Params], target: Target, asked: RepeatAsked
    ) -> tuple[Accepted, str]:
        """Schedules the first post of a series and stores the series; (the post, the
        series' UUID). A repeated call answers the same and creates nothing."""
        kind = new.kind
        now = self.clock.now()
        rule = repeat_rule(
            kind,
            every=asked.every,
            count=asked.count,
            until=asked.until,
            variants=asked.variants,
            queue_name=new.queue_name,
            start=new.date or now,
        )
        series = series_uuid(new.organization_id, kind, new.post_uuid)
        new = replace(new, series_uuid=series)
        existing = await self.posts.get(kind, new.organization_id, new.post_uuid)
        if existing is not None:
            if existing.series_uuid != series:
                raise invalid(
                    "repeat",
                    f"post {new.post_uuid} exists already as a single post: give a new UUID",
                )
            # The call that stored it may have died before storing the series.
            await self._store(new, target, rule, existing, now)
            return Accepted(existing, existing.warnings), series
        ref, label = account_ref(kind, target)
        account = await self.accounts.connected(new.organization_id, ref, label)
        social_account_id = account.social_account_id
        if not await self.store.reserve(new.organization_id, social_account_id, series, now):
            raise invalid(
                "repeat",
                f"the account has {MAX_ACTIVE_PER_ACCOUNT} active series, the most it can "
                "have: cancel one (cancel-series) or wait until one finishes",
            )
        try:
            accepted = await intake_call(self.intake, new, target)
        except BaseException:
            if await self.store.get(new.organization_id, series) is None:
                await self.store.release(new.organization_id, social_account_id, series)
            raise
        await self._store(new, target, rule, accepted.post, now)
        return accepted, series

    async def _store(
        self,
        new: NewPost[Params],
        target: Target,
        rule: RepeatRule,
        first: Post,
        now: datetime,
    ) -> None:
        series = new.series_uuid
        first_date = first.listed_at
        next_date = rule.date_of(first_date, 1)
        doc: Document = {
            "_id": series_id(new.organization_id, series),
            "organizationId": new.organization_id,
            "seriesUuid": series,
            "kind": new.kind.value,
            "socialAccountId": first.account.social_account_id,
            "target": target.account,
            "postType": target.post_type,
            "params": params_doc(new.params),
            "queueName": new.queue_name,
            "rule": rule.to_doc(),
            "firstDate": first_date,
            "firstUuid": new.post_uuid.lower(),
            "nextIndex": 1,
            "nextDate": next_date,
            # Dated occurrences are made CREATE_AHEAD before their date; queued ones when the
            # previous one's date comes (their slot is taken then).
            "createAt": next_date - CREATE_AHEAD if next_date else first_date,
            "status": SeriesStatus.ACTIVE.value,
            "leaseUntil": NEVER,
            "skipped": {},
            "createdAt": now,
            "updatedAt": now,
        }
        if new.design.HasField("url"):
            doc["url"] = new.design.url
        else:
            doc["renderingId"] = first.rendering_id
        await self.store.insert(doc)

    async def view(self, organization_id: str, series: str) -> SeriesView:
        record = await self._record(organization_id, series)
        return await self._view(record)

    async def cancel(self, organization_id: str, series: str) -> SeriesView:
        """Stops the series and cancels each of its posts not yet started."""
        record = await self._record(organization_id, series)
        now = self.clock.now()
        stopped = await self.store.stop(organization_id, series, SeriesStatus.CANCELED, now)
        if stopped is not None:
            await self.store.release(organization_id, record.social_account_id, series)
        await self.cancel_unstarted(record)
        return await self._view(await self._record(organization_id, series))

    async def cancel_unstarted(self, record: SeriesRecord) -> None:
        """Cancels the series' posts that are still scheduled (those being published, or
        published, are kept)."""
        for post in await self._occurrence_posts(record):
            if post.status is not Status.SCHEDULED or post.progress.get("irreversible"):
                continue  # started: it is kept
            try:
                await self.cancels.cancel(record.kind, record.organization_id, post.post_uuid)
            except FailedPrecondition:
                continue  # it started meanwhile: it is kept
            except ResourceExhausted as error:
                if error.reason == CANCEL_IN_PROGRESS:
                    continue  # being published right now: it is kept
                raise  # the platform is unreachable: cancel-series again (it is idempotent)

    async def _record(self, organization_id: str, series: str) -> SeriesRecord:
        record = await self.store.get(organization_id, series.lower())
        if record is None:
            raise NotFound(f"series {series} not found")
        return record

    async def _occurrence_posts(self, record: SeriesRecord) -> list[Post]:
        cursor = self.posts.posts.find(
            {"organizationId": record.organization_id, "seriesUuid": record.series_uuid},
            {"outbox": 0},
        )
        return [Post.from_doc(doc) async for doc in cursor]

    async def _view(self, record: SeriesRecord) -> SeriesView:
        by_uuid = {post.post_uuid: post for post in await self._occurrence_posts(record)}
        occurrences: list[Occurrence] = []
        for n in range(record.next_index):
            uuid = occurrence_uuid(record.series_uuid, n) if n else record.first_uuid
            post = by_uuid.get(uuid)
            if post is not None:
                occurrences.append(Occurrence(uuid, post.listed_at, post.status))
            elif str(n) in record.skipped:
                occurrences.append(Occurrence(uuid, record.skipped[str(n)].get("date"), None))
        active = record.status is SeriesStatus.ACTIVE
        return SeriesView(
            record.series_uuid,
            record.kind,
            record.status,
            occurrences,
            record.next_date if active else None,
        )

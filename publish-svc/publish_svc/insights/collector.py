"""Collects insight points: plans a schedule for each executed post, claims each due point
under a lease (any number of replicas read each point once), reads the platform, stores the
point with its event; a refusal moves the point later and never touches the post."""

from __future__ import annotations

import asyncio
import random
import secrets
from collections.abc import Callable
from dataclasses import KW_ONLY, dataclass, field
from datetime import datetime, timedelta
from typing import Any, Protocol

import grpc

from publish_svc.drivers.base import Outcome, OutcomeKind
from publish_svc.drivers.http import PlatformError
from publish_svc.insights.config import InsightsSettings
from publish_svc.insights.readers import InsightsReader
from publish_svc.insights.schedule import Plan
from publish_svc.insights.store import (
    COLLECTING,
    DONE,
    NEVER,
    POST_DUE_FIELD,
    STOPPED,
    InsightStore,
    day_key,
)
from publish_svc.model import Kind
from storypost.account.v1 import account_pb2 as apb
from storypost_runtime.clock import Clock, iso_utc
from storypost_runtime.component import component
from storypost_runtime.errors import FailedPrecondition, ResourceExhausted
from storypost_runtime.logs import get_logger
from storypost_runtime.mongo import Document
from storypost_runtime.outbox import Event, new_record_outbox
from storypost_runtime.tasks import Next, TaskSet, claim_due, run_passes
from storypost_runtime.vocabulary import INSIGHTS_EVENT

log = get_logger(__name__)
PLAN_BATCH = 50
DRAIN_SECONDS = 10.0
# A refresh refused by the platform without a Retry-After: ask again after this.
REFRESH_RETRY_SECONDS = 60.0


class ReaderLookup(Protocol):
    def get(self, platform: str) -> InsightsReader: ...


class Tokens(Protocol):
    """What the collector asks account-svc (publish_svc.accounts_client.AccountsClient)."""

    async def access_token(
        self, organization_id: str, social_account_id: str, *, force_refresh: bool = False
    ) -> apb.AccessToken: ...

    async def mark_disconnected(
        self, organization_id: str, social_account_id: str, reason: str
    ) -> None: ...


class Stopped(Exception):
    """The account can no longer be read: the collection stops, saying why."""


@dataclass(frozen=True)
class Reading:
    metrics: dict[str, int]
    followers: int | None


def insights_event(schedule: Document, at: datetime, metrics: dict[str, int]) -> Event:
    """`post.insights_updated`: the post, when its figures were read, and the figures."""
    account = schedule["account"]
    data: dict[str, Any] = {
        "kind": schedule["kind"],
        "uuid": schedule["postUuid"],
        "socialAccountId": account["socialAccountId"],
        "platform": account["platform"],
        "collectedAt": iso_utc(at),
        "metrics": dict(metrics),
    }
    return Event.new(INSIGHTS_EVENT.name, schedule["organizationId"], at, data)


@component
class InsightsCollector:
    _: KW_ONLY
    store: InsightStore
    readers: ReaderLookup
    accounts: Tokens
    clock: Clock
    settings: InsightsSettings
    owner: str
    jitter: Callable[[], float] = random.random
    _wake: asyncio.Event = field(init=False, default_factory=asyncio.Event)
    _running: TaskSet = field(init=False, default_factory=TaskSet)
    # Points stored by this replica (the bench's figure).
    collected: int = field(init=False, default=0)

    @property
    def lease(self) -> timedelta:
        return timedelta(seconds=self.settings.insights_lease_seconds)

    def plan(self, kind: Kind) -> Plan:
        return Plan.of(self.settings, kind, self.jitter)

    def wake(self) -> None:
        self._wake.set()

    # -- the loop ---------------------------------------------------------------------------
    async def run(self) -> None:
        try:
            await run_passes(
                self._pass,
                self._pass_failed,
                poll_seconds=self.settings.insights_max_idle_seconds,
                wake=self._wake,
                due_in=self._due_in,
            )
        finally:
            await self._running.drain(DRAIN_SECONDS)

    async def _pass(self) -> Next:
        """Plans the posts executed since, then claims as many due points as workers are
        free (waiting for one when none is)."""
        free = await self._running.room(self.settings.insights_workers)
        planned = await self.plan_pending()
        found, claimed = await claim_due(
            self.store, owner=self.owner, now=self.clock.now(), lease=self.lease, most=free
        )
        for schedule, holder in claimed:
            name = f"insights {schedule['_id']}"
            self._running.spawn(self._collect_logged(schedule, holder), name=name)
        return Next.after_claims(found, len(claimed) + planned)

    def _pass_failed(self, error: Exception) -> None:
        log.warning("insights pass failed", error=str(error))

    async def _collect_logged(self, schedule: Document, holder: str) -> None:
        """`collect`, whose storage failures (MongoDB away) are logged: the lease then runs
        out and the point is read again, by this replica or another."""
        try:
            await self.collect(schedule, holder)
        except Exception as error:
            log.warning("storing an insights point failed", post=schedule["_id"], error=str(error))

    async def _due_in(self) -> float | None:
        now = self.clock.now()
        next_due = await self.store.next_due_at(now)
        return None if next_due is None else (next_due - now).total_seconds()

    # -- planning ---------------------------------------------------------------------------
    async def plan_pending(self) -> int:
        """Makes the schedule of each post executed since the last pass (marked by the
        `executed` write itself, so a crash in between loses none)."""
        now = self.clock.now()
        posts = await self.store.posts_to_plan(now, PLAN_BATCH)
        for post in posts:
            await self.store.open(self.schedule_of(post, now))
        return len(posts)

    def schedule_of(self, post: Document, now: datetime) -> Document:
        kind = Kind(post["kind"])
        published: datetime = post.get("finishedAt") or post[POST_DUE_FIELD]
        plan = self.plan(kind)
        index = self._next_index(plan, published, -1, now)
        due = plan.due(published, index)
        doc: Document = {
            "_id": post["_id"],
            "organizationId": post["organizationId"],
            "kind": kind.value,
            "postUuid": post["postUuid"],
            "account": post["account"],
            "platformPostId": post.get("platformPostId"),
            "publishedAt": published,
            "nextPoint": index,
            "dueAt": due,
            "state": COLLECTING if due is not None else DONE,
            "failures": 0,
            "lastError": None,
            "stoppedReason": None,
            "leaseUntil": NEVER,
            "createdAt": now,
            **new_record_outbox(),
        }
        if not doc["platformPostId"]:
            doc.update(state=STOPPED, dueAt=None, stoppedReason="the platform gave no post id")
        return doc

    @staticmethod
    def _next_index(plan: Plan, published: datetime, after: int, now: datetime) -> int:
        """The point after `after` to read next: points whose successor is due already are
        passed over (a replica away for a day reads once, not once per missed point), as are
        a story's points past its lifetime."""
        index = after + 1
        while True:
            due = plan.due(published, index)
            if due is None:
                return index
            following = plan.due(published, index + 1)
            if not plan.readable(published, due):
                index += 1
                continue
            if following is not None and following <= now and plan.readable(published, following):
                index += 1
                continue
            return index

    # -- one point --------------------------------------------------------------------------
    async def collect(self, schedule: Document, holder: str) -> None:
        """Reads the claimed schedule's due point; every path gives the lease back."""
        now = self.clock.now()
        plan = self.plan(Kind(schedule["kind"]))
        try:
            reading = await self._read(schedule, now)
        except Stopped as stop:
            await self._stop(schedule, holder, str(stop))
            return
        except PlatformError as error:
            await self._refused(schedule, holder, plan, error.outcome, now)
            return
        except grpc.aio.AioRpcError as error:
            outcome = Outcome.retry(f"internal dependency: {error.code().name}")
            await self._refused(schedule, holder, plan, outcome, now)
            return
        except Exception:
            log.exception("reading insights crashed", post=schedule["_id"])
            await self._refused(schedule, holder, plan, Outcome.retry("internal error"), now)
            return
        index = int(schedule["nextPoint"])
        recorded = await self.store.record(
            schedule,
            holder,
            f"{schedule['_id']}:{index}",
            now,
            reading.metrics,
            fields=self._advance(plan, schedule, index, now, None),
            event=insights_event(schedule, now, reading.metrics),
            followers=reading.followers,
        )
        if recorded:
            self.collected += 1

    def _advance(
        self, plan: Plan, schedule: Document, index: int, now: datetime, error: str | None
    ) -> Document:
        """The schedule's fields once point `index` is read or given up."""
        following = self._next_index(plan, schedule["publishedAt"], index, now)
        due = plan.due(schedule["publishedAt"], following)
        return {
            "nextPoint": following,
            "dueAt": due,
            "state": COLLECTING if due is not None else DONE,
            "failures": 0,
            "lastError": error,
        }

    async def _refused(
        self, schedule: Document, holder: str, plan: Plan, outcome: Outcome, now: datetime
    ) -> None:
        """A retryable refusal moves the point later (backoff, at least Retry-After); a
        final one, or a story's point pushed past its end, gives the point up."""
        index = int(schedule["nextPoint"])
        message = outcome.message
        if outcome.kind is OutcomeKind.RETRY:
            failures = int(schedule.get("failures") or 0) + 1
            at = plan.retry_at(now, failures, schedule["publishedAt"], outcome.retry_after_seconds)
            if at is not None:
                fields = {"dueAt": at, "failures": failures, "lastError": message}
                await self.store.release(schedule["_id"], holder, fields)
                log.info("insights point later", post=schedule["_id"], error=message, due=at)
                return
            message = f"{message} (point given up: the story's insights ended)"
        fields = self._advance(plan, schedule, index, now, message)
        await self.store.release(schedule["_id"], holder, fields)
        log.info("insights point given up", post=schedule["_id"], error=message)

    async def _stop(self, schedule: Document, holder: str, reason: str) -> None:
        fields = {"state": STOPPED, "stoppedReason": reason, "dueAt": None}
        await self.store.release(schedule["_id"], holder, fields)
        log.info("insights collection stopped", post=schedule["_id"], reason=reason)

    async def _read(self, schedule: Document, now: datetime) -> Reading:
        """The post's figures (and its account's followers today, once a day), with a token
        refreshed once when the platform refuses it."""
        account = schedule["account"]
        reader = self.readers.get(account["platform"])
        for again in (False, True):
            token = await self._token(schedule, force_refresh=again)
            try:
                metrics = await reader.post(
                    token, account["platformAccountId"], schedule["platformPostId"]
                )
            except PlatformError as error:
                if error.outcome.kind is not OutcomeKind.UNAUTHORIZED:
                    raise
                if not again:
                    continue
                await self.accounts.mark_disconnected(
                    schedule["organizationId"], account["socialAccountId"], error.outcome.message
                )
                raise Stopped(self._disconnected(schedule, error.outcome.message)) from None
            if not metrics:
                # A platform that has no figures for a post yet (it answers an empty list
                # while it catches up) is read again later: an empty point is no reading.
                raise PlatformError(Outcome.retry(f"{account['platform']}: no figures yet"))
            return Reading(metrics, await self._followers(schedule, reader, token, now))
        raise AssertionError("unreachable")

    async def _followers(
        self, schedule: Document, reader: InsightsReader, token: str, now: datetime
    ) -> int | None:
        account = schedule["account"]
        day = day_key(now)
        if await self.store.has_followers(
            schedule["organizationId"], account["socialAccountId"], day
        ):
            return None
        try:
            return await reader.followers(token, account["platformAccountId"], now.date())
        except PlatformError as error:
            # The account's figure is best effort: the post's point does not wait for it.
            log.info("followers not read", post=schedule["_id"], error=error.outcome.message)
            return None

    async def _token(self, schedule: Document, *, force_refresh: bool) -> str:
        account = schedule["account"]
        try:
            token = await self.accounts.access_token(
                schedule["organizationId"], account["socialAccountId"], force_refresh=force_refresh
            )
        except grpc.aio.AioRpcError as error:
            if error.code() in (grpc.StatusCode.FAILED_PRECONDITION, grpc.StatusCode.NOT_FOUND):
                raise Stopped(self._disconnected(schedule, error.details() or "")) from None
            raise
        return token.access_token

    @staticmethod
    def _disconnected(schedule: Document, detail: str) -> str:
        account = schedule["account"]
        reason = f" ({detail})" if detail else ""
        return (
            f"the {account['platform']} account '{account['username']}' is disconnected"
            f"{reason}: reconnect it in the app; insights are no longer collected"
        )

    # -- refresh ----------------------------------------------------------------------------
    async def refresh(self, record_id: str) -> None:
        """Reads a post's figures now (get-post-insights with refresh), unless they were read
        within `insights_refresh_min_seconds`, the collection stopped, a story's insights
        ended, or a point of it is being read right now: then the stored figures answer."""
        now = self.clock.now()
        schedule = await self.store.get(record_id)
        if schedule is None or schedule["state"] == STOPPED:
            return
        latest = (schedule.get("latest") or {}).get("collectedAt")
        least = timedelta(seconds=self.settings.insights_refresh_min_seconds)
        if latest is not None and now - latest < least:
            return
        plan = self.plan(Kind(schedule["kind"]))
        if not plan.readable(schedule["publishedAt"], now):
            return
        holder = f"{self.owner}/refresh/{secrets.token_hex(4)}"
        claimed = await self.store.claim(record_id, holder, now, now + self.lease, due=False)
        if claimed is None:
            return
        try:
            reading = await self._read(claimed, now)
        except Stopped as stop:
            await self._stop(claimed, holder, str(stop))
            return
        except PlatformError as error:
            await self.store.release(record_id, holder, {})
            if error.outcome.kind is OutcomeKind.RETRY:
                raise ResourceExhausted(
                    f"the platform cannot be read now: {error.outcome.message}",
                    retry_after_seconds=error.outcome.retry_after_seconds or REFRESH_RETRY_SECONDS,
                    reason="PLATFORM_RATE_LIMITED",
                ) from None
            raise FailedPrecondition(
                f"the platform refused the insights: {error.outcome.message}"
            ) from None
        except BaseException:
            await self.store.release(record_id, holder, {})
            raise
        point_id = f"{record_id}:r{int(now.timestamp() * 1000)}"
        if await self.store.record(
            claimed,
            holder,
            point_id,
            now,
            reading.metrics,
            fields={"refreshedAt": now},
            event=insights_event(claimed, now, reading.metrics),
            followers=reading.followers,
        ):
            self.collected += 1

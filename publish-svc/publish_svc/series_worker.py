"""Creates each series' next occurrence ahead of its date, exactly once.

Any number of replicas run one. A series' next occurrence is leased to one worker (others
skip it meanwhile), created through the intake with its deterministic UUID, and then the
series is advanced by a write guarded by the occurrence's index. A worker killed between
the two leaves the lease to expire: the next worker creates the same UUID again, which the
intake answers as existing (nothing doubled), and advances the series (nothing lost).
"""

from __future__ import annotations

import asyncio
from dataclasses import KW_ONLY, field
from datetime import datetime, timedelta

import grpc

from publish_svc.intake import NewPost, PostIntake
from publish_svc.post_params import Params, params_from_doc
from publish_svc.queues import Queues
from publish_svc.series import SeriesService, Target, intake_call
from publish_svc.series_rules import CREATE_AHEAD, occurrence_uuid
from publish_svc.series_store import SeriesRecord, SeriesStore
from storypost.render.v1 import render_pb2 as rpb
from storypost_runtime.clock import Clock
from storypost_runtime.component import component
from storypost_runtime.errors import DomainError, ResourceExhausted, Unavailable
from storypost_runtime.logs import get_logger
from storypost_runtime.mongo import Document
from storypost_runtime.tasks import run_passes
from storypost_runtime.vocabulary import SeriesStatus

log = get_logger(__name__)
BATCH = 20


@component
class SeriesWorker:
    _: KW_ONLY
    store: SeriesStore
    series: SeriesService
    intake: PostIntake
    clock: Clock
    queues: Queues | None = None
    lease: timedelta = timedelta(minutes=2)
    max_idle: timedelta = timedelta(seconds=30)
    # A transient failure (render-svc away, a quota full now) is tried again after this.
    retry: timedelta = timedelta(minutes=1)
    _wake: asyncio.Event = field(init=False, default_factory=asyncio.Event)

    def wake(self) -> None:
        self._wake.set()

    async def run(self) -> None:
        await run_passes(
            self.run_once,
            self._pass_failed,
            poll_seconds=self.max_idle.total_seconds(),
            wake=self._wake,
            due_in=self._due_in,
        )

    async def run_once(self) -> int:
        """Creates the due occurrences; how many series moved on."""
        now = self.clock.now()
        moved = 0
        for record in await self.store.due(now, BATCH):
            if not await self.store.lease(record, now, now + self.lease):
                continue
            if await self.create_next(record):
                moved += 1
        return moved

    async def create_next(self, record: SeriesRecord) -> bool:
        """Creates occurrence `next_index` (or records why it cannot be) and advances the
        series; False when it is to be tried again later, or moved on meanwhile."""
        n = record.next_index
        now = self.clock.now()
        if record.next_date is None and not await self._queue_slot_left(record):
            return await self._advance(record, {"nextIndex": n, "nextDate": None}, finish=True)
        new = self._occurrence(record, n)
        try:
            accepted = await intake_call(self.intake, new, Target(record.target, record.post_type))
        except (ResourceExhausted, Unavailable, grpc.aio.AioRpcError) as error:
            log.warning("occurrence delayed", series=record.series_uuid, n=n, error=str(error))
            await self.store.retry_at(record, now + self.retry)
            return False
        except DomainError as error:
            # It cannot be created (the account was disconnected, its date passed): it is
            # shown as failed, and the series goes on.
            log.warning("occurrence skipped", series=record.series_uuid, n=n, error=str(error))
            skipped: Document = {
                f"skipped.{n}": {"date": new.date, "error": error.message, "at": now}
            }
            return await self._next(record, new.date or now, skipped)
        return await self._next(record, accepted.post.listed_at, {})

    def _occurrence(self, record: SeriesRecord, n: int) -> NewPost[Params]:
        # A variant's fields (text, caption, title, description) are named as in `params`.
        params = params_from_doc(record.kind, {**record.params, **record.rule.variant(n)})
        return NewPost(
            organization_id=record.organization_id,
            post_uuid=occurrence_uuid(record.series_uuid, n),
            design=rpb.Design(url=record.url) if record.url else rpb.Design(),
            date=record.next_date,
            params=params,
            queue_name="" if record.next_date else record.queue_name,
            series_uuid=record.series_uuid,
            rendering_id="" if record.url else record.rendering_id,
        )

    async def _next(self, record: SeriesRecord, date_made: datetime, extra: Document) -> bool:
        n = record.next_index + 1
        next_date = record.rule.date_of(record.first_date, n)
        fields: Document = {**extra, "nextIndex": n, "nextDate": next_date}
        if not record.rule.has(n, next_date):
            return await self._advance(record, fields, finish=True)
        # Dated: CREATE_AHEAD before it; queued: when this one's date comes.
        fields["createAt"] = next_date - CREATE_AHEAD if next_date else date_made
        return await self._advance(record, fields, finish=False)

    async def _advance(self, record: SeriesRecord, fields: Document, *, finish: bool) -> bool:
        now = self.clock.now()
        fields = {**fields, "updatedAt": now}
        if finish:
            fields.update(status=SeriesStatus.FINISHED.value, stoppedAt=now, nextDate=None)
        if await self.store.advance(record, fields):
            if finish:
                await self.store.release(
                    record.organization_id, record.social_account_id, record.series_uuid
                )
            return True
        # Canceled meanwhile: the occurrence just made must not stay scheduled.
        current = await self.store.get(record.organization_id, record.series_uuid)
        if current is not None and current.status is SeriesStatus.CANCELED:
            await self.series.cancel_unstarted(current)
        return False

    async def _queue_slot_left(self, record: SeriesRecord) -> bool:
        """A queued series with `until`: whether the queue's next free slot is still in it."""
        until = record.rule.until
        if until is None or self.queues is None:
            return True
        try:
            slots = await self.queues.preview(
                record.organization_id, record.social_account_id, record.queue_name, 1
            )
        except DomainError:
            return True  # the occurrence's own creation says why it cannot be made
        return bool(slots) and slots[0] <= until

    async def _due_in(self) -> float | None:
        at = await self.store.next_create_at()
        if at is None:
            return None
        # At least a second: a leased series stays due until its worker moves it on.
        return max(1.0, (at - self.clock.now()).total_seconds())

    def _pass_failed(self, error: Exception) -> None:
        log.warning("series pass failed", error=str(error))

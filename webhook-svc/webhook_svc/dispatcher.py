"""Runs attempts: the first one of a new delivery at once, retries when due, tests, redelivery."""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import Coroutine, Sequence
from dataclasses import KW_ONLY, field
from datetime import datetime, timedelta
from typing import Any

from opentelemetry import trace

from storypost_runtime.backoff import RetrySchedule
from storypost_runtime.clock import Clock, iso_utc
from storypost_runtime.component import component
from storypost_runtime.errors import FailedPrecondition
from storypost_runtime.logs import get_logger
from storypost_runtime.mongo import Document
from storypost_runtime.tasks import TaskSet, run_passes
from storypost_runtime.tracing import in_stored_trace
from webhook_svc.deliveries import (
    AttemptResult,
    Delivery,
    DeliveryStore,
    NewDelivery,
    Outcome,
    Status,
    outcome,
)
from webhook_svc.event_types import STORY, sample_payload
from webhook_svc.lanes import Lanes
from webhook_svc.metrics import WebhookMetrics, attempt_outcome
from webhook_svc.records_writer import BatchWriter
from webhook_svc.sender import Sender
from webhook_svc.webhooks import Webhook, Webhooks

log = get_logger(__name__)
WEBHOOK_REMOVED = "the webhook was removed"
# Closing waits this long at most to hand held deliveries back (else their leases run out).
CLOSE_RELEASE_SECONDS = 2.0
# Held deliveries handed back to the scheduler in one write at most.
HAND_BACK_BATCH = 500


@component
class Dispatcher:
    """Attempts deliveries within the lanes' bounds; the retry schedule lives in MongoDB."""

    _: KW_ONLY
    webhooks: Webhooks
    store: DeliveryStore
    sender: Sender
    lanes: Lanes
    schedule: RetrySchedule
    clock: Clock
    metrics: WebhookMetrics
    lease_seconds: float
    poll_seconds: float
    test_wait_seconds: float = 3.5
    # Due deliveries claimed in one round trip at most.
    claim_batch: int = 64
    # Deferred new deliveries this replica holds in memory for their turn at most (each leased
    # to it in its record), and how long one waits for a turn before the scheduler gets it.
    hold_limit: int = 0
    hold_seconds: float = 0.0
    _lease: timedelta = field(init=False)
    # The lease of the records held here: one per replica, so closing releases them in one write.
    _hold_lease: str = field(init=False, default_factory=lambda: uuid.uuid4().hex)
    _holds: int = field(init=False, default=0)
    _held_waiting: set[str] = field(init=False, default_factory=set)
    # Held deliveries whose turn did not come: handed back together, in one write per batch.
    _handing_back: list[str] = field(init=False, default_factory=list)
    _handing: bool = field(init=False, default=False)
    # Outcomes of attempts ending together share one bulk write (a failed one fails them:
    # their leases run out and they are attempted again).
    _outcomes: BatchWriter[tuple[str, str, Outcome]] = field(init=False)
    _wake: asyncio.Event = field(init=False, default_factory=asyncio.Event)
    # True while due deliveries may be waiting for room (checked when an attempt ends).
    _backlog: bool = field(init=False, default=True)
    _tasks: TaskSet = field(init=False, default_factory=TaskSet)

    def __post_init__(self) -> None:
        self._lease = timedelta(seconds=self.lease_seconds)
        self._outcomes = BatchWriter(self._finish_all, what="delivery outcomes", retry=False)

    # --- new deliveries (the consumer's fast path) ---

    async def admit(self, webhook: Webhook) -> bool:
        """A slot for a first attempt (now or after a short wait); False: store it due
        instead (deferred)."""
        return await self.lanes.enter(webhook.webhook_id)

    async def first_attempt(self, new: NewDelivery, webhook: Webhook) -> Document:
        """Attempts a new delivery (its slot taken by admit) and returns its record with
        the outcome, ready to store: one write per delivery when the endpoint is healthy."""
        created = self.clock.now()
        try:
            result = await self.sender.attempt(
                webhook.url, new.delivery_id, new.event, new.body, webhook.signing_secret
            )
        finally:
            self._release(webhook.webhook_id)
        now = self.clock.now()
        self._observe(result, first=True, occurred_at=new.occurred_at)
        change = outcome(
            result, attempts=0, retry_step=0, test=new.test, schedule=self.schedule, now=now
        )
        return change.apply(new.document(created, self.store.retention))

    def deferred(self, new: NewDelivery, webhook: Webhook) -> Document:
        """The record of a new delivery that found no room. While this replica has room to
        hold it (and the URL runs attempts that will hand on their slots), the record is
        leased to this replica and the delivery waits here for its turn; else it is due at
        once, for the scheduler. Either way, call `stored` once it is stored (or `not_stored`).

        Holding it skips the scheduler's claim (a sorted read and an update of the due
        records) and keeps the URL's deliveries in the order they came."""
        now = self.clock.now()
        doc = new.document(now, self.store.retention)
        if self._holds < self.hold_limit and self.lanes.can_hold(webhook.webhook_id):
            self._count_holds(1)
            doc |= {"dueAt": now + self._lease, "leaseId": self._hold_lease}
        return doc

    def stored(self, records: Sequence[tuple[Document, Webhook]]) -> None:
        """The consumer stored these records: held ones wait for their turn here; if any is
        due at once, the scheduler looks for it."""
        due_now = False
        for doc, webhook in records:
            if doc.get("leaseId") == self._hold_lease:
                self._spawn(self._hold(Delivery.from_doc(doc), webhook))
            elif doc.get("attempts") == 0:
                due_now = True
        if due_now:
            self.note_backlog()

    def not_stored(self, docs: Sequence[Document]) -> None:
        """Storing these records failed (their event comes again): nothing is held for them."""
        self._count_holds(-sum(doc.get("leaseId") == self._hold_lease for doc in docs))

    def _count_holds(self, change: int) -> None:
        self._holds += change
        self.metrics.held.set(self._holds)

    async def _hold(self, delivery: Delivery, webhook: Webhook) -> None:
        """Attempts a held delivery at its turn; without one in `hold_seconds` (well within
        its lease), hands it to the scheduler, due now."""
        lane = webhook.webhook_id
        self._held_waiting.add(delivery.delivery_id)
        try:
            turn = await self.lanes.wait_turn(lane, self.hold_seconds)
            self._held_waiting.discard(delivery.delivery_id)
            if turn:
                await self._attempt_claimed(delivery, self._hold_lease, webhook)
            else:
                self._hand_back(delivery.delivery_id)
        finally:
            self._held_waiting.discard(delivery.delivery_id)
            self._count_holds(-1)

    def _hand_back(self, delivery_id: str) -> None:
        self._handing_back.append(delivery_id)
        if not self._handing:
            self._handing = True
            self._spawn(self._hand_back_all())

    async def _hand_back_all(self) -> None:
        """Releases the held deliveries that had no turn, due now, for the scheduler of any
        replica: those timing out together share a write (many do, when a URL is too slow)."""
        try:
            await asyncio.sleep(0)
            while self._handing_back:
                ids = self._handing_back[:HAND_BACK_BATCH]
                del self._handing_back[:HAND_BACK_BATCH]
                try:
                    await self.store.release(ids, self._hold_lease, self.clock.now())
                except Exception as error:
                    # Their lease runs out and the scheduler takes them then.
                    log.warning(
                        "handing held deliveries back failed", count=len(ids), error=str(error)
                    )
            self.note_backlog()
        finally:
            self._handing = False

    def note_backlog(self) -> None:
        """Due deliveries may be waiting: look for them now and whenever an attempt ends."""
        self._backlog = True
        self._wake.set()

    # --- due deliveries ---

    async def run(self) -> None:
        """Claims due deliveries while there is room; sleeps until woken or the poll interval.
        Runs the outcomes' writer meanwhile."""
        self._spawn(self._outcomes.run())
        try:
            await run_passes(
                self._claim_round,
                lambda error: log.warning("claiming due deliveries failed", error=str(error)),
                poll_seconds=self.poll_seconds,
                wake=self._wake,
            )
        finally:
            await self.close()

    async def _claim_round(self) -> int:
        """Claims a batch of due deliveries (up to the lanes' room, `claim_batch` at once) and
        starts their attempts; each URL's webhook is read once per batch. Answers how many
        when more may be claimable at once, else 0: then the next batch is claimed when an
        attempt frees a slot (while a backlog is noted) or at the next poll."""
        if not self.lanes.has_room:
            return 0
        now = self.clock.now()
        lease_id = uuid.uuid4().hex
        limit = min(self.lanes.free, self.claim_batch)
        batch = await self.store.claim_batch(
            now,
            now + self._lease,
            lease_id,
            room=self.lanes.room,
            limit=limit,
            skip_webhooks=self.lanes.full_lanes(),
        )
        if not batch:
            self._backlog = False
            return 0
        webhooks = await self._webhooks_of(batch)
        for delivery in batch:
            if not self.lanes.try_take(delivery.webhook_id):
                # A first attempt took the slot meanwhile: hand it back, due now.
                await self.store.release([delivery.delivery_id], lease_id, now)
                continue
            webhook = webhooks.get(delivery.webhook_id)
            self._spawn(self._attempt_claimed(delivery, lease_id, webhook))
        # A short batch was held back by its lanes' room, perhaps: more may be due there.
        # Claiming again now would skip those lanes and take the backlog for empty.
        self._backlog = True
        return len(batch) if len(batch) == limit else 0

    async def _webhooks_of(self, batch: list[Delivery]) -> dict[str, Webhook | None]:
        ids = {delivery.webhook_id for delivery in batch}
        found = await asyncio.gather(*(self.webhooks.by_id(webhook_id) for webhook_id in ids))
        return dict(zip(ids, found, strict=True))

    async def _attempt_claimed(
        self,
        delivery: Delivery,
        lease_id: str,
        webhook: Webhook | None,
    ) -> None:
        """One attempt of a claimed delivery (its webhook None when it was removed); the
        outcome is written under the lease. A retry (its own task, no span current) runs in
        the trace of the event's consumption when the record names one; a redelivery asked for
        by a call, or a held delivery, stays in the trace that is current."""
        current = trace.get_current_span().get_span_context().is_valid
        with in_stored_trace(None if current else delivery.traceparent):
            await self._attempt(delivery, lease_id, webhook)

    async def _attempt(self, delivery: Delivery, lease_id: str, webhook: Webhook | None) -> None:
        """The attempt itself. The URL's slot is free again once the request ends (the lane
        bounds requests to the receiver, as for first attempts); the outcome is written after.
        A failure is logged and left to the lease running out."""
        try:
            try:
                change = await self._send(delivery, webhook)
            finally:
                self._release(delivery.webhook_id)
            await self._outcomes.write([(delivery.delivery_id, lease_id, change)])
        except asyncio.CancelledError:
            raise
        except Exception as error:
            # The lease runs out and another pass tries again.
            log.warning(
                "delivery attempt failed", delivery_id=delivery.delivery_id, error=str(error)
            )

    async def _send(self, delivery: Delivery, webhook: Webhook | None) -> Outcome:
        """The request and the outcome to store (failed at once when the webhook is gone)."""
        if webhook is None or webhook.organization_id != delivery.organization_id:
            return self._removed()
        result = await self.sender.attempt(
            webhook.url,
            delivery.delivery_id,
            delivery.event,
            delivery.body,
            webhook.signing_secret,
        )
        self._observe(result, first=delivery.attempts == 0, occurred_at=delivery.occurred_at)
        return outcome(
            result,
            attempts=delivery.attempts,
            retry_step=delivery.retry_step,
            test=delivery.test,
            schedule=self.schedule,
            now=self.clock.now(),
        )

    async def _finish_all(self, changes: list[tuple[str, str, Outcome]]) -> None:
        matched = await self.store.finish_many(changes)
        if matched < len(changes):
            log.warning("delivery leases were lost", lost=len(changes) - matched)

    def _removed(self) -> Outcome:
        now = self.clock.now()
        fields = {"status": Status.FAILED.value, "lastError": WEBHOOK_REMOVED, "updatedAt": now}
        return Outcome(fields, ("dueAt", "leaseId"))

    # --- the API's actions ---

    async def send_test(self, organization_id: str, webhook_id: str) -> Delivery:
        """Stores and attempts one test delivery; answers with its outcome when it comes
        within a few seconds, else with the pending record (the attempt goes on)."""
        webhook = await self.webhooks.get(organization_id, webhook_id)
        now = self.clock.now()
        new = NewDelivery(
            delivery_id=str(uuid.uuid4()),
            organization_id=organization_id,
            webhook_id=webhook_id,
            event_id=str(uuid.uuid4()),
            event=STORY,
            url=webhook.url,
            body=sample_payload(str(uuid.uuid4()), iso_utc(now)),
            occurred_at=now,
            test=True,
        )
        lease_id = uuid.uuid4().hex
        doc = new.document(now, self.store.retention) | {
            "dueAt": now + self._lease,
            "leaseId": lease_id,
        }
        await self.store.insert_new([doc])
        # A one-off the user asked for: it runs even when the lane is busy.
        self.lanes.try_take(webhook_id, force=True)
        task = self._spawn(self._attempt_claimed(Delivery.from_doc(doc), lease_id, webhook))
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(task), timeout=self.test_wait_seconds)
        return await self.store.get(organization_id, new.delivery_id)

    async def redeliver(self, organization_id: str, delivery_id: str) -> Delivery:
        current = await self.store.get(organization_id, delivery_id)
        webhook = await self.webhooks.by_id(current.webhook_id)
        if webhook is None or webhook.organization_id != organization_id:
            raise FailedPrecondition(
                f"delivery {delivery_id} went to a webhook that was removed; it cannot be "
                "delivered again"
            )
        delivery = await self.store.redeliver(organization_id, delivery_id, self.clock.now())
        self.note_backlog()
        return delivery

    # --- bookkeeping ---

    def _spawn(self, coro: Coroutine[Any, Any, None]) -> asyncio.Task[None]:
        return self._tasks.spawn(coro)

    def _release(self, webhook_id: str) -> None:
        self.lanes.release(webhook_id)
        # Only a slot that came free helps (one handed to a waiting first attempt does not).
        if self._backlog and self.lanes.room(webhook_id) > 0:
            self._wake.set()

    def _observe(self, result: AttemptResult, *, first: bool, occurred_at: datetime) -> None:
        self.metrics.attempts.labels(
            attempt_outcome(result.ok, result.status_code, result.error)
        ).inc()
        if first:
            lag = (self.clock.now() - occurred_at).total_seconds()
            self.metrics.first_attempt_lag.observe(max(0.0, lag))

    async def close(self) -> None:
        """Cancels attempts still running (their leases run out; others retry them) and hands
        the held deliveries that had no turn yet to the scheduler of any replica, due now."""
        waiting = [*self._held_waiting, *self._handing_back]
        await self._tasks.close()
        if not waiting:
            return
        try:
            async with asyncio.timeout(CLOSE_RELEASE_SECONDS):
                await self.store.release(waiting, self._hold_lease, self.clock.now())
        except Exception as error:
            log.warning("handing held deliveries back failed", error=str(error) or "timed out")

"""A driver's record of its attempt, kept on the post (guarded by the lease)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import KW_ONLY, field
from datetime import UTC, datetime, timedelta
from typing import Any

from publish_svc.drivers.base import Canceled, LeaseLost
from publish_svc.model import Status
from publish_svc.records import PostStore
from storypost_runtime.clock import Clock
from storypost_runtime.component import component

# How long after an irreversible call was sent the platform may still perform it (a request
# held in its queues, a slow answer): until then a look-up that finds nothing proves nothing.
ANSWER_GRACE = timedelta(minutes=5)
SENT_AT = "sentAt"


class TooLate(Exception):
    """The posting window ended before the irreversible step: never post late."""


class Unsettled(Exception):
    """Past the deadline while an earlier irreversible call may still be performed: nothing
    new may be sent, but the earlier call's outcome is not known yet. Look again later."""


@component
class StoredProgress:
    _: KW_ONLY
    store: PostStore
    record_id: str
    holder: str
    # What the attempt recorded so far: a copy of the stored progress that record() and
    # irreversible() keep up to date.
    recorded: Mapping[str, Any]
    clock: Clock
    deadline: datetime
    answer_grace: timedelta = ANSWER_GRACE
    _recorded: dict[str, Any] = field(init=False)

    def __post_init__(self) -> None:
        self._recorded = dict(self.recorded)
        self.recorded = self._recorded

    @property
    def sent_at(self) -> datetime | None:
        value = self._recorded.get(SENT_AT)
        if not isinstance(value, datetime):
            return None
        return value if value.tzinfo else value.replace(tzinfo=UTC)

    def unsettled(self) -> bool:
        sent = self.sent_at
        return sent is not None and self.clock.now() < sent + self.answer_grace

    async def record(self, **fields: Any) -> None:
        stored = await self.store.update_fields(
            self.record_id,
            {f"progress.{key}": value for key, value in fields.items()},
            holder=self.holder,
        )
        if not stored:
            raise LeaseLost(self.record_id)
        self._recorded.update(fields)

    async def irreversible(self, **fields: Any) -> None:
        # Past the deadline nothing new is sent; a driver resuming an earlier attempt asks the
        # platform what became of it first. When that found nothing, the earlier call may
        # still be on its way: fail only once it can no longer be performed.
        now = self.clock.now()
        if now > self.deadline:
            if self._recorded.get("irreversible") and self.unsettled():
                raise Unsettled(self.record_id)
            raise TooLate(self.record_id)
        fields = {**fields, SENT_AT: now}
        current = await self.store.mark_irreversible(self.record_id, self.holder, fields)
        if current is None:
            self._recorded.update(fields, irreversible=True)
            return
        if current.status is Status.CANCELED:
            raise Canceled(self.record_id)
        raise LeaseLost(self.record_id)

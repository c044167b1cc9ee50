"""A driver's record of its attempt, kept on the post (guarded by the lease)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from publish_svc.drivers.base import Canceled, LeaseLost
from publish_svc.model import Status
from publish_svc.records import PostStore
from storypost_runtime.clock import Clock

# How long after an irreversible call was sent the platform may still perform it (a request
# held in its queues, a slow answer): until then a look-up that finds nothing proves nothing.
ANSWER_GRACE = timedelta(minutes=5)
SENT_AT = "sentAt"


class TooLate(Exception):
    """The posting window ended before the irreversible step: never post late."""


class Unsettled(Exception):
    """Past the deadline while an earlier irreversible call may still be performed: nothing
    new may be sent, but the earlier call's outcome is not known yet. Look again later."""


class StoredProgress:
    def __init__(
        self,
        store: PostStore,
        record_id: str,
        owner: str,
        recorded: Mapping[str, Any],
        clock: Clock,
        deadline: datetime,
        answer_grace: timedelta = ANSWER_GRACE,
    ) -> None:
        self._store = store
        self._id = record_id
        self._owner = owner
        self._recorded = dict(recorded)
        self._clock = clock
        self._deadline = deadline
        self._grace = answer_grace

    @property
    def recorded(self) -> Mapping[str, Any]:
        return self._recorded

    @property
    def sent_at(self) -> datetime | None:
        value = self._recorded.get(SENT_AT)
        if not isinstance(value, datetime):
            return None
        return value if value.tzinfo else value.replace(tzinfo=UTC)

    def unsettled(self) -> bool:
        sent = self.sent_at
        return sent is not None and self._clock.now() < sent + self._grace

    async def record(self, **fields: Any) -> None:
        stored = await self._store.update_fields(
            self._id, {f"progress.{key}": value for key, value in fields.items()}, owner=self._owner
        )
        if not stored:
            raise LeaseLost(self._id)
        self._recorded.update(fields)

    async def irreversible(self, **fields: Any) -> None:
        # Past the deadline nothing new is sent; a driver resuming an earlier attempt asks the
        # platform what became of it first. When that found nothing, the earlier call may
        # still be on its way: fail only once it can no longer be performed.
        now = self._clock.now()
        if now > self._deadline:
            if self._recorded.get("irreversible") and self.unsettled():
                raise Unsettled(self._id)
            raise TooLate(self._id)
        fields = {**fields, SENT_AT: now}
        current = await self._store.mark_irreversible(self._id, self._owner, fields)
        if current is None:
            self._recorded.update(fields, irreversible=True)
            return
        if current.status is Status.CANCELED:
            raise Canceled(self._id)
        raise LeaseLost(self._id)

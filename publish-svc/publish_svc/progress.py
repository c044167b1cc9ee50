"""A driver's record of its attempt, kept on the post (guarded by the lease)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from publish_svc.drivers.base import Canceled, LeaseLost
from publish_svc.model import Status
from publish_svc.store import PostStore
from storypost_runtime.clock import Clock


class TooLate(Exception):
    """The posting window ended before the irreversible step: never post late."""


class StoredProgress:
    def __init__(
        self,
        store: PostStore,
        record_id: str,
        owner: str,
        recorded: Mapping[str, Any],
        clock: Clock,
        deadline: datetime,
    ) -> None:
        self._store = store
        self._id = record_id
        self._owner = owner
        self._recorded = dict(recorded)
        self._clock = clock
        self._deadline = deadline

    @property
    def recorded(self) -> Mapping[str, Any]:
        return self._recorded

    async def record(self, **fields: Any) -> None:
        stored = await self._store.update_fields(
            self._id, {f"progress.{key}": value for key, value in fields.items()}, owner=self._owner
        )
        if not stored:
            raise LeaseLost(self._id)
        self._recorded.update(fields)

    async def irreversible(self, **fields: Any) -> None:
        # Past the deadline nothing new is sent; a driver resuming an earlier attempt asks the
        # platform what became of it first, without calling this.
        if self._clock.now() > self._deadline:
            raise TooLate(self._id)
        current = await self._store.mark_irreversible(self._id, self._owner, fields)
        if current is None:
            self._recorded.update(fields, irreversible=True)
            return
        if current.status is Status.CANCELED:
            raise Canceled(self._id)
        raise LeaseLost(self._id)

"""A rolling-window quota: at most `limit` reservations per key in any `window`, on MongoDB.

One document per key keeps the times of its latest `limit` reservations, sorted. Reserving is
one conditional update: it matches only while there is room (fewer than `limit` times, or the
oldest of them is out of the window) and the holder has none yet, and pushes the new time
(keeping the newest `limit`). MongoDB applies it atomically, so replicas racing for the last
slot cannot both win, and twin calls for one holder take one slot. Releasing pulls the holder's
time (a reservation whose work was not stored after all).

When the update matches nothing, its upsert meets the key's document (a duplicate `_id`): the
document then says which case it was. The holder is there (a twin won): reserved. There is
room: the document was created by a racer after this update looked, so it runs again. Else
the quota is full until the oldest time leaves the window.

(render-svc kept one document per slot before; this algorithm is the one that also makes
twin calls take one slot, and costs one round trip.)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import KW_ONLY, dataclass
from datetime import datetime, timedelta
from typing import Any

from pymongo.asynchronous.collection import AsyncCollection
from pymongo.errors import DuplicateKeyError

from storypost_runtime.component import component
from storypost_runtime.mongo import Document

SLOTS_FIELD = "slots"
# A reservation's time, and its holder (the name predates render-svc's use: story quotas are
# stored with it).
TIME_FIELD = "t"
HOLDER_FIELD = "post"
# Each lost race means another reservation landed: a few rounds settle any race.
_ROUNDS = 4


@dataclass(frozen=True)
class QuotaDecision:
    allowed: bool
    # When a slot frees up (refused reservations only).
    retry_at: datetime | None = None


@component
class RollingQuota:
    _: KW_ONLY
    slots: AsyncCollection[Document]
    limit: int
    window: timedelta
    # A field that repeats the key in the document, for a collection indexed by it.
    key_field: str | None = None

    async def reserve(self, key: str, holder: str, now: datetime) -> QuotaDecision:
        """Takes a slot for `holder` at `now` (a repeat for the same holder is a no-op)."""
        times: list[Mapping[str, Any]] = []
        for _ in range(_ROUNDS):
            try:
                await self.slots.update_one(
                    self._room(key, holder, now), self._push(key, holder, now), upsert=True
                )
            except DuplicateKeyError:
                doc = await self.slots.find_one({"_id": key}) or {}
                times = list(doc.get(SLOTS_FIELD) or [])
                if any(slot[HOLDER_FIELD] == holder for slot in times):
                    return QuotaDecision(True)
                if self._has_room(times, now):
                    continue  # the document was created (or a slot freed) meanwhile
                return QuotaDecision(False, self._frees_at(times, now))
            return QuotaDecision(True)
        return QuotaDecision(False, self._frees_at(times, now))

    async def release(self, key: str, holder: str) -> None:
        await self.slots.update_one({"_id": key}, {"$pull": {SLOTS_FIELD: {HOLDER_FIELD: holder}}})

    def _room(self, key: str, holder: str, now: datetime) -> dict[str, Any]:
        return {
            "_id": key,
            # A twin call for the same holder must not take a second slot.
            f"{SLOTS_FIELD}.{HOLDER_FIELD}": {"$ne": holder},
            "$or": [
                {f"{SLOTS_FIELD}.{self.limit - 1}": {"$exists": False}},
                {f"{SLOTS_FIELD}.0.{TIME_FIELD}": {"$lte": now - self.window}},
            ],
        }

    def _push(self, key: str, holder: str, now: datetime) -> dict[str, Any]:
        update: dict[str, Any] = {
            "$push": {
                SLOTS_FIELD: {
                    "$each": [{TIME_FIELD: now, HOLDER_FIELD: holder}],
                    "$sort": {TIME_FIELD: 1},
                    "$slice": -self.limit,
                }
            }
        }
        if self.key_field:
            update["$setOnInsert"] = {self.key_field: key}
        return update

    def _has_room(self, times: list[Mapping[str, Any]], now: datetime) -> bool:
        return len(times) < self.limit or times[0][TIME_FIELD] <= now - self.window

    def _frees_at(self, times: list[Mapping[str, Any]], now: datetime) -> datetime:
        oldest: datetime = times[0][TIME_FIELD] if times else now
        return oldest + self.window

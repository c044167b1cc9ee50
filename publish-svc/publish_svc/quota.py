"""The story quota: 100 story posts per photoapp account in any rolling 24 hours.

One document per platform account keeps the times of its latest N reservations, sorted; a
reservation is one conditional update (room left, or the oldest of the N is over a day old),
so the quota holds when schedules race. Reserving twice for one post is a no-op; a post that
is not stored after all (its design was refused) gives its slot back.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from pymongo.asynchronous.collection import AsyncCollection
from pymongo.errors import DuplicateKeyError

from storypost_runtime.component import component
from storypost_runtime.mongo import Document

WINDOW = timedelta(hours=24)


@dataclass(frozen=True)
class QuotaDecision:
    allowed: bool
    # When a slot frees up (refused reservations only).
    retry_at: datetime | None = None


@component
class StoryQuota:
    slots: AsyncCollection[Document]
    per_day: int

    async def reserve(self, key: str, post: str, now: datetime) -> QuotaDecision:
        if await self.slots.count_documents({"_id": key, "slots.post": post}, limit=1):
            return QuotaDecision(True)
        last = self.per_day - 1
        try:
            await self.slots.update_one(
                {
                    "_id": key,
                    # A twin call for the same post must not take a second slot.
                    "slots.post": {"$ne": post},
                    "$or": [
                        {f"slots.{last}": {"$exists": False}},
                        {"slots.0.t": {"$lte": now - WINDOW}},
                    ],
                },
                {
                    "$push": {
                        "slots": {
                            "$each": [{"t": now, "post": post}],
                            "$sort": {"t": 1},
                            "$slice": -self.per_day,
                        }
                    }
                },
                upsert=True,
            )
        except DuplicateKeyError:
            doc = await self.slots.find_one({"_id": key})
            if doc and any(slot["post"] == post for slot in doc.get("slots", [])):
                return QuotaDecision(True)
            oldest: datetime = doc["slots"][0]["t"] if doc and doc.get("slots") else now
            return QuotaDecision(False, oldest + WINDOW)
        return QuotaDecision(True)

    async def release(self, key: str, post: str) -> None:
        await self.slots.update_one({"_id": key}, {"$pull": {"slots": {"post": post}}})

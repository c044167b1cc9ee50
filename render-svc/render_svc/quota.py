"""The draft quota: at most N drafts per organization in any rolling window, as N slots.

Each organization has at most N slot documents. Creating a draft takes a slot whose
`takenAt` is older than the window (one atomic find_one_and_update) or inserts a new slot
while fewer than N exist (a unique index on (organizationId, slot) lets only one racer win
each number). A slot stays taken for the whole window whatever happens to its draft, so
deleted drafts count; a create that fails gives its slot back. No transaction is needed,
and concurrent creates can never hold more than N slots.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from pymongo import ASCENDING, ReturnDocument
from pymongo.asynchronous.collection import AsyncCollection
from pymongo.errors import DuplicateKeyError

from storypost_runtime.clock import Clock
from storypost_runtime.component import component
from storypost_runtime.errors import ResourceExhausted
from storypost_runtime.mongo import Document

# A released slot is free at once: its time is long before any window.
RELEASED = datetime(1970, 1, 1, tzinfo=UTC)
QUOTA_REASON = "QUOTA_EXCEEDED"


@dataclass(frozen=True)
class Slot:
    slot_id: str
    taken_at: datetime
    draft_uuid: str


@component
class DraftQuota:
    slots: AsyncCollection[Document]
    clock: Clock
    limit: int
    window: timedelta

    async def reserve(self, organization_id: str, draft_uuid: str) -> Slot:
        """Takes a slot or raises RESOURCE_EXHAUSTED with the seconds until one frees up."""
        now = self.clock.now()
        # Every failed insert means another slot now exists, so this ends within limit + 1.
        for _ in range(self.limit + 2):
            # Any free slot will do (its time is out of the window, or it was released), so
            # no sort: with one, mongoeco (the development stand-in) picks the document by
            # reading every slot of every organization, 25 ms at 842 slots against 2.5 ms.
            reused = await self.slots.find_one_and_update(
                {"organizationId": organization_id, "takenAt": {"$lte": now - self.window}},
                {"$set": {"takenAt": now, "draftUuid": draft_uuid}},
                return_document=ReturnDocument.AFTER,
            )
            if reused is not None:
                return Slot(reused["_id"], now, draft_uuid)
            used = await self.slots.count_documents({"organizationId": organization_id})
            if used >= self.limit:
                raise await self._exceeded(organization_id, now)
            slot_id = f"{organization_id}:{used}"
            try:
                await self.slots.insert_one(
                    {
                        "_id": slot_id,
                        "organizationId": organization_id,
                        "slot": used,
                        "takenAt": now,
                        "draftUuid": draft_uuid,
                    }
                )
            except DuplicateKeyError:
                continue
            return Slot(slot_id, now, draft_uuid)
        raise ResourceExhausted("the draft quota is busy; retry", retry_after_seconds=1)

    async def release(self, slot: Slot) -> None:
        """Gives a slot back (its create failed or lost a race); only if it is still ours."""
        await self.slots.update_one(
            {"_id": slot.slot_id, "takenAt": slot.taken_at, "draftUuid": slot.draft_uuid},
            {"$set": {"takenAt": RELEASED}},
        )

    async def _exceeded(self, organization_id: str, now: datetime) -> ResourceExhausted:
        oldest = await self.slots.find_one(
            {"organizationId": organization_id}, sort=[("takenAt", ASCENDING)]
        )
        wait = (oldest["takenAt"] + self.window - now).total_seconds() if oldest else 60.0
        wait = max(1.0, wait)
        window_hours = self.window.total_seconds() / 3600
        return ResourceExhausted(
            f"draft quota exceeded: at most {self.limit} drafts per organization in any "
            f"rolling {window_hours:g} hours (deleted drafts count); the next draft can be "
            f"created in {int(wait)} s",
            retry_after_seconds=wait,
            reason=QUOTA_REASON,
        )

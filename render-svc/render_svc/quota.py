"""The draft quota: at most N drafts per organization in any rolling window.

runtime's rolling quota keyed by the organization (storypost_runtime.quota), so concurrent
creates can never hold more than N slots. A slot stays taken for the whole window whatever
happens to its draft, so deleted drafts count; a create that fails gives its slot back. Each
create takes a slot of its own (a create that loses a race with its twin gives its slot back
once it finds the twin's draft), so a slot's holder is the draft and a token of the call.
"""

from __future__ import annotations

import secrets
from dataclasses import KW_ONLY, dataclass, field
from datetime import datetime, timedelta

from pymongo.asynchronous.collection import AsyncCollection

from storypost_runtime.clock import Clock
from storypost_runtime.component import component
from storypost_runtime.errors import ResourceExhausted
from storypost_runtime.mongo import Document
from storypost_runtime.quota import (
    HOLDER_FIELD,
    SLOTS_FIELD,
    TIME_FIELD,
    QuotaDecision,
    RollingQuota,
)

QUOTA_REASON = "QUOTA_EXCEEDED"
# The collection's documents repeat their organization (it is indexed by it).
KEY_FIELD = "organizationId"


@dataclass(frozen=True)
class Slot:
    organization_id: str
    holder: str


@component
class DraftQuota:
    _: KW_ONLY
    slots: AsyncCollection[Document]
    clock: Clock
    limit: int
    window: timedelta
    _quota: RollingQuota = field(init=False)

    def __post_init__(self) -> None:
        self._quota = RollingQuota(
            slots=self.slots, limit=self.limit, window=self.window, key_field=KEY_FIELD
        )

    async def reserve(self, organization_id: str, draft_uuid: str) -> Slot:
        """Takes a slot or raises RESOURCE_EXHAUSTED with the seconds until one frees up."""
        now = self.clock.now()
        holder = f"{draft_uuid}:{secrets.token_hex(8)}"
        decision = await self._quota.reserve(organization_id, holder, now)
        if not decision.allowed:
            raise self._exceeded(decision, now)
        return Slot(organization_id, holder)

    async def release(self, slot: Slot) -> None:
        """Gives a slot back (its create failed or lost a race)."""
        await self._quota.release(slot.organization_id, slot.holder)

    def _exceeded(self, decision: QuotaDecision, now: datetime) -> ResourceExhausted:
        wait = (decision.retry_at - now).total_seconds() if decision.retry_at else 60.0
        wait = max(1.0, wait)
        window_hours = self.window.total_seconds() / 3600
        return ResourceExhausted(
            f"draft quota exceeded: at most {self.limit} drafts per organization in any "
            f"rolling {window_hours:g} hours (deleted drafts count); the next draft can be "
            f"created in {int(wait)} s",
            retry_after_seconds=wait,
            reason=QUOTA_REASON,
        )


async def fold_slot_documents(slots: AsyncCollection[Document]) -> int:
    """A migration step: the slot documents of the quota before runtime's (one document per
    slot: `organizationId`, `slot`, `takenAt`, `draftUuid`; a released slot's `takenAt` in
    1970) become their organization's one document, then go. Idempotent; returns how many
    slot documents it folded."""
    folded = 0
    batch: list[Document] = []
    cursor = slots.find({"slot": {"$exists": True}}).sort([("organizationId", 1), ("slot", 1)])
    async for doc in cursor:
        if batch and batch[0]["organizationId"] != doc["organizationId"]:
            folded += await _fold(slots, batch)
            batch = []
        batch.append(doc)
    if batch:
        folded += await _fold(slots, batch)
    return folded


async def _fold(slots: AsyncCollection[Document], docs: list[Document]) -> int:
    organization_id = docs[0]["organizationId"]
    current = await slots.find_one({"_id": organization_id}) or {}
    kept = {slot[HOLDER_FIELD]: slot for slot in current.get(SLOTS_FIELD, [])}
    for doc in docs:
        taken: datetime = doc["takenAt"]
        if taken.year > 1970:  # not released
            holder = f"{doc['draftUuid']}:{doc['_id']}"
            kept.setdefault(holder, {TIME_FIELD: taken, HOLDER_FIELD: holder})
    times = sorted(kept.values(), key=lambda slot: slot[TIME_FIELD])
    await slots.update_one(
        {"_id": organization_id},
        {"$set": {KEY_FIELD: organization_id, SLOTS_FIELD: times}},
        upsert=True,
    )
    await slots.delete_many({"_id": {"$in": [doc["_id"] for doc in docs]}})
    return len(docs)

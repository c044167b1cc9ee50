"""The `series` collection (one document per series) and the per-account count of active
series (`series_accounts`), whose conditional write keeps it at 10 under races."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from pymongo import ASCENDING, IndexModel, ReturnDocument
from pymongo.asynchronous.collection import AsyncCollection
from pymongo.errors import DuplicateKeyError

from publish_svc.model import Kind
from publish_svc.series_rules import MAX_ACTIVE_PER_ACCOUNT, RepeatRule
from storypost_runtime.bounded_set import BoundedSet
from storypost_runtime.component import component
from storypost_runtime.mongo import Document, ensure_indexes
from storypost_runtime.vocabulary import SeriesStatus

NEVER = datetime(1970, 1, 1, tzinfo=UTC)
# A reservation whose series was never stored (the call that made it died) counts this long.
ORPHAN_AFTER = timedelta(minutes=10)


def series_id(organization_id: str, series_uuid: str) -> str:
    return f"{organization_id}:{series_uuid}"


def account_key(organization_id: str, social_account_id: str) -> str:
    return f"{organization_id}:{social_account_id}"


@dataclass(frozen=True)
class SeriesRecord:
    """A stored series: what to post again, and where it stands."""

    organization_id: str
    series_uuid: str
    # The schedule call's own post (occurrence 0).
    first_uuid: str
    kind: Kind
    social_account_id: str
    # The account as the schedule call named it (username, clipapp account id, social
    # account id), and the social post type.
    target: str
    post_type: str
    # The kind's params as the schedule call gave them (post_params.params_doc).
    params: Document
    # The page: a URL rendered again for each occurrence, or the rendering every occurrence
    # reuses (an `html` design's first rendering).
    url: str
    rendering_id: str
    queue_name: str
    rule: RepeatRule
    first_date: datetime
    next_index: int
    next_date: datetime | None
    status: SeriesStatus
    # Occurrences that could not be created: index -> {date, error}.
    skipped: dict[str, Any]

    @classmethod
    def from_doc(cls, doc: Document) -> SeriesRecord:
        return cls(
            organization_id=doc["organizationId"],
            series_uuid=doc["seriesUuid"],
            first_uuid=doc["firstUuid"],
            kind=Kind(doc["kind"]),
            social_account_id=doc["socialAccountId"],
            target=doc["target"],
            post_type=doc.get("postType", ""),
            params=dict(doc["params"]),
            url=doc.get("url", ""),
            rendering_id=doc.get("renderingId", ""),
            queue_name=doc.get("queueName", ""),
            rule=RepeatRule.from_doc(doc["rule"]),
            first_date=doc["firstDate"],
            next_index=int(doc["nextIndex"]),
            next_date=doc.get("nextDate"),
            status=SeriesStatus(doc["status"]),
            skipped=dict(doc.get("skipped") or {}),
        )


@component
class SeriesStore:
    series: AsyncCollection[Document]
    accounts: AsyncCollection[Document]
    # Per account, its active series: {s: series uuid, at: when it was counted}.
    _active: BoundedSet = field(init=False)

    def __post_init__(self) -> None:
        self._active = BoundedSet(
            collection=self.accounts,
            array="series",
            limit=MAX_ACTIVE_PER_ACCOUNT,
            member_field="s",
        )

    async def ensure_indexes(self) -> None:
        await ensure_indexes(
            self.series,
            [
                # The worker's search: active series whose next occurrence is due to be made.
                IndexModel([("status", ASCENDING), ("createAt", ASCENDING)], name="status_create"),
            ],
        )

    async def get(self, organization_id: str, series_uuid: str) -> SeriesRecord | None:
        doc = await self.series.find_one({"_id": series_id(organization_id, series_uuid)})
        return SeriesRecord.from_doc(doc) if doc else None

    async def insert(self, doc: Document) -> bool:
        """Stores a new series; False when it is stored already (a repeated call)."""
        try:
            await self.series.insert_one(doc)
        except DuplicateKeyError:
            return False
        return True

    async def due(self, now: datetime, limit: int) -> list[SeriesRecord]:
        """Active series whose next occurrence is due to be created and that no worker holds."""
        cursor = (
            self.series.find(
                {
                    "status": SeriesStatus.ACTIVE.value,
                    "createAt": {"$lte": now},
                    "leaseUntil": {"$lte": now},
                }
            )
            .sort("createAt", ASCENDING)
            .limit(limit)
        )
        return [SeriesRecord.from_doc(doc) async for doc in cursor]

    async def next_create_at(self) -> datetime | None:
        doc = await self.series.find_one(
            {"status": SeriesStatus.ACTIVE.value}, {"createAt": 1}, sort=[("createAt", 1)]
        )
        return doc["createAt"] if doc else None

    async def lease(self, record: SeriesRecord, now: datetime, until: datetime) -> bool:
        """Takes the series' next occurrence for one worker (others skip it meanwhile)."""
        result = await self.series.update_one(
            {
                "_id": series_id(record.organization_id, record.series_uuid),
                "status": SeriesStatus.ACTIVE.value,
                "nextIndex": record.next_index,
                "leaseUntil": {"$lte": now},
            },
            {"$set": {"leaseUntil": until}},
        )
        return result.modified_count == 1

    async def advance(self, record: SeriesRecord, fields: Document) -> bool:
        """Moves the series past occurrence `next_index` (once: guarded by it, and by the
        series still being active); False when it moved or stopped meanwhile."""
        result = await self.series.update_one(
            {
                "_id": series_id(record.organization_id, record.series_uuid),
                "status": SeriesStatus.ACTIVE.value,
                "nextIndex": record.next_index,
            },
            {"$set": {**fields, "leaseUntil": NEVER}},
        )
        return result.modified_count == 1

    async def retry_at(self, record: SeriesRecord, when: datetime) -> None:
        await self.series.update_one(
            {
                "_id": series_id(record.organization_id, record.series_uuid),
                "nextIndex": record.next_index,
            },
            {"$set": {"createAt": when, "leaseUntil": NEVER}},
        )

    async def stop(
        self, organization_id: str, series_uuid: str, status: SeriesStatus, now: datetime
    ) -> SeriesRecord | None:
        """Sets an active series' final status; None when it was not active."""
        doc = await self.series.find_one_and_update(
            {
                "_id": series_id(organization_id, series_uuid),
                "status": SeriesStatus.ACTIVE.value,
            },
            {"$set": {"status": status.value, "stoppedAt": now, "updatedAt": now}},
            return_document=ReturnDocument.AFTER,
        )
        return SeriesRecord.from_doc(doc) if doc else None

    # -- the active series of an account ---------------------------------------------------

    async def reserve(
        self, organization_id: str, social_account_id: str, series_uuid: str, now: datetime
    ) -> bool:
        """Counts the series among the account's active ones; False when 10 are active
        (after dropping those that stopped). Of 11 racing calls exactly 10 get in; the same
        series again is counted once."""
        key = account_key(organization_id, social_account_id)
        for attempt in range(2):
            if await self._active.add(key, series_uuid, at=now):
                return True
            if attempt == 0 and not await self._prune(
                organization_id, key, await self._active.entries(key), now
            ):
                return False
        return False

    async def release(self, organization_id: str, social_account_id: str, series: str) -> None:
        await self._active.remove(account_key(organization_id, social_account_id), series)

    async def _prune(
        self, organization_id: str, key: str, held: list[Document], now: datetime
    ) -> bool:
        """Drops the entries of series that stopped, or were never stored (their call died);
        whether any was dropped."""
        ids = [series_id(organization_id, entry["s"]) for entry in held]
        cursor = self.series.find({"_id": {"$in": ids}}, {"status": 1, "seriesUuid": 1})
        status = {doc["seriesUuid"]: doc["status"] async for doc in cursor}
        gone = [
            entry["s"]
            for entry in held
            if (entry["s"] in status and status[entry["s"]] != SeriesStatus.ACTIVE.value)
            or (entry["s"] not in status and entry["at"] <= now - ORPHAN_AFTER)
        ]
        if gone:
            await self._active.remove(key, *gone)
        return bool(gone)

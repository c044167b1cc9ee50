"""Daily per-platform-account post limits: one counter per (platform account, UTC day), shared
by every organization posting to that account.

A counter is one document holding `count` and the keys (`<org>:<post uuid>`) that reserved
it. Reserving is one conditional upsert (`count < limit` and the key not yet there); when the
document exists but does not match, the upsert collides on `_id` (DuplicateKeyError) and a
read tells "already reserved" from "full". Retries never count twice.
"""

from __future__ import annotations

from dataclasses import KW_ONLY, dataclass
from datetime import UTC, date, datetime, timedelta

from pymongo import ReturnDocument
from pymongo.errors import DuplicateKeyError

from account_svc.connections.connected_accounts import (
    AccountRef,
    ConnectedAccount,
    ConnectedAccounts,
)
from account_svc.records import AccountCollections
from storypost_runtime.clock import Clock
from storypost_runtime.component import component
from storypost_runtime.errors import InvalidArgument
from storypost_runtime.mongo import Document

# Counters are kept a week after their day (or after now, for a day in the past), then
# MongoDB's TTL index removes them.
KEEP_AFTER_DAY = timedelta(days=8)


@dataclass(frozen=True)
class DailyReservation:
    reserved: bool
    day: str
    limit: int | None
    used: int
    already_reserved: bool
    account: ConnectedAccount


def post_key(organization_id: str, post_uuid: str) -> str:
    return f"{organization_id}:{post_uuid.strip().lower()}"


@component
class DailyLimits:
    _: KW_ONLY
    records: AccountCollections
    accounts: ConnectedAccounts
    clock: Clock

    async def reserve(
        self, organization_id: str, ref: AccountRef, post_uuid: str, post_date: datetime
    ) -> DailyReservation:
        day = _day(post_date)
        key = _checked_key(organization_id, post_uuid)
        account = await self.accounts.get(organization_id, ref)
        limit = account.platform.daily_limit
        if limit is None:
            return DailyReservation(True, day.isoformat(), None, 0, False, account)
        counter_id = _counter_id(account, day.isoformat())
        try:
            doc = await self.records.daily_post_counters.find_one_and_update(
                {"_id": counter_id, "count": {"$lt": limit}, "keys": {"$ne": key}},
                {
                    "$inc": {"count": 1},
                    "$push": {"keys": key},
                    "$setOnInsert": {
                        "platform": account.platform.key,
                        "platformAccountId": account.platform_account_id,
                        "day": day.isoformat(),
                        "purgeAt": max(
                            datetime.combine(day, datetime.min.time(), UTC), self.clock.now()
                        )
                        + KEEP_AFTER_DAY,
                    },
                },
                upsert=True,
                return_document=ReturnDocument.AFTER,
            )
        except DuplicateKeyError:
            current = await self.records.daily_post_counters.find_one({"_id": counter_id}) or {}
            already = key in (current.get("keys") or [])
            return DailyReservation(
                already, day.isoformat(), limit, int(current.get("count", 0)), already, account
            )
        assert doc is not None
        return DailyReservation(True, day.isoformat(), limit, int(doc["count"]), False, account)

    async def release(
        self, organization_id: str, ref: AccountRef, post_uuid: str, post_date: datetime
    ) -> DailyReservation:
        # A deleted account's reservations can still be given back.
        day = _day(post_date)
        key = _checked_key(organization_id, post_uuid)
        account = await self.accounts.get(organization_id, ref, live=False)
        limit = account.platform.daily_limit
        if limit is None:
            return DailyReservation(False, day.isoformat(), None, 0, False, account)
        counter_id = _counter_id(account, day.isoformat())
        doc: Document | None = await self.records.daily_post_counters.find_one_and_update(
            {"_id": counter_id, "keys": key},
            {"$inc": {"count": -1}, "$pull": {"keys": key}},
            return_document=ReturnDocument.AFTER,
        )
        if doc is None:
            doc = await self.records.daily_post_counters.find_one({"_id": counter_id}) or {}
        return DailyReservation(
            False, day.isoformat(), limit, int(doc.get("count", 0)), False, account
        )


def _day(post_date: datetime) -> date:
    if post_date.tzinfo is None:
        raise InvalidArgument("post_date must carry a time zone")
    return post_date.astimezone(UTC).date()


def _checked_key(organization_id: str, post_uuid: str) -> str:
    if not post_uuid.strip():
        raise InvalidArgument("post_uuid is required")
    return post_key(organization_id, post_uuid)


def _counter_id(account: ConnectedAccount, day: str) -> str:
    return f"{account.platform.key}:{account.platform_account_id}:{day}"

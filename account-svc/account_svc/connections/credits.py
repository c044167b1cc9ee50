"""Organization credit balances: read, set, and one credit taken per post, idempotently.

The balance is one document per organization. Taking a credit is one conditional update of
it (`balance > 0` and the post not among the last keys taken, which it then records), so
concurrent takes for one post count once. A `credit_consumptions` record per post remembers
it for good, beyond the bounded list of recent keys.
"""

from __future__ import annotations

import contextlib
from dataclasses import KW_ONLY, dataclass

from pymongo import ReturnDocument
from pymongo.errors import DuplicateKeyError

from account_svc.records import AccountCollections
from storypost_runtime.clock import Clock
from storypost_runtime.component import component
from storypost_runtime.errors import InvalidArgument, NotFound
from storypost_runtime.mongo import Document

# How many recent post keys the balance document keeps (covers a crash between the two
# writes of a take; older takes are found in credit_consumptions).
RECENT_KEYS = 1000


@dataclass(frozen=True)
class Consumption:
    consumed: bool
    already_consumed: bool
    balance: int


@component
class Credits:
    _: KW_ONLY
    records: AccountCollections
    clock: Clock
    default_credits: int

    async def get(self, organization_id: str) -> int:
        doc = await self.records.credit_balances.find_one({"_id": organization_id}, {"balance": 1})
        return int(doc["balance"]) if doc else self.default_credits

    async def set(self, organization_id: str, credits: int) -> int:
        if await self.records.organizations.count_documents({"_id": organization_id}, limit=1) == 0:
            raise NotFound(f"organization {organization_id} not found")
        now = self.clock.now()
        await self.records.credit_balances.update_one(
            {"_id": organization_id},
            {
                "$set": {"balance": int(credits), "updatedAt": now},
                "$setOnInsert": {"recentKeys": [], "createdAt": now},
            },
            upsert=True,
        )
        return int(credits)

    async def consume(self, organization_id: str, post_uuid: str) -> Consumption:
        key = post_uuid.strip().lower()
        if not key:
            raise InvalidArgument("post_uuid is required")
        consumption_id = f"{organization_id}:{key}"
        known = await self.records.credit_consumptions.find_one({"_id": consumption_id})
        if known is not None and known.get("state") == "applied":
            return Consumption(True, True, await self.get(organization_id))
        if known is None:
            # A concurrent take of the same post inserted it first; the balance update decides.
            with contextlib.suppress(DuplicateKeyError):
                await self.records.credit_consumptions.insert_one(
                    {
                        "_id": consumption_id,
                        "organizationId": organization_id,
                        "postUuid": key,
                        "state": "pending",
                        "createdAt": self.clock.now(),
                    }
                )
        for _ in range(2):
            doc: Document | None = await self.records.credit_balances.find_one_and_update(
                {"_id": organization_id, "balance": {"$gt": 0}, "recentKeys": {"$ne": key}},
                {
                    "$inc": {"balance": -1},
                    "$push": {"recentKeys": {"$each": [key], "$slice": -RECENT_KEYS}},
                    "$set": {"updatedAt": self.clock.now()},
                },
                return_document=ReturnDocument.AFTER,
            )
            if doc is not None:
                await self._mark_applied(consumption_id)
                return Consumption(True, False, int(doc["balance"]))
            current = await self.records.credit_balances.find_one({"_id": organization_id})
            if current is None:
                await self._open_balance(organization_id)
                continue
            balance = int(current["balance"])
            if key in (current.get("recentKeys") or []):
                await self._mark_applied(consumption_id)
                return Consumption(True, True, balance)
            # Not positive: nothing taken; a later take of this post may succeed.
            await self.records.credit_consumptions.delete_one(
                {"_id": consumption_id, "state": "pending"}
            )
            return Consumption(False, False, balance)
        raise AssertionError("the balance document exists after _open_balance")

    async def _open_balance(self, organization_id: str) -> None:
        now = self.clock.now()
        with contextlib.suppress(DuplicateKeyError):  # opened concurrently
            await self.records.credit_balances.insert_one(
                {
                    "_id": organization_id,
                    "balance": self.default_credits,
                    "recentKeys": [],
                    "createdAt": now,
                    "updatedAt": now,
                }
            )

    async def _mark_applied(self, consumption_id: str) -> None:
        await self.records.credit_consumptions.update_one(
            {"_id": consumption_id}, {"$set": {"state": "applied", "appliedAt": self.clock.now()}}
        )

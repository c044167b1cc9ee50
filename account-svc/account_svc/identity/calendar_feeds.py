"""Calendar feeds: secret, revocable URLs at which a workspace's posting plan is an iCalendar
feed (the edge serves it; docs/app.md "Calendar feed"). Like API tokens, a feed's token is
shown once and stored only as its SHA-256 hash; a revoked feed answers nothing from then on."""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field
from datetime import datetime

from pymongo import DESCENDING, ReturnDocument

from account_svc.identity.credentials import hash_token
from account_svc.records import AccountCollections
from storypost_runtime.bounded_set import BoundedSet
from storypost_runtime.clock import Clock
from storypost_runtime.component import component
from storypost_runtime.documents import from_document
from storypost_runtime.errors import FailedPrecondition, InvalidArgument, NotFound
from storypost_runtime.mongo import Document

FEED_PREFIX = "spcal_"  # a public prefix: tells a feed token from an API token in a leak scan
# Live feeds a workspace may keep (one per calendar app or person is plenty).
MAX_FEEDS = 20
NAME_MAX = 100


@dataclass(frozen=True)
class CalendarFeed:
    feed_id: str
    organization_id: str
    name: str
    created_at: datetime
    revoked_at: datetime | None = None

    @classmethod
    def from_doc(cls, doc: Document) -> CalendarFeed:
        return from_document(cls, doc, feed_id=doc["_id"])


@component
class CalendarFeeds:
    records: AccountCollections
    clock: Clock
    _live: BoundedSet = field(init=False)

    def __post_init__(self) -> None:
        self._live = BoundedSet(
            collection=self.records.calendar_feed_slots, array="feeds", limit=MAX_FEEDS
        )

    async def create(self, organization_id: str, name: str) -> tuple[CalendarFeed, str]:
        """A new feed and its token (shown once: only its hash is kept)."""
        name = name.strip() or "Calendar"
        if len(name) > NAME_MAX:
            raise InvalidArgument(
                f"a feed's name is at most {NAME_MAX} characters",
                field_violations={"name": [f"longer than {NAME_MAX} characters"]},
            )
        feed_id = secrets.token_hex(12)
        # The feed takes its place among the live ones first (one conditional write: of
        # racing creations only those that fit get in), then is stored.
        if not await self._live.add(organization_id, feed_id):
            raise FailedPrecondition(
                f"this workspace has {MAX_FEEDS} calendar feeds: revoke one first"
            )
        token = FEED_PREFIX + secrets.token_urlsafe(32)
        doc: Document = {
            "_id": feed_id,
            "organizationId": organization_id,
            "name": name,
            "tokenHash": hash_token(token),
            "createdAt": self.clock.now(),
            "revokedAt": None,
        }
        try:
            await self.records.calendar_feeds.insert_one(doc)
        except BaseException:
            await self._live.remove(organization_id, feed_id)
            raise
        return CalendarFeed.from_doc(doc), token

    async def count_live_feeds(self) -> None:
        """Migration step: the live feeds stored before `calendar_feed_slots` existed."""
        async for doc in self.records.calendar_feeds.find(
            {"revokedAt": None}, {"organizationId": 1}
        ):
            await self.records.calendar_feed_slots.update_one(
                {"_id": doc["organizationId"]}, {"$addToSet": {"feeds": doc["_id"]}}, upsert=True
            )

    async def list(self, organization_id: str) -> list[CalendarFeed]:
        cursor = self.records.calendar_feeds.find(
            {"organizationId": organization_id}, {"tokenHash": 0}
        ).sort("createdAt", DESCENDING)
        return [CalendarFeed.from_doc(doc) async for doc in cursor]

    async def revoke(self, organization_id: str, feed_id: str) -> CalendarFeed:
        """Revokes a feed (again: the same answer)."""
        doc = await self.records.calendar_feeds.find_one_and_update(
            {"_id": feed_id, "organizationId": organization_id, "revokedAt": None},
            {"$set": {"revokedAt": self.clock.now()}},
            projection={"tokenHash": 0},
            return_document=ReturnDocument.AFTER,
        )
        if doc is None:
            doc = await self.records.calendar_feeds.find_one(
                {"_id": feed_id, "organizationId": organization_id}, {"tokenHash": 0}
            )
        if doc is None:
            raise NotFound(f"no calendar feed {feed_id} in this workspace")
        # After the revocation (again on a repeat: a crash in between left it counted).
        await self._live.remove(organization_id, feed_id)
        return CalendarFeed.from_doc(doc)

    async def resolve(self, token: str) -> CalendarFeed:
        """The live feed a token opens; NotFound for anything else (unknown or revoked alike,
        so a probe learns nothing)."""
        if not token.startswith(FEED_PREFIX) or len(token) > 100:
            raise NotFound("no such calendar feed")
        doc = await self.records.calendar_feeds.find_one(
            {"tokenHash": hash_token(token), "revokedAt": None}, {"tokenHash": 0}
        )
        if doc is None:
            raise NotFound("no such calendar feed")
        return CalendarFeed.from_doc(doc)

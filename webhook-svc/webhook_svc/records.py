"""The collections webhook-svc owns and their indexes."""

from __future__ import annotations

from dataclasses import dataclass

from pymongo import ASCENDING, DESCENDING, IndexModel
from pymongo.asynchronous.collection import AsyncCollection
from pymongo.asynchronous.database import AsyncDatabase

from storypost_runtime.mongo import Document, drop_indexes, ensure_indexes

# Indexes of earlier versions, dropped once the compound ones exist: unique keys on the
# joined strings `slotKey` ("<organizationId>/<slot>") and `urlKey` ("<organizationId> <url>"),
# and one on `organizationId` that the compound indexes now serve. New records carry no
# joined key, so a unique index on one would see them all as null and refuse the second.
RETIRED_WEBHOOK_INDEXES = ("slot_key", "url_key", "organization")


@dataclass(frozen=True)
class WebhookCollections:
    webhooks: AsyncCollection[Document]
    deliveries: AsyncCollection[Document]

    @classmethod
    def of(cls, db: AsyncDatabase[Document]) -> WebhookCollections:
        return cls(webhooks=db["webhooks"], deliveries=db["webhook_deliveries"])

    async def ensure_indexes(self) -> None:
        await ensure_indexes(
            self.webhooks,
            [
                # Slot 0..4 once per organization: at most 5 URLs, also under racing adds.
                # Its prefix serves every query by organization.
                IndexModel(
                    [("organizationId", ASCENDING), ("slot", ASCENDING)],
                    unique=True,
                    name="organization_slot",
                ),
                # A URL once per organization.
                IndexModel(
                    [("organizationId", ASCENDING), ("url", ASCENDING)],
                    unique=True,
                    name="organization_url",
                ),
            ],
        )
        # Records written with the joined keys hold the real fields too, so the compound
        # indexes above already cover them; the old indexes only go now.
        await drop_indexes(self.webhooks, RETIRED_WEBHOOK_INDEXES)
        # A delivery's _id is derived from (eventId, webhookId) (deliveries.delivery_uuid), so
        # _id's uniqueness is the unique (eventId, webhookId) rule.
        await ensure_indexes(
            self.deliveries,
            [
                # Only pending deliveries carry dueAt: the due scan never touches finished ones.
                IndexModel([("dueAt", ASCENDING)], name="due_at"),
                IndexModel(
                    [("organizationId", ASCENDING), ("createdAt", DESCENDING)],
                    name="organization_created",
                ),
                IndexModel([("expireAt", ASCENDING)], expireAfterSeconds=0, name="expire_at"),
            ],
        )

"""The collections webhook-svc owns and their indexes."""

from __future__ import annotations

from dataclasses import dataclass

from pymongo import ASCENDING, DESCENDING, IndexModel
from pymongo.asynchronous.collection import AsyncCollection
from pymongo.asynchronous.database import AsyncDatabase

from storypost_runtime.mongo import Document, ensure_indexes


@dataclass(frozen=True)
class WebhookCollections:
    webhooks: AsyncCollection[Document]
    deliveries: AsyncCollection[Document]

    @classmethod
    def of(cls, db: AsyncDatabase[Document]) -> WebhookCollections:
        return cls(webhooks=db["webhooks"], deliveries=db["webhook_deliveries"])

    async def ensure_indexes(self) -> None:
        # Single-field unique keys rather than compound ones: the embedded MongoDB (mongoeco)
        # checks a compound unique index by scanning the whole collection on every insert.
        await ensure_indexes(
            self.webhooks,
            [
                # "<organizationId>/<slot>", slot 0..4: at most 5 URLs, also under racing adds.
                IndexModel([("slotKey", ASCENDING)], unique=True, name="slot_key"),
                # "<organizationId> <url>": a URL once per organization.
                IndexModel([("urlKey", ASCENDING)], unique=True, name="url_key"),
                IndexModel([("organizationId", ASCENDING)], name="organization"),
            ],
        )
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

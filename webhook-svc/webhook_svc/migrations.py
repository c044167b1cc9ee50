"""webhook-svc's schema (storypost_runtime.migrations): its indexes, declared in
WebhookCollections.ensure_indexes; no data steps yet (a new one takes the next number)."""

from __future__ import annotations

from pymongo.asynchronous.database import AsyncDatabase

from storypost_runtime.migrations import Plan
from storypost_runtime.mongo import Document
from webhook_svc.records import WebhookCollections

SERVICE = "webhook-svc"


def plan(db: AsyncDatabase[Document]) -> Plan:
    return Plan(SERVICE, db, WebhookCollections.of(db).ensure_indexes)

"""account-svc's schema (storypost_runtime.migrations): its indexes, declared in
AccountCollections.ensure_indexes; no data steps yet (a new one takes the next number)."""

from __future__ import annotations

from pymongo.asynchronous.database import AsyncDatabase

from account_svc.records import AccountCollections
from storypost_runtime.migrations import Plan
from storypost_runtime.mongo import Document

SERVICE = "account-svc"


def plan(db: AsyncDatabase[Document]) -> Plan:
    return Plan(SERVICE, db, AccountCollections.of(db).ensure_indexes)

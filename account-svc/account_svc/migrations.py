"""account-svc's schema (storypost_runtime.migrations): its indexes, declared in
AccountCollections.ensure_indexes, and its numbered steps (a new one takes the next number)."""

from __future__ import annotations

from pymongo.asynchronous.database import AsyncDatabase

from account_svc.identity.calendar_feeds import CalendarFeeds
from account_svc.records import AccountCollections
from storypost_runtime.clock import SystemClock
from storypost_runtime.migrations import Plan, Step
from storypost_runtime.mongo import Document

SERVICE = "account-svc"


def plan(db: AsyncDatabase[Document]) -> Plan:
    records = AccountCollections.of(db)
    feeds = CalendarFeeds(records, SystemClock())
    return Plan(
        SERVICE,
        db,
        records.ensure_indexes,
        [Step(1, "calendar_feed_slots", feeds.count_live_feeds)],
    )

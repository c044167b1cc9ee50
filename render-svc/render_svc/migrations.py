"""render-svc's schema (storypost_runtime.migrations): its indexes, declared in
RenderCollections.ensure_indexes, and its numbered steps (a new one takes the next number)."""

from __future__ import annotations

from pymongo.asynchronous.database import AsyncDatabase

from render_svc.quota import fold_slot_documents
from render_svc.records import RenderCollections
from storypost_runtime.migrations import Plan, Step
from storypost_runtime.mongo import Document

SERVICE = "render-svc"


def plan(db: AsyncDatabase[Document]) -> Plan:
    records = RenderCollections.of(db)

    async def one_quota_document_per_organization() -> None:
        await fold_slot_documents(records.draft_quota)

    return Plan(
        SERVICE,
        db,
        records.ensure_indexes,
        [
            Step(
                1,
                "draft_quota_slots.one_document_per_organization",
                one_quota_document_per_organization,
            )
        ],
    )

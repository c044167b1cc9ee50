"""Organizations: the tenants every record belongs to."""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from datetime import datetime

from account_svc.records import AccountCollections
from storypost_runtime.clock import Clock
from storypost_runtime.component import component
from storypost_runtime.errors import InvalidArgument, NotFound
from storypost_runtime.mongo import Document


@dataclass(frozen=True)
class Organization:
    organization_id: str
    name: str
    created_at: datetime

    @classmethod
    def from_doc(cls, doc: Document) -> Organization:
        return cls(doc["_id"], doc["name"], doc["createdAt"])


def new_organization_id() -> str:
    # 96 random bits: ids appear in URLs, so they must not be guessable in sequence.
    return secrets.token_hex(12)


@component
class Organizations:
    records: AccountCollections
    clock: Clock

    async def create(self, name: str) -> Organization:
        name = name.strip()
        if not 1 <= len(name) <= 200:
            raise InvalidArgument("organization name must be 1 to 200 characters")
        org = Organization(new_organization_id(), name, self.clock.now())
        await self.records.organizations.insert_one(
            {"_id": org.organization_id, "name": org.name, "createdAt": org.created_at}
        )
        return org

    async def get(self, organization_id: str) -> Organization:
        doc = await self.records.organizations.find_one({"_id": organization_id})
        if doc is None:
            raise NotFound(f"organization {organization_id} not found")
        return Organization.from_doc(doc)

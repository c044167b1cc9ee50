"""Connect links: unguessable URLs through which an account owner connects a photoapp account.

At most 100 per organization, also under concurrent creates: each link takes one of the
slots 0..99 that is still free, and a unique (organizationId, slot) index lets only one
create win a slot; the loser looks again. Idempotent on (organizationId, uuid).
"""

from __future__ import annotations

import hashlib
import secrets
import uuid
from dataclasses import KW_ONLY, dataclass
from datetime import datetime
from typing import Literal

from pymongo import DESCENDING, ReturnDocument
from pymongo.asynchronous.collection import AsyncCollection
from pymongo.errors import DuplicateKeyError

from account_svc.connections.token_crypto import TokenCipher
from account_svc.records import AccountCollections
from storypost_runtime.clock import Clock
from storypost_runtime.component import component
from storypost_runtime.errors import FailedPrecondition, InvalidArgument, NotFound, Unavailable
from storypost_runtime.mongo import Document

LINK_LIMIT = 100
DESCRIPTION_MAX = 500
LIMIT_REASON = "CONNECT_LINK_LIMIT"
USED_REASON = "CONNECT_LINK_USED"
Status = Literal["active", "used"]


@dataclass(frozen=True)
class ConnectLink:
    link_id: str
    connect_link_uuid: str
    organization_id: str
    token: str
    description: str
    status: Status
    created_at: datetime
    used_at: datetime | None
    social_account_id: str
    connected_username: str


def hash_link_token(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def looks_like_link_token(token: str) -> bool:
    # secrets.token_urlsafe(32): 43 URL-safe characters.
    return len(token) == 43 and all(c.isalnum() or c in "-_" for c in token) and token.isascii()


def canonical_uuid(value: str) -> str:
    try:
        return str(uuid.UUID(value.strip()))
    except ValueError:
        raise InvalidArgument(
            "connectLinkUuid must be a UUID",
            field_violations={"connectLinkUuid": ["not a valid uuid"]},
        ) from None


@component
class ConnectLinks:
    _: KW_ONLY
    records: AccountCollections
    clock: Clock
    cipher: TokenCipher

    @property
    def _links(self) -> AsyncCollection[Document]:
        return self.records.connect_links

    async def _stored(self, organization_id: str, link_uuid: str) -> ConnectLink | None:
        """The link this organization created with this UUID, if any."""
        doc = await self._links.find_one({"organizationId": organization_id, "uuid": link_uuid})
        return None if doc is None else self._from_doc(doc)

    def _from_doc(self, doc: Document) -> ConnectLink:
        return ConnectLink(
            link_id=doc["_id"],
            connect_link_uuid=doc["uuid"],
            organization_id=doc["organizationId"],
            token=self.cipher.decrypt(doc["tokenEncrypted"]) or "",
            description=doc.get("description") or "",
            status=doc["status"],
            created_at=doc["createdAt"],
            used_at=doc.get("usedAt"),
            social_account_id=doc.get("socialAccountId") or "",
            connected_username=doc.get("connectedUsername") or "",
        )

    async def create(self, organization_id: str, link_uuid: str, description: str) -> ConnectLink:
        link_uuid = canonical_uuid(link_uuid)
        if len(description) > DESCRIPTION_MAX:
            raise InvalidArgument(
                f"description must be at most {DESCRIPTION_MAX} characters",
                field_violations={
                    "description": [
                        f"must be at most {DESCRIPTION_MAX} characters long "
                        f"(got {len(description)})"
                    ]
                },
            )
        # Each lost race on a slot means another link took it: at most LIMIT retries. One read
        # of the organization's links answers both questions, whether this UUID made one
        # already and which slots are free (a create is two database calls, not three).
        for _ in range(LINK_LIMIT + 10):
            links = await self._links.find(
                {"organizationId": organization_id}, {"slot": 1, "uuid": 1}
            ).to_list()
            if any(link["uuid"] == link_uuid for link in links):
                existing = await self._stored(organization_id, link_uuid)
                if existing is not None:
                    return existing
            taken = {link["slot"] for link in links}
            free = [slot for slot in range(LINK_LIMIT) if slot not in taken]
            if not free:
                raise FailedPrecondition(
                    f"an organization can have at most {LINK_LIMIT} connect links and this one "
                    f"has {len(taken)}; no link was created",
                    reason=LIMIT_REASON,
                )
            token = secrets.token_urlsafe(32)
            doc: Document = {
                "_id": secrets.token_hex(12),
                "organizationId": organization_id,
                "uuid": link_uuid,
                # A random free slot: concurrent creates rarely pick the same one.
                "slot": secrets.choice(free),
                "tokenHash": hash_link_token(token),
                "tokenEncrypted": self.cipher.encrypt(token),
                "description": description,
                "status": "active",
                "createdAt": self.clock.now(),
            }
            try:
                await self._links.insert_one(doc)
                return self._from_doc(doc)
            except DuplicateKeyError:
                # The same UUID or the same slot, created meanwhile: the next read tells.
                continue
        raise Unavailable("too many connect links are being created at once; retry")

    async def list(self, organization_id: str) -> list[ConnectLink]:
        """Every link of the organization (at most 100), newest first."""
        cursor = self._links.find({"organizationId": organization_id}).sort(
            [("createdAt", DESCENDING), ("_id", DESCENDING)]
        )
        return [self._from_doc(doc) async for doc in cursor]

    async def by_token(self, token: str) -> ConnectLink:
        if not looks_like_link_token(token):
            raise NotFound("unknown connect link")
        doc = await self._links.find_one({"tokenHash": hash_link_token(token)})
        if doc is None:
            raise NotFound("unknown connect link")
        return self._from_doc(doc)

    async def by_id(self, link_id: str) -> ConnectLink:
        doc = await self._links.find_one({"_id": link_id})
        if doc is None:
            raise NotFound("unknown connect link")
        return self._from_doc(doc)

    async def claim(self, link_id: str, session_id: str) -> bool:
        """Marks the link used by this connect session; False when another session used it."""
        doc = await self._links.find_one_and_update(
            {
                "_id": link_id,
                "$or": [{"status": "active"}, {"usedBySession": session_id}],
            },
            {"$set": {"status": "used", "usedAt": self.clock.now(), "usedBySession": session_id}},
            return_document=ReturnDocument.AFTER,
        )
        return doc is not None

    async def record_account(self, link_id: str, social_account_id: str, username: str) -> None:
        await self._links.update_one(
            {"_id": link_id},
            {"$set": {"socialAccountId": social_account_id, "connectedUsername": username}},
        )

"""API credentials: tokens are shown once and stored only as SHA-256 hashes."""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from pymongo import ASCENDING, DESCENDING, ReturnDocument

from account_svc.records import AccountCollections
from storypost_runtime.clock import Clock
from storypost_runtime.component import component
from storypost_runtime.documents import from_document
from storypost_runtime.errors import InvalidArgument, NotFound, Unauthenticated
from storypost_runtime.mongo import Document

TOKEN_PREFIX = "sp_"  # noqa: S105 - a public prefix, not a secret
# secrets.token_urlsafe(32) gives 43 characters: 256 random bits.
TOKEN_LENGTH = len(TOKEN_PREFIX) + 43
LAST_USED_RESOLUTION = timedelta(minutes=1)
NOT_AUTHENTICATED = "not authenticated"
# Most revocations one ListRevokedCredentials answer lists; past it the edge forgets all.
REVOKED_PAGE = 1000


def hash_token(token: str) -> str:
    """Tokens carry 256 random bits, so a fast hash is safe (no dictionary to guess from)."""
    return hashlib.sha256(token.encode()).hexdigest()


def looks_like_token(token: str) -> bool:
    return len(token) == TOKEN_LENGTH and token.startswith(TOKEN_PREFIX) and token.isascii()


@dataclass(frozen=True)
class Credential:
    credential_id: str
    organization_id: str
    name: str
    token_prefix: str
    created_at: datetime
    last_used_at: datetime | None = None
    revoked_at: datetime | None = None

    @classmethod
    def from_doc(cls, doc: Document) -> Credential:
        return from_document(cls, doc, credential_id=doc["_id"])


@dataclass(frozen=True)
class Revocations:
    credential_ids: list[str]
    # More were revoked than listed (REVOKED_PAGE).
    truncated: bool
    # This service's clock before the read began.
    as_of: datetime


@component
class Credentials:
    records: AccountCollections
    clock: Clock
    # credential id -> when this process last wrote lastUsedAt (keeps writes rare).
    _last_used_written: dict[str, datetime] = field(init=False, default_factory=dict)

    async def create(self, organization_id: str, name: str) -> tuple[Credential, str]:
        """Returns the credential and its plain token; the token is not kept anywhere."""
        name = name.strip() or "api"
        if len(name) > 200:
            raise InvalidArgument("credential name must be at most 200 characters")
        if await self.records.organizations.count_documents({"_id": organization_id}, limit=1) == 0:
            raise NotFound(f"organization {organization_id} not found")
        token = TOKEN_PREFIX + secrets.token_urlsafe(32)
        doc: Document = {
            "_id": secrets.token_hex(12),
            "organizationId": organization_id,
            "name": name,
            "tokenHash": hash_token(token),
            "tokenPrefix": token[:8],
            "createdAt": self.clock.now(),
        }
        await self.records.credentials.insert_one(doc)
        return Credential.from_doc(doc), token

    async def list(self, organization_id: str, include_revoked: bool) -> list[Credential]:
        query: Document = {"organizationId": organization_id}
        if not include_revoked:
            query["revokedAt"] = None
        cursor = self.records.credentials.find(query).sort("createdAt", DESCENDING)
        return [Credential.from_doc(doc) async for doc in cursor]

    async def revoke(self, organization_id: str, credential_id: str) -> Credential:
        doc = await self.records.credentials.find_one_and_update(
            {"_id": credential_id, "organizationId": organization_id, "revokedAt": None},
            {"$set": {"revokedAt": self.clock.now()}},
            return_document=ReturnDocument.AFTER,
        )
        if doc is None:
            doc = await self.records.credentials.find_one(
                {"_id": credential_id, "organizationId": organization_id}
            )
            if doc is None:
                raise NotFound(f"credential {credential_id} not found")
        return Credential.from_doc(doc)

    async def revoked_since(self, since: datetime | None) -> Revocations:
        """The credentials revoked at or after `since` (None: ever), oldest first."""
        as_of = self.clock.now()
        query: Document = {"revokedAt": {"$ne": None} if since is None else {"$gte": since}}
        cursor = (
            self.records.credentials.find(query, {"_id": 1})
            .sort("revokedAt", ASCENDING)
            .limit(REVOKED_PAGE + 1)
        )
        ids = [doc["_id"] async for doc in cursor]
        return Revocations(ids[:REVOKED_PAGE], len(ids) > REVOKED_PAGE, as_of)

    async def authenticate(self, token: str) -> Credential:
        """The active credential of a token, or Unauthenticated (same answer for every cause)."""
        if not looks_like_token(token):
            raise Unauthenticated(NOT_AUTHENTICATED)
        wanted = hash_token(token)
        doc = await self.records.credentials.find_one({"tokenHash": wanted})
        if (
            doc is None
            or doc.get("revokedAt") is not None
            or not hmac.compare_digest(doc["tokenHash"], wanted)
        ):
            raise Unauthenticated(NOT_AUTHENTICATED)
        credential = Credential.from_doc(doc)
        await self._touch(credential)
        return credential

    async def _touch(self, credential: Credential) -> None:
        now = self.clock.now()
        last = self._last_used_written.get(credential.credential_id) or credential.last_used_at
        if last is not None and now - last < LAST_USED_RESOLUTION:
            return
        self._last_used_written[credential.credential_id] = now
        await self.records.credentials.update_one(
            {"_id": credential.credential_id}, {"$set": {"lastUsedAt": now}}
        )

"""Workspace users: email, an argon2id password hash, a role and the time zone of their pages."""

from __future__ import annotations

import asyncio
import secrets
from dataclasses import KW_ONLY, dataclass, field
from datetime import datetime
from typing import Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError
from pymongo import ReturnDocument
from pymongo.errors import DuplicateKeyError

from account_svc.records import AccountCollections
from storypost_runtime.clock import Clock
from storypost_runtime.component import component
from storypost_runtime.documents import from_document
from storypost_runtime.errors import AlreadyExists, InvalidArgument, NotFound, Unauthenticated
from storypost_runtime.mongo import Document

MIN_PASSWORD = 10
MAX_PASSWORD = 1024
WRONG_LOGIN = "wrong email or password"
Role = Literal["admin", "member"]
# Users made before roles existed were made by the operator for the workspace's owners.
DEFAULT_ROLE: Role = "admin"
DEFAULT_TIME_ZONE = "UTC"


@dataclass(frozen=True)
class User:
    user_id: str
    organization_id: str
    email: str
    created_at: datetime
    role: Role = DEFAULT_ROLE
    time_zone: str = DEFAULT_TIME_ZONE

    @classmethod
    def from_doc(cls, doc: Document) -> User:
        return from_document(cls, doc, user_id=doc["_id"], role=stored_role(doc))


def stored_role(doc: Document) -> Role:
    """The role of a user's (or its session's) record: records from before roles existed
    have none, and their users are admins."""
    return "member" if doc.get("role") == "member" else "admin"


def normalize_email(email: str) -> str:
    email = email.strip().lower()
    local, at, domain = email.partition("@")
    if not (at and local and domain and "@" not in domain and len(email) <= 254):
        raise InvalidArgument("email must look like name@example.com")
    return email


def check_password(password: str) -> None:
    if not MIN_PASSWORD <= len(password) <= MAX_PASSWORD:
        raise InvalidArgument(f"password must be {MIN_PASSWORD} to {MAX_PASSWORD} characters")


def check_time_zone(name: str) -> str:
    """An IANA zone name zoneinfo knows ("Europe/Paris"); the name as given."""
    try:
        ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise InvalidArgument(f"unknown time zone {name!r}") from None
    return name


@component
class Users:
    _: KW_ONLY
    records: AccountCollections
    clock: Clock
    hasher: PasswordHasher
    # Verifying against this keeps an unknown email as slow as a wrong password.
    _dummy_hash: str = field(init=False)

    def __post_init__(self) -> None:
        self._dummy_hash = self.hasher.hash(secrets.token_urlsafe(16))

    async def create(
        self, organization_id: str, email: str, password: str, role: Role = DEFAULT_ROLE
    ) -> User:
        email = normalize_email(email)
        check_password(password)
        if await self.records.organizations.count_documents({"_id": organization_id}, limit=1) == 0:
            raise NotFound(f"organization {organization_id} not found")
        # argon2 is deliberately slow: keep it off the event loop.
        password_hash = await asyncio.to_thread(self.hasher.hash, password)
        doc: Document = {
            "_id": secrets.token_hex(12),
            "organizationId": organization_id,
            "email": email,
            "passwordHash": password_hash,
            "createdAt": self.clock.now(),
            "role": role,
        }
        try:
            await self.records.users.insert_one(doc)
        except DuplicateKeyError:
            raise AlreadyExists(f"a user with email {email} already exists") from None
        return User.from_doc(doc)

    async def verify(self, organization_id: str, email: str, password: str) -> User:
        try:
            email = normalize_email(email)
        except InvalidArgument:
            raise Unauthenticated(WRONG_LOGIN) from None
        doc = await self.records.users.find_one({"organizationId": organization_id, "email": email})
        stored = doc["passwordHash"] if doc else self._dummy_hash
        try:
            await asyncio.to_thread(self.hasher.verify, stored, password)
        except (VerificationError, InvalidHashError):
            raise Unauthenticated(WRONG_LOGIN) from None
        if doc is None:
            raise Unauthenticated(WRONG_LOGIN)
        return User.from_doc(doc)

    async def of_organization(self, organization_id: str) -> list[User]:
        cursor = self.records.users.find({"organizationId": organization_id}).sort(
            [("createdAt", 1), ("email", 1)]
        )
        return [User.from_doc(doc) async for doc in cursor]

    async def get(self, organization_id: str, user_id: str) -> User:
        doc = await self.records.users.find_one(_user_filter(organization_id, user_id))
        return _found(doc, user_id)

    async def remove(self, organization_id: str, user_id: str) -> User:
        doc = await self.records.users.find_one_and_delete(_user_filter(organization_id, user_id))
        return _found(doc, user_id)

    async def set_password(self, organization_id: str, user_id: str, password: str) -> User:
        check_password(password)
        password_hash = await asyncio.to_thread(self.hasher.hash, password)
        return await self._update(organization_id, user_id, {"passwordHash": password_hash})

    async def set_time_zone(self, organization_id: str, user_id: str, time_zone: str) -> User:
        return await self._update(
            organization_id, user_id, {"timeZone": check_time_zone(time_zone)}
        )

    async def _update(self, organization_id: str, user_id: str, values: Document) -> User:
        doc = await self.records.users.find_one_and_update(
            _user_filter(organization_id, user_id),
            {"$set": values},
            return_document=ReturnDocument.AFTER,
        )
        return _found(doc, user_id)


def _user_filter(organization_id: str, user_id: str) -> Document:
    """A user by id, within its organization only (ids never reach across organizations)."""
    return {"_id": user_id, "organizationId": organization_id}


def _found(doc: Document | None, user_id: str) -> User:
    if doc is None:
        raise NotFound(f"user {user_id} not found")
    return User.from_doc(doc)

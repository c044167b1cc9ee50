"""Workspace users: email and an argon2id password hash."""

from __future__ import annotations

import asyncio
import secrets
from dataclasses import dataclass
from datetime import datetime

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError
from pymongo.errors import DuplicateKeyError

from account_svc.records import AccountCollections
from storypost_runtime.clock import Clock
from storypost_runtime.errors import AlreadyExists, InvalidArgument, NotFound, Unauthenticated
from storypost_runtime.mongo import Document

MIN_PASSWORD = 10
MAX_PASSWORD = 1024
WRONG_LOGIN = "wrong email or password"


@dataclass(frozen=True)
class User:
    user_id: str
    organization_id: str
    email: str
    created_at: datetime

    @classmethod
    def from_doc(cls, doc: Document) -> User:
        return cls(doc["_id"], doc["organizationId"], doc["email"], doc["createdAt"])


def normalize_email(email: str) -> str:
    email = email.strip().lower()
    local, at, domain = email.partition("@")
    if not (at and local and domain and "@" not in domain and len(email) <= 254):
        raise InvalidArgument("email must look like name@example.com")
    return email


class Users:
    def __init__(self, records: AccountCollections, clock: Clock, hasher: PasswordHasher) -> None:
        self._records = records
        self._clock = clock
        self._hasher = hasher
        # Verifying against this keeps an unknown email as slow as a wrong password.
        self._dummy_hash = hasher.hash(secrets.token_urlsafe(16))

    async def create(self, organization_id: str, email: str, password: str) -> User:
        email = normalize_email(email)
        if not MIN_PASSWORD <= len(password) <= MAX_PASSWORD:
            raise InvalidArgument(f"password must be {MIN_PASSWORD} to {MAX_PASSWORD} characters")
        if (
            await self._records.organizations.count_documents({"_id": organization_id}, limit=1)
            == 0
        ):
            raise NotFound(f"organization {organization_id} not found")
        # argon2 is deliberately slow: keep it off the event loop.
        password_hash = await asyncio.to_thread(self._hasher.hash, password)
        doc: Document = {
            "_id": secrets.token_hex(12),
            "organizationId": organization_id,
            "email": email,
            "passwordHash": password_hash,
            "createdAt": self._clock.now(),
        }
        try:
            await self._records.users.insert_one(doc)
        except DuplicateKeyError:
            raise AlreadyExists(f"a user with email {email} already exists") from None
        return User.from_doc(doc)

    async def verify(self, organization_id: str, email: str, password: str) -> User:
        try:
            email = normalize_email(email)
        except InvalidArgument:
            raise Unauthenticated(WRONG_LOGIN) from None
        doc = await self._records.users.find_one(
            {"organizationId": organization_id, "email": email}
        )
        stored = doc["passwordHash"] if doc else self._dummy_hash
        try:
            await asyncio.to_thread(self._hasher.verify, stored, password)
        except (VerificationError, InvalidHashError):
            raise Unauthenticated(WRONG_LOGIN) from None
        if doc is None:
            raise Unauthenticated(WRONG_LOGIN)
        return User.from_doc(doc)

"""App sessions: server-side records keyed by the SHA-256 of a random token, with an idle
timeout and an absolute lifetime, so signing out (or expiry) really ends them."""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import KW_ONLY, dataclass
from datetime import datetime, timedelta

from pymongo import ReturnDocument

from account_svc.identity.signin_limits import SignInLimits
from account_svc.identity.users import (
    DEFAULT_TIME_ZONE,
    WRONG_LOGIN,
    Role,
    User,
    Users,
    stored_role,
)
from account_svc.records import AccountCollections
from storypost_runtime.clock import Clock
from storypost_runtime.component import component
from storypost_runtime.documents import from_document
from storypost_runtime.errors import Unauthenticated
from storypost_runtime.logs import get_logger
from storypost_runtime.mongo import Document

log = get_logger(__name__)
NOT_SIGNED_IN = "not signed in"
USER_AGENT_MAX = 300
# The idle expiry moves forward at most this often, so most page loads are a single read.
TOUCH_EVERY = timedelta(minutes=1)


def hash_session_token(token: str) -> str:
    """Tokens carry 256 random bits, so a fast hash is safe (as for API tokens)."""
    return hashlib.sha256(token.encode()).hexdigest()


def looks_like_session_token(token: str) -> bool:
    # secrets.token_urlsafe(32): 43 URL-safe characters.
    return len(token) == 43 and token.isascii() and all(c.isalnum() or c in "-_" for c in token)


@dataclass(frozen=True)
class Session:
    session_id: str
    organization_id: str
    user_id: str
    email: str
    created_at: datetime
    expires_at: datetime
    # Copied from the user at sign-in (and kept in step by set_time_zone), so a page's
    # session check stays one read.
    role: Role
    time_zone: str = DEFAULT_TIME_ZONE

    @classmethod
    def from_doc(cls, doc: Document) -> Session:
        return from_document(cls, doc, role=stored_role(doc))


@component
class AppSessions:
    _: KW_ONLY
    records: AccountCollections
    clock: Clock
    users: Users
    limits: SignInLimits
    idle: timedelta
    lifetime: timedelta

    def _expiry(self, created_at: datetime, used_at: datetime) -> datetime:
        return min(used_at + self.idle, created_at + self.lifetime)

    async def sign_in(
        self, organization_id: str, email: str, password: str, client_ip: str, user_agent: str
    ) -> tuple[Session, str]:
        """The new session and its plain token (kept nowhere); limits first, then argon2."""
        await self.limits.take(organization_id, email, client_ip)
        try:
            user = await self.users.verify(organization_id, email, password)
        except Unauthenticated:
            log.info("sign-in refused", organization_id=organization_id)
            raise Unauthenticated(WRONG_LOGIN) from None
        await self.limits.give_back(organization_id, email, client_ip)
        token = secrets.token_urlsafe(32)
        now = self.clock.now()
        doc: Document = {
            "_id": hash_session_token(token),
            "sessionId": secrets.token_hex(12),
            "organizationId": user.organization_id,
            "userId": user.user_id,
            "email": user.email,
            "role": user.role,
            "timeZone": user.time_zone,
            "userAgent": user_agent[:USER_AGENT_MAX],
            "createdAt": now,
            "lastSeenAt": now,
            "expiresAt": self._expiry(now, now),
            # The TTL index drops the record once even the absolute lifetime is over.
            "purgeAt": now + self.lifetime,
        }
        await self.records.app_sessions.insert_one(doc)
        log.info(
            "signed in",
            organization_id=user.organization_id,
            user_id=user.user_id,
            session_id=doc["sessionId"],
        )
        return Session.from_doc(doc), token

    async def get(self, organization_id: str, token: str) -> Session:
        """The live session of the token in this organization, or Unauthenticated."""
        if not looks_like_session_token(token):
            raise Unauthenticated(NOT_SIGNED_IN)
        key = hash_session_token(token)
        doc = await self.records.app_sessions.find_one({"_id": key})
        now = self.clock.now()
        if (
            doc is None
            or not hmac.compare_digest(doc["_id"], key)
            or doc["organizationId"] != organization_id
            or doc["expiresAt"] <= now
        ):
            raise Unauthenticated(NOT_SIGNED_IN)
        if now - doc["lastSeenAt"] >= TOUCH_EVERY:
            touched = await self.records.app_sessions.find_one_and_update(
                {"_id": key},
                {
                    "$set": {
                        "lastSeenAt": now,
                        "expiresAt": self._expiry(doc["createdAt"], now),
                    }
                },
                return_document=ReturnDocument.AFTER,
            )
            if touched is None:  # ended meanwhile
                raise Unauthenticated(NOT_SIGNED_IN)
            doc = touched
        return Session.from_doc(doc)

    async def end(self, token: str) -> bool:
        """Deletes the session record: the token stops working at once."""
        if not looks_like_session_token(token):
            return False
        doc = await self.records.app_sessions.find_one_and_delete(
            {"_id": hash_session_token(token)}
        )
        if doc is None:
            return False
        log.info("signed out", organization_id=doc["organizationId"], session_id=doc["sessionId"])
        return bool(doc["expiresAt"] > self.clock.now())

    async def end_all(self, user_id: str, *, keep_token: str = "") -> int:
        """Ends every session of a user (removed, or given a new password), but keep_token's."""
        query: Document = {"userId": user_id}
        if keep_token:
            query["_id"] = {"$ne": hash_session_token(keep_token)}
        ended = await self.records.app_sessions.delete_many(query)
        log.info("sessions ended", user_id=user_id, count=ended.deleted_count)
        return ended.deleted_count

    async def follow(self, user: User) -> None:
        """The user's sessions show their new time zone from the next page on."""
        await self.records.app_sessions.update_many(
            {"userId": user.user_id}, {"$set": {"timeZone": user.time_zone}}
        )

"""Resolves mention usernames through the organization's photoapp accounts, one lease each.

An account is busy while a resolution holds its lease (`busyUntil` in the future, set by an
atomic find_one_and_update, so it holds across replicas) or while photoapp rate-limits it
(`busyUntil` pushed to the end of the cooldown). A crashed holder's lease simply expires.
"""

from __future__ import annotations

import math
import secrets
from dataclasses import KW_ONLY, field
from datetime import datetime, timedelta

from pymongo import ASCENDING, ReturnDocument

from account_svc.connections.access_tokens import AccessTokens
from account_svc.connections.connected_accounts import AccountRef, ConnectedAccounts, username_key
from account_svc.connections.platform_api import Failure, PlatformApi, PlatformError
from account_svc.records import AccountCollections
from storypost_runtime.clock import Clock
from storypost_runtime.component import component
from storypost_runtime.errors import (
    FailedPrecondition,
    InvalidArgument,
    NotFound,
    ResourceExhausted,
    Unavailable,
)
from storypost_runtime.logs import get_logger
from storypost_runtime.mongo import Document

log = get_logger(__name__)
NO_ACCOUNT = "the organization has no connected photoapp account to resolve mentions with"
ALL_BUSY = (
    "every connected photoapp account is busy resolving mentions or rate-limited; "
    "retry later with the same UUID"
)
# Accounts tried per call before giving up (each failure moves on to the next account).
MAX_ATTEMPTS = 5


@component
class MentionResolver:
    _: KW_ONLY
    records: AccountCollections
    accounts: ConnectedAccounts
    tokens: AccessTokens
    api: PlatformApi
    clock: Clock
    lease_seconds: float
    cooldown_seconds: float
    _lease: timedelta = field(init=False)
    _cooldown: timedelta = field(init=False)

    def __post_init__(self) -> None:
        self._lease = timedelta(seconds=self.lease_seconds)
        self._cooldown = timedelta(seconds=self.cooldown_seconds)

    @staticmethod
    def _usable(organization_id: str) -> Document:
        return {
            "organizationId": organization_id,
            "platform": "photoapp",
            "connection": "direct",
            "deletedAt": None,
            "disconnected": False,
        }

    async def resolve(self, organization_id: str, username: str) -> tuple[str, str]:
        """(numeric photoapp id, username as photoapp spells it)."""
        name = username_key(username)
        if not name or len(name) > 64:
            raise InvalidArgument("a mention needs a username of 1 to 64 characters")
        tried: list[str] = []
        for _ in range(MAX_ATTEMPTS):
            holder = secrets.token_hex(8)
            doc = await self._acquire(organization_id, holder, tried)
            if doc is None:
                break
            tried.append(doc["_id"])
            rest_until = self.clock.now()
            try:
                token, _ = await self.tokens.valid_token(doc)
                return await self.api.lookup_user(token, name)
            except FailedPrecondition:
                continue  # the token was refused: the account is disconnected now
            except PlatformError as error:
                if error.failure is Failure.RATE_LIMITED:
                    wait = timedelta(seconds=error.retry_after) if error.retry_after else None
                    rest_until = self.clock.now() + (wait or self._cooldown)
                    log.info("photoapp rate-limited a mention lookup", account=doc["_id"])
                    continue
                if error.failure is Failure.UNAUTHORIZED:
                    await self.accounts.mark_disconnected(
                        organization_id, AccountRef("id", doc["_id"]), error.message
                    )
                    continue
                if error.failure is Failure.NOT_FOUND:
                    raise NotFound(f"photoapp has no user named @{name}") from None
                if error.failure is Failure.UNAVAILABLE:
                    raise Unavailable(f"photoapp is not answering ({error.message})") from None
                raise FailedPrecondition(
                    f"photoapp refused to look up @{name}: {error.message}"
                ) from None
            finally:
                await self._release(doc["_id"], holder, rest_until)
        raise await self._none_usable(organization_id)

    async def _acquire(
        self, organization_id: str, holder: str, tried: list[str]
    ) -> Document | None:
        now = self.clock.now()
        query = {**self._usable(organization_id), "busyUntil": {"$lte": now}}
        if tried:
            query["_id"] = {"$nin": tried}
        doc: Document | None = await self.records.connected_accounts.find_one_and_update(
            query,
            {"$set": {"busyUntil": now + self._lease, "leaseHolder": holder}},
            sort=[("busyUntil", ASCENDING)],
            return_document=ReturnDocument.AFTER,
        )
        return doc

    async def _release(self, social_account_id: str, holder: str, until: datetime) -> None:
        await self.records.connected_accounts.update_one(
            {"_id": social_account_id, "leaseHolder": holder},
            {"$set": {"busyUntil": until}, "$unset": {"leaseHolder": ""}},
        )

    async def _none_usable(self, organization_id: str) -> Exception:
        soonest = await self.records.connected_accounts.find_one(
            self._usable(organization_id),
            {"busyUntil": 1},
            sort=[("busyUntil", ASCENDING)],
        )
        if soonest is None:
            return FailedPrecondition(NO_ACCOUNT, reason="NO_PHOTOAPP_ACCOUNT")
        wait = (soonest["busyUntil"] - self.clock.now()).total_seconds()
        return ResourceExhausted(
            ALL_BUSY, retry_after_seconds=max(1, math.ceil(wait)), reason="ACCOUNTS_BUSY"
        )

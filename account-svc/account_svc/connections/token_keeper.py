"""Account health: tokens refreshed before they expire, and accounts with posts due soon
checked ahead of them, so an account that needs a reconnect is known before a post fails.

A refusal for good (the platform answers `invalid_grant` / 401) marks the account
`needs_reconnect` with its `account.status_changed` event (ConnectedAccounts); a timeout or a
5xx never does: the account is tried again later, each failure waiting twice as long (the
`retry` policy, backoff.TOKEN_REFRESH). One replica at a time works on an account (a lease in
its record), so two replicas never refresh one grant at once (a platform that rotates refresh
tokens would take the second refresh for a replayed token).
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import KW_ONLY, field
from datetime import datetime, timedelta

from pymongo import ReturnDocument

from account_svc.connections.access_tokens import AccessTokens
from account_svc.connections.connected_accounts import PUBLIC_PROJECTION
from account_svc.records import AccountCollections
from storypost_runtime.backoff import TOKEN_REFRESH, Exponential
from storypost_runtime.clock import Clock
from storypost_runtime.component import component
from storypost_runtime.errors import FailedPrecondition, Unavailable
from storypost_runtime.logs import get_logger
from storypost_runtime.mongo import Document
from storypost_runtime.tasks import run_passes
from storypost_runtime.vocabulary import AccountStatus

log = get_logger(__name__)


@component
class TokenKeeper:
    _: KW_ONLY
    records: AccountCollections
    tokens: AccessTokens
    clock: Clock
    # Tokens that expire within this are refreshed ahead.
    horizon: timedelta
    # An account checked (refreshed) within this is not checked again for a due post.
    check_interval: timedelta
    # How long one replica may hold an account while it refreshes it.
    lease: timedelta = timedelta(seconds=60)
    # The waits after transient failures in a row (stored: any replica may take the retry).
    retry: Exponential = TOKEN_REFRESH
    poll_seconds: float = 30.0
    batch: int = 20
    owner: str = field(default_factory=lambda: uuid.uuid4().hex[:12])

    async def run(self) -> None:
        """Refreshes expiring tokens until cancelled."""
        await run_passes(self.refresh_expiring, self._pass_failed, poll_seconds=self.poll_seconds)

    async def refresh_expiring(self) -> int:
        """One pass: refreshes up to `batch` tokens that expire within the horizon; returns
        how many accounts it worked on."""
        now = self.clock.now()
        worked = 0
        for _ in range(self.batch):
            doc = await self._claim({"accessTokenExpiresAt": {"$lt": now + self.horizon}}, now)
            if doc is None:
                break
            await self._refresh(doc)
            worked += 1
        return worked

    async def check(self, organization_id: str, ids: Sequence[str]) -> dict[str, AccountStatus]:
        """Checks the organization's accounts (a post is due on each soon): each not checked
        within `check_interval` is refreshed now. Answers each account's status; an account
        another replica is checking, or unknown, answers what is stored."""
        now = self.clock.now()
        found: dict[str, AccountStatus] = {}
        for social_account_id in dict.fromkeys(ids):
            doc = await self._claim(
                {
                    "_id": social_account_id,
                    "organizationId": organization_id,
                    "$or": [
                        {"checkedAt": None},
                        {"checkedAt": {"$lt": now - self.check_interval}},
                    ],
                },
                now,
            )
            if doc is not None:
                await self._refresh(doc)
            status = await self._status(organization_id, social_account_id)
            if status is not None:
                found[social_account_id] = status
        return found

    async def _claim(self, condition: Document, now: datetime) -> Document | None:
        """Takes the lease of one live, connected account that meets `condition`, is not
        waiting to retry and is not held by another replica."""
        return await self.records.connected_accounts.find_one_and_update(
            {
                **condition,
                "deletedAt": None,
                "disconnected": False,
                "refreshRetryAt": {"$not": {"$gt": now}},
                "refreshLease.until": {"$not": {"$gt": now}},
            },
            {"$set": {"refreshLease": {"owner": self.owner, "until": now + self.lease}}},
            return_document=ReturnDocument.AFTER,
        )

    async def _refresh(self, doc: Document) -> None:
        """Refreshes a claimed account: a new grant clears the lease and any failures and
        marks it checked (the store's one write), a refusal marks it needs_reconnect, a
        transient failure waits."""
        try:
            await self.tokens.valid_token(doc, force_refresh=True)
        except FailedPrecondition:
            return  # marked needs_reconnect, with its event (AccessTokens)
        except Unavailable as error:
            await self._retry_later(doc, str(error))

    async def _retry_later(self, doc: Document, why: str) -> None:
        failures = int(doc.get("refreshFailures") or 0) + 1
        retry_at = self.clock.now() + timedelta(seconds=self.retry.delay(failures))
        log.info(
            "token refresh failed, will retry",
            social_account_id=doc["_id"],
            failures=failures,
            retry_at=retry_at.isoformat(),
            error=why,
        )
        await self.records.connected_accounts.update_one(
            {"_id": doc["_id"], "refreshLease.owner": self.owner},
            {
                "$set": {"refreshFailures": failures, "refreshRetryAt": retry_at},
                "$unset": {"refreshLease": ""},
            },
        )

    async def _status(self, organization_id: str, social_account_id: str) -> AccountStatus | None:
        doc = await self.records.connected_accounts.find_one(
            {"_id": social_account_id, "organizationId": organization_id}, PUBLIC_PROJECTION
        )
        if doc is None:
            return None
        return status_of(doc)

    def _pass_failed(self, error: Exception) -> None:
        log.warning("token keeper pass failed", error=str(error) or type(error).__name__)


def status_of(doc: Document) -> AccountStatus:
    """An account record's health."""
    if doc.get("deletedAt") is not None:
        return AccountStatus.DISCONNECTED
    if doc.get("disconnected"):
        return AccountStatus.NEEDS_RECONNECT
    return AccountStatus.CONNECTED

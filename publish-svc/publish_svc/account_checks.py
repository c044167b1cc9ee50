"""Accounts checked before their posts are due: every `poll` this replica asks account-svc
to check each account with a post due within `ahead` (account-svc refreshes each at most once
per its check interval, so replicas asking alike cost the platforms nothing more). An account
that needs a reconnect is then known, and its owner told (`account.status_changed`), hours
before the post; the post itself fails at its time saying to reconnect."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import KW_ONLY
from datetime import timedelta

import grpc
from pymongo.asynchronous.collection import AsyncCollection

from publish_svc.accounts_client import AccountsClient
from publish_svc.model import Status
from publish_svc.records import ACCOUNT_FIELD
from storypost_runtime.clock import Clock
from storypost_runtime.component import component
from storypost_runtime.logs import get_logger
from storypost_runtime.mongo import Document
from storypost_runtime.tasks import run_passes
from storypost_runtime.vocabulary import AccountStatus

log = get_logger(__name__)
# CheckAccounts takes at most this many accounts per call (account-svc's MAX_CHECKED_ACCOUNTS).
PER_CALL = 100


@component
class AccountChecks:
    _: KW_ONLY
    posts: AsyncCollection[Document]
    accounts: AccountsClient
    clock: Clock
    ahead: timedelta = timedelta(hours=24)
    poll_seconds: float = 600.0
    # Posts read per pass (the scheduler's index `status_due` serves the query).
    most_posts: int = 20_000

    async def run(self) -> None:
        await run_passes(self.check_once, self._failed, poll_seconds=self.poll_seconds)

    async def check_once(self) -> int:
        """One pass; answers 0 (the next pass comes after the poll interval)."""
        due = await self._accounts_due()
        checked = 0
        for organization_id, ids in due.items():
            ordered = sorted(ids)
            for start in range(0, len(ordered), PER_CALL):
                batch = ordered[start : start + PER_CALL]
                try:
                    found = await self.accounts.check_accounts(organization_id, batch)
                except grpc.aio.AioRpcError as error:
                    log.info("account check failed", error=error.details() or str(error.code()))
                    continue
                checked += len(batch)
                for account_id, status in found.items():
                    if status != AccountStatus.CONNECTED:
                        log.info("account needs attention", social_account_id=account_id)
        if checked:
            log.info("accounts with posts due checked", accounts=checked)
        return 0

    async def _accounts_due(self) -> dict[str, set[str]]:
        now = self.clock.now()
        cursor = self.posts.find(
            {"status": Status.SCHEDULED.value, "dueAt": {"$gte": now, "$lte": now + self.ahead}},
            {"organizationId": 1, ACCOUNT_FIELD: 1},
        ).limit(self.most_posts)
        due: dict[str, set[str]] = defaultdict(set)
        async for doc in cursor:
            account_id = (doc.get("account") or {}).get("socialAccountId")
            if account_id:
                due[doc["organizationId"]].add(account_id)
        return due

    def _failed(self, error: Exception) -> None:
        log.warning("account checks pass failed", error=str(error) or type(error).__name__)

"""Giving a daily-limit reservation back exactly once when a social post ends unpublished.

The reservation is owed back from the moment the post fails or is canceled: the transition
writes `dailyReleaseDueAt` in the same single-document update as the status and its event.
Then account-svc's ReleaseDailyPost (idempotent per post) gives it back and the field is
cleared. A crash or an unreachable account-svc in between leaves the debt on the record, and
`settle()` (every replica's scheduler) gives it back later: the platform's daily count is
never left one too high.
"""

from __future__ import annotations

from dataclasses import KW_ONLY
from datetime import datetime, timedelta
from typing import Any

from publish_svc.accounts_client import AccountsClient
from publish_svc.model import Kind, Post
from publish_svc.records import PostStore
from storypost_runtime.clock import Clock
from storypost_runtime.component import component
from storypost_runtime.logs import get_logger

log = get_logger(__name__)

DUE_FIELD = "dailyReleaseDueAt"
# An owed release that failed is tried again after this.
RETRY = timedelta(seconds=10)
BATCH = 20


def owes_release(post: Post) -> bool:
    """A social post that never reached the platform gives its reservation back."""
    return post.kind is Kind.SOCIAL and not post.progress.get("irreversible")


@component
class DailyReleases:
    _: KW_ONLY
    store: PostStore
    accounts: AccountsClient
    clock: Clock

    def owed_fields(self, post: Post, now: datetime) -> dict[str, Any]:
        """What the ending transition writes: the debt, when the post owes one."""
        return {DUE_FIELD: now + RETRY} if owes_release(post) else {}

    async def give_back(self, post: Post) -> bool:
        """Releases the post's reservation and clears the debt; on failure the debt stays."""
        try:
            await self.accounts.release_daily(
                post.organization_id,
                post.account.social_account_id,
                post.id,
                post.date or post.created_at,
            )
        except Exception as error:  # account-svc away: the debt is on the record
            log.warning("daily reservation not given back yet", post=post.id, error=str(error))
            await self.store.set_due(post.id, DUE_FIELD, self.clock.now() + RETRY)
            return False
        await self.store.clear_due(post.id, DUE_FIELD, "dailyReleasedAt", self.clock.now())
        return True

    async def settle(self) -> int:
        """Gives back reservations still owed (a crash or an outage after the transition)."""
        given = 0
        for record_id in await self.store.due(DUE_FIELD, self.clock.now(), BATCH):
            post = await self.store.get_by_id(record_id)
            if post is not None and await self.give_back(post):
                given += 1
        return given

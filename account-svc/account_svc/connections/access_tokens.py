"""Valid access tokens for driver calls: refreshed through the platform shortly before expiry."""

from __future__ import annotations

from dataclasses import KW_ONLY
from datetime import datetime, timedelta

from account_svc.connections.connected_accounts import (
    AccountRef,
    ConnectedAccount,
    ConnectedAccounts,
)
from account_svc.connections.platform_api import Failure, PlatformApi, PlatformError
from storypost_runtime.clock import Clock
from storypost_runtime.component import component
from storypost_runtime.errors import FailedPrecondition, Unavailable
from storypost_runtime.logs import get_logger
from storypost_runtime.mongo import Document

log = get_logger(__name__)
DISCONNECTED = "ACCOUNT_DISCONNECTED"
# A token this close to expiry is refreshed first, so it outlives the driver call.
REFRESH_MARGIN = timedelta(seconds=60)


def disconnected_error(account: ConnectedAccount) -> FailedPrecondition:
    return FailedPrecondition(
        f"the {account.platform.name} account @{account.username} is disconnected; "
        "its owner must connect it again",
        reason=DISCONNECTED,
    )


@component
class AccessTokens:
    _: KW_ONLY
    accounts: ConnectedAccounts
    api: PlatformApi
    clock: Clock

    async def get(
        self, organization_id: str, ref: AccountRef, *, force_refresh: bool = False
    ) -> tuple[ConnectedAccount, str, datetime]:
        doc = await self.accounts.find_doc(organization_id, ref)
        account = ConnectedAccount.from_doc(doc)
        token, expires_at = await self.valid_token(doc, force_refresh=force_refresh)
        return account, token, expires_at

    async def valid_token(
        self, doc: Document, *, force_refresh: bool = False
    ) -> tuple[str, datetime]:
        """The stored token when it lives long enough, else a refreshed one.

        A refused refresh marks the account disconnected; either way a disconnected account
        answers FAILED_PRECONDITION (ACCOUNT_DISCONNECTED).
        """
        account = ConnectedAccount.from_doc(doc)
        if account.disconnected:
            raise disconnected_error(account)
        stored = self.accounts.tokens_of(doc)
        now = self.clock.now()
        if (
            stored.access_token
            and not force_refresh
            and stored.access_expires_at - now > REFRESH_MARGIN
        ):
            return stored.access_token, stored.access_expires_at
        if not stored.refresh_token:
            await self._disconnect(account, "the stored tokens cannot be read (a key was removed)")
            raise disconnected_error(account)
        try:
            grant = await self.api.refresh(account.platform.key, stored.refresh_token)
        except PlatformError as error:
            if error.failure is Failure.UNAUTHORIZED:
                await self._disconnect(account, error.message)
                raise disconnected_error(account) from None
            raise Unavailable(
                f"{account.platform.name} could not refresh the account's token "
                f"({error.message}); retry later"
            ) from None
        await self.accounts.store_tokens(account.social_account_id, grant)
        log.info("token refreshed", social_account_id=account.social_account_id)
        return grant.access_token, grant.access_expires_at

    async def _disconnect(self, account: ConnectedAccount, reason: str) -> None:
        log.info("account disconnected", social_account_id=account.social_account_id)
        await self.accounts.mark_disconnected(
            account.organization_id, AccountRef("id", account.social_account_id), reason
        )

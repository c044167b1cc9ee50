"""What publish-svc asks account-svc: the account a post goes to, tokens, limits, credits."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import field
from datetime import datetime, timedelta

import grpc

from publish_svc.model import AccountInfo
from storypost.account.v1 import account_pb2 as apb
from storypost.account.v1 import account_pb2_grpc
from storypost_runtime.clock import Clock
from storypost_runtime.component import component
from storypost_runtime.errors import InvalidArgument
from storypost_runtime.protobuf import timestamp, to_datetime
from storypost_runtime.vocabulary import PHOTOAPP, AccountStatus

TOKEN_MARGIN = timedelta(minutes=1)


def photoapp_ref(username: str) -> apb.AccountRef:
    return apb.AccountRef(
        platform_username=apb.PlatformUsername(platform=PHOTOAPP.name, username=username)
    )


def clipapp_ref(account_id: str) -> apb.AccountRef:
    return apb.AccountRef(clipapp_account_id=account_id)


def social_ref(social_account_id: str) -> apb.AccountRef:
    return apb.AccountRef(social_account_id=social_account_id)


def account_info(account: apb.ConnectedAccount) -> AccountInfo:
    return AccountInfo(
        social_account_id=account.social_account_id,
        platform=account.platform,
        platform_account_id=account.platform_account_id,
        username=account.username,
    )


@component
class AccountsClient:
    stub: account_pb2_grpc.AccountServiceAsyncStub
    clock: Clock
    # Access tokens in memory only (never logged), until a minute before they expire, so
    # a burst of posts to one account asks account-svc once.
    _tokens: dict[tuple[str, str], tuple[apb.AccessToken, datetime]] = field(
        init=False, default_factory=dict
    )

    async def connected(
        self, organization_id: str, ref: apb.AccountRef, what: str
    ) -> apb.ConnectedAccount:
        """The connected, usable account, or InvalidArgument naming it (the caller's mistake)."""
        try:
            account = await self.stub.GetConnectedAccount(
                apb.GetConnectedAccountRequest(organization_id=organization_id, account=ref)
            )
        except grpc.aio.AioRpcError as error:
            if error.code() == grpc.StatusCode.NOT_FOUND:
                raise InvalidArgument(f"{what} is not connected to this organization") from None
            raise
        if account.disconnected:
            raise InvalidArgument(
                f"{what} is disconnected: reconnect it in the app before scheduling posts",
                reason="ACCOUNT_DISCONNECTED",
            )
        return account

    async def access_token(
        self, organization_id: str, social_account_id: str, *, force_refresh: bool = False
    ) -> apb.AccessToken:
        key = (organization_id, social_account_id)
        cached = self._tokens.get(key)
        if cached and not force_refresh and cached[1] > self.clock.now():
            return cached[0]
        token: apb.AccessToken = await self.stub.GetAccessToken(
            apb.GetAccessTokenRequest(
                organization_id=organization_id,
                account=social_ref(social_account_id),
                force_refresh=force_refresh,
            )
        )
        if token.HasField("expires_at"):
            valid_until = to_datetime(token.expires_at) - TOKEN_MARGIN
            self._tokens[key] = (token, valid_until)
        return token

    async def check_accounts(
        self, organization_id: str, social_account_ids: Sequence[str]
    ) -> dict[str, str]:
        """account-svc checks each account (a post is due on it soon): socialAccountId →
        `connected`, `needs_reconnect` or `disconnected`. A token kept for an account that is
        not connected any more is forgotten, so its next post asks account-svc again."""
        answer = await self.stub.CheckAccounts(
            apb.CheckAccountsRequest(
                organization_id=organization_id, social_account_ids=list(social_account_ids)
            )
        )
        found = {a.social_account_id: a.status for a in answer.accounts}
        for social_account_id, status in found.items():
            if status != AccountStatus.CONNECTED:
                self._tokens.pop((organization_id, social_account_id), None)
        return found

    async def mark_disconnected(
        self, organization_id: str, social_account_id: str, reason: str
    ) -> None:
        self._tokens.pop((organization_id, social_account_id), None)
        await self.stub.MarkAccountDisconnected(
            apb.MarkAccountDisconnectedRequest(
                organization_id=organization_id,
                account=social_ref(social_account_id),
                reason=reason[:500],
            )
        )

    async def reserve_daily(
        self, organization_id: str, social_account_id: str, key: str, day: datetime
    ) -> apb.DailyPostReservation:
        reply: apb.DailyPostReservation = await self.stub.ReserveDailyPost(
            apb.DailyPostRequest(
                organization_id=organization_id,
                account=social_ref(social_account_id),
                post_uuid=key,
                post_date=timestamp(day),
            )
        )
        return reply

    async def release_daily(
        self, organization_id: str, social_account_id: str, key: str, day: datetime
    ) -> None:
        await self.stub.ReleaseDailyPost(
            apb.DailyPostRequest(
                organization_id=organization_id,
                account=social_ref(social_account_id),
                post_uuid=key,
                post_date=timestamp(day),
            )
        )

    async def credits(self, organization_id: str) -> int:
        reply = await self.stub.GetCredits(apb.GetCreditsRequest(organization_id=organization_id))
        return int(reply.balance)

    async def consume_credit(self, organization_id: str, key: str) -> bool:
        reply = await self.stub.ConsumeCredit(
            apb.ConsumeCreditRequest(organization_id=organization_id, post_uuid=key)
        )
        return bool(reply.consumed)

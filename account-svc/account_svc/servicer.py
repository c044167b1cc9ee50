"""Thin gRPC methods of AccountService: proto in, domain call, proto out."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import KW_ONLY, dataclass, field
from datetime import datetime
from typing import Any

import grpc

from account_svc.connections.access_tokens import AccessTokens
from account_svc.connections.connect_flow import ConnectFlow
from account_svc.connections.connect_links import ConnectLinks
from account_svc.connections.connected_accounts import (
    AccountRef,
    ConnectedAccount,
    ConnectedAccounts,
)
from account_svc.connections.credits import Credits
from account_svc.connections.daily_limits import DailyLimits, DailyReservation
from account_svc.connections.mentions import MentionResolver
from account_svc.connections.token_keeper import TokenKeeper
from account_svc.convert import (
    LINK_STATUS,
    account_pb,
    account_ref,
    calendar_feed_pb,
    connection_name,
    credential_pb,
    link_pb,
    organization_pb,
    post_date,
    reservation_pb,
    role_of,
    session_pb,
    user_pb,
)
from account_svc.identity.calendar_feeds import CalendarFeeds
from account_svc.identity.credentials import Credentials
from account_svc.identity.organizations import Organizations
from account_svc.identity.ratelimit import RateLimiter
from account_svc.identity.sessions import AppSessions
from account_svc.identity.users import Users
from account_svc.identity.workspace_users import WorkspaceUsers
from storypost.account.v1 import account_pb2 as pb
from storypost.account.v1 import account_pb2_grpc
from storypost_runtime.component import component
from storypost_runtime.errors import InvalidArgument
from storypost_runtime.protobuf import timestamp, to_datetime
from storypost_runtime.vocabulary import PHOTOAPP

# CheckAccounts: accounts one call may name.
MAX_CHECKED_ACCOUNTS = 100

Context = grpc.aio.ServicerContext[Any, Any]
# What GetConnectedAccount and DeleteConnectedAccount call: (organization id, ref) -> account.
AccountCall = Callable[[str, AccountRef], Awaitable[ConnectedAccount]]
# What ReserveDailyPost and ReleaseDailyPost call: (organization id, ref, post uuid, date).
DailyPostCall = Callable[[str, AccountRef, str, datetime], Awaitable[DailyReservation]]


@dataclass(frozen=True)
class ConnectedAccountParts:
    """The domain objects behind the connected-account RPCs (issue #4)."""

    accounts: ConnectedAccounts
    tokens: AccessTokens
    mentions: MentionResolver
    daily_limits: DailyLimits
    credits: Credits
    links: ConnectLinks
    connect: ConnectFlow
    keeper: TokenKeeper


@component
class AccountServicer(account_pb2_grpc.AccountServiceServicer):
    _: KW_ONLY
    organizations: Organizations
    credentials: Credentials
    users: Users
    rate_limiter: RateLimiter
    connected: ConnectedAccountParts
    sessions: AppSessions
    calendar_feeds: CalendarFeeds
    _workspace_users: WorkspaceUsers = field(init=False)

    def __post_init__(self) -> None:
        self._workspace_users = WorkspaceUsers(self.users, self.sessions)

    async def CreateOrganization(
        self, request: pb.CreateOrganizationRequest, context: Context
    ) -> pb.Organization:
        return organization_pb(await self.organizations.create(request.name))

    async def GetOrganization(
        self, request: pb.GetOrganizationRequest, context: Context
    ) -> pb.Organization:
        return organization_pb(await self.organizations.get(request.organization_id))

    async def CreateApiCredential(
        self, request: pb.CreateApiCredentialRequest, context: Context
    ) -> pb.CreateApiCredentialResponse:
        credential, token = await self.credentials.create(request.organization_id, request.name)
        return pb.CreateApiCredentialResponse(credential=credential_pb(credential), token=token)

    async def ListApiCredentials(
        self, request: pb.ListApiCredentialsRequest, context: Context
    ) -> pb.ListApiCredentialsResponse:
        found = await self.credentials.list(request.organization_id, request.include_revoked)
        return pb.ListApiCredentialsResponse(credentials=[credential_pb(c) for c in found])

    async def RevokeApiCredential(
        self, request: pb.RevokeApiCredentialRequest, context: Context
    ) -> pb.ApiCredential:
        revoked = await self.credentials.revoke(request.organization_id, request.credential_id)
        return credential_pb(revoked)

    async def ListRevokedCredentials(
        self, request: pb.ListRevokedCredentialsRequest, context: Context
    ) -> pb.ListRevokedCredentialsResponse:
        since = to_datetime(request.since) if request.HasField("since") else None
        found = await self.credentials.revoked_since(since)
        return pb.ListRevokedCredentialsResponse(
            credential_ids=found.credential_ids,
            truncated=found.truncated,
            as_of=timestamp(found.as_of),
        )

    async def Authenticate(
        self, request: pb.AuthenticateRequest, context: Context
    ) -> pb.AuthenticateResponse:
        credential = await self.credentials.authenticate(request.token)
        return pb.AuthenticateResponse(
            organization_id=credential.organization_id, credential_id=credential.credential_id
        )

    async def ConsumeRateLimit(
        self, request: pb.ConsumeRateLimitRequest, context: Context
    ) -> pb.ConsumeRateLimitResponse:
        decision = await self.rate_limiter.consume(request.organization_id, request.count)
        return pb.ConsumeRateLimitResponse(
            allowed=decision.allowed,
            limit=decision.limit,
            remaining=decision.remaining,
            retry_after_seconds=decision.retry_after_seconds,
            reset_seconds=decision.reset_seconds,
            taken=decision.taken,
        )

    async def CreateUser(self, request: pb.CreateUserRequest, context: Context) -> pb.User:
        user = await self.users.create(
            request.organization_id,
            request.email,
            request.password,
            role_of(request.role, unspecified="admin"),
        )
        return user_pb(user)

    async def ResolveMention(
        self, request: pb.ResolveMentionRequest, context: Context
    ) -> pb.ResolvedMention:
        user_id, username = await self.connected.mentions.resolve(
            request.organization_id, request.username
        )
        return pb.ResolvedMention(photoapp_user_id=user_id, username=username)

    async def ListConnectedAccounts(
        self, request: pb.ListConnectedAccountsRequest, context: Context
    ) -> pb.ListConnectedAccountsResponse:
        found = await self.connected.accounts.list(
            request.organization_id, request.platform, connection_name(request.connection)
        )
        return pb.ListConnectedAccountsResponse(accounts=[account_pb(a) for a in found])

    async def GetConnectedAccount(
        self, request: pb.GetConnectedAccountRequest, context: Context
    ) -> pb.ConnectedAccount:
        return await _on_account(self.connected.accounts.get, request)

    async def DeleteConnectedAccount(
        self, request: pb.GetConnectedAccountRequest, context: Context
    ) -> pb.ConnectedAccount:
        return await _on_account(self.connected.accounts.delete, request)

    async def MarkAccountDisconnected(
        self, request: pb.MarkAccountDisconnectedRequest, context: Context
    ) -> pb.ConnectedAccount:
        account = await self.connected.accounts.mark_disconnected(
            request.organization_id, account_ref(request.account), request.reason
        )
        return account_pb(account)

    async def GetAccessToken(
        self, request: pb.GetAccessTokenRequest, context: Context
    ) -> pb.AccessToken:
        account, token, expires_at = await self.connected.tokens.get(
            request.organization_id,
            account_ref(request.account),
            force_refresh=request.force_refresh,
        )
        return pb.AccessToken(
            access_token=token,
            expires_at=timestamp(expires_at),
            social_account_id=account.social_account_id,
            platform=account.platform.name,
            platform_account_id=account.platform_account_id,
            username=account.username,
        )

    async def CreateCalendarFeed(
        self, request: pb.CreateCalendarFeedRequest, context: Context
    ) -> pb.CreatedCalendarFeed:
        feed, token = await self.calendar_feeds.create(request.organization_id, request.name)
        return pb.CreatedCalendarFeed(feed=calendar_feed_pb(feed), token=token)

    async def ListCalendarFeeds(
        self, request: pb.ListCalendarFeedsRequest, context: Context
    ) -> pb.ListCalendarFeedsResponse:
        feeds = await self.calendar_feeds.list(request.organization_id)
        return pb.ListCalendarFeedsResponse(feeds=[calendar_feed_pb(f) for f in feeds])

    async def RevokeCalendarFeed(
        self, request: pb.RevokeCalendarFeedRequest, context: Context
    ) -> pb.CalendarFeed:
        return calendar_feed_pb(
            await self.calendar_feeds.revoke(request.organization_id, request.feed_id)
        )

    async def ResolveCalendarFeed(
        self, request: pb.ResolveCalendarFeedRequest, context: Context
    ) -> pb.CalendarFeed:
        return calendar_feed_pb(await self.calendar_feeds.resolve(request.token))

    async def CheckAccounts(
        self, request: pb.CheckAccountsRequest, context: Context
    ) -> pb.CheckAccountsResponse:
        if len(request.social_account_ids) > MAX_CHECKED_ACCOUNTS:
            raise InvalidArgument(
                f"at most {MAX_CHECKED_ACCOUNTS} accounts per call",
                field_violations={"social_account_ids": ["too many"]},
            )
        found = await self.connected.keeper.check(
            request.organization_id, list(request.social_account_ids)
        )
        return pb.CheckAccountsResponse(
            accounts=[
                pb.AccountHealth(social_account_id=account_id, status=status.value)
                for account_id, status in found.items()
            ]
        )

    async def ReserveDailyPost(
        self, request: pb.DailyPostRequest, context: Context
    ) -> pb.DailyPostReservation:
        return await _on_daily_post(self.connected.daily_limits.reserve, request)

    async def ReleaseDailyPost(
        self, request: pb.DailyPostRequest, context: Context
    ) -> pb.DailyPostReservation:
        return await _on_daily_post(self.connected.daily_limits.release, request)

    async def GetCredits(self, request: pb.GetCreditsRequest, context: Context) -> pb.CreditBalance:
        balance = await self.connected.credits.get(request.organization_id)
        return pb.CreditBalance(organization_id=request.organization_id, balance=balance)

    async def ConsumeCredit(
        self, request: pb.ConsumeCreditRequest, context: Context
    ) -> pb.ConsumeCreditResponse:
        taken = await self.connected.credits.consume(request.organization_id, request.post_uuid)
        return pb.ConsumeCreditResponse(
            consumed=taken.consumed, already_consumed=taken.already_consumed, balance=taken.balance
        )

    async def SetCredits(self, request: pb.SetCreditsRequest, context: Context) -> pb.CreditBalance:
        balance = await self.connected.credits.set(request.organization_id, request.credits)
        return pb.CreditBalance(organization_id=request.organization_id, balance=balance)

    async def CreateConnectLink(
        self, request: pb.CreateConnectLinkRequest, context: Context
    ) -> pb.ConnectLink:
        link = await self.connected.links.create(
            request.organization_id, request.connect_link_uuid, request.description
        )
        return link_pb(link)

    async def GetConnectLink(
        self, request: pb.GetConnectLinkRequest, context: Context
    ) -> pb.ConnectLinkView:
        link = await self.connected.links.by_token(request.token)
        organization = await self.organizations.get(link.organization_id)
        return pb.ConnectLinkView(
            organization_name=organization.name,
            description=link.description,
            status=LINK_STATUS[link.status],
            platform=PHOTOAPP.name,
            connected_username=link.connected_username,
        )

    async def StartConnect(
        self, request: pb.StartConnectRequest, context: Context
    ) -> pb.StartConnectResponse:
        target = request.WhichOneof("target")
        started = await self.connected.connect.start(
            link_token=request.connect_link_token if target == "connect_link_token" else None,
            organization_id=request.organization_id if target == "organization_id" else None,
            platform_name=request.platform,
            connection=connection_name(request.connection),
            redirect_uri=request.redirect_uri,
        )
        return pb.StartConnectResponse(
            authorize_url=started.authorize_url,
            state=started.state,
            expires_at=timestamp(started.expires_at),
        )

    async def CompleteConnect(
        self, request: pb.CompleteConnectRequest, context: Context
    ) -> pb.CompleteConnectResponse:
        done = await self.connected.connect.complete(request.state, request.code, request.error)
        return pb.CompleteConnectResponse(
            account=account_pb(done.account),
            organization_name=done.organization_name,
            connect_link_uuid=done.connect_link_uuid,
        )

    async def VerifyUserPassword(
        self, request: pb.VerifyUserPasswordRequest, context: Context
    ) -> pb.User:
        user = await self.users.verify(request.organization_id, request.email, request.password)
        return user_pb(user)

    async def ListConnectLinks(
        self, request: pb.ListConnectLinksRequest, context: Context
    ) -> pb.ListConnectLinksResponse:
        links = await self.connected.links.list(request.organization_id)
        return pb.ListConnectLinksResponse(links=[link_pb(link) for link in links])

    async def SignIn(self, request: pb.SignInRequest, context: Context) -> pb.SignInResponse:
        session, token = await self.sessions.sign_in(
            request.organization_id,
            request.email,
            request.password,
            request.client_ip,
            request.user_agent,
        )
        return pb.SignInResponse(session_token=token, session=session_pb(session))

    async def GetSession(self, request: pb.GetSessionRequest, context: Context) -> pb.AppSession:
        return session_pb(await self.sessions.get(request.organization_id, request.session_token))

    async def EndSession(
        self, request: pb.EndSessionRequest, context: Context
    ) -> pb.EndSessionResponse:
        return pb.EndSessionResponse(ended=await self.sessions.end(request.session_token))

    async def ListUsers(
        self, request: pb.ListUsersRequest, context: Context
    ) -> pb.ListUsersResponse:
        users = await self._workspace_users.list(request.organization_id, request.session_token)
        return pb.ListUsersResponse(users=[user_pb(user) for user in users])

    async def AddUser(self, request: pb.AddUserRequest, context: Context) -> pb.User:
        user = await self._workspace_users.add(
            request.organization_id,
            request.session_token,
            request.email,
            request.password,
            role_of(request.role, unspecified="member"),
        )
        return user_pb(user)

    async def RemoveUser(self, request: pb.RemoveUserRequest, context: Context) -> pb.User:
        user = await self._workspace_users.remove(
            request.organization_id, request.session_token, request.user_id
        )
        return user_pb(user)

    async def SetUserPassword(
        self, request: pb.SetUserPasswordRequest, context: Context
    ) -> pb.User:
        user = await self._workspace_users.set_password(
            request.organization_id, request.session_token, request.user_id, request.password
        )
        return user_pb(user)

    async def SetTimeZone(self, request: pb.SetTimeZoneRequest, context: Context) -> pb.AppSession:
        session = await self._workspace_users.set_time_zone(
            request.organization_id, request.session_token, request.time_zone
        )
        return session_pb(session)


async def _on_account(
    call: AccountCall, request: pb.GetConnectedAccountRequest
) -> pb.ConnectedAccount:
    """The account a request names, through `call` (get or delete), as a message."""
    return account_pb(await call(request.organization_id, account_ref(request.account)))


async def _on_daily_post(
    call: DailyPostCall, request: pb.DailyPostRequest
) -> pb.DailyPostReservation:
    """A daily post reservation of the request, through `call` (reserve or release)."""
    reservation = await call(
        request.organization_id, account_ref(request.account), request.post_uuid, post_date(request)
    )
    return reservation_pb(reservation)

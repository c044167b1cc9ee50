"""The OAuth-like connect flow: a session per sign-in (state → who and where), then the code
exchanged for tokens, the profile read and the account stored."""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import KW_ONLY, dataclass
from datetime import datetime, timedelta
from urllib.parse import urlsplit

from pymongo import ReturnDocument

from account_svc.connections.connect_links import USED_REASON, ConnectLink, ConnectLinks
from account_svc.connections.connected_accounts import (
    AccountRef,
    ConnectedAccount,
    ConnectedAccounts,
)
from account_svc.connections.platform_api import (
    Destination,
    Failure,
    PlatformApi,
    PlatformError,
    Profile,
    TokenGrant,
)
from account_svc.connections.platforms import ConnectionKind, Platform, by_key, by_name
from account_svc.identity.organizations import Organizations
from account_svc.records import AccountCollections
from storypost_runtime.clock import Clock
from storypost_runtime.component import component
from storypost_runtime.errors import FailedPrecondition, InvalidArgument, NotFound, Unavailable
from storypost_runtime.logs import get_logger
from storypost_runtime.vocabulary import PHOTOAPP

log = get_logger(__name__)
SESSION_LIFETIME = timedelta(minutes=15)
# Completed sessions are remembered a day, so reloading the callback page shows the result.
SESSION_KEPT = timedelta(days=1)
LINK_USED = "this connect link was already used to connect an account"


@dataclass(frozen=True)
class Started:
    authorize_url: str
    state: str
    expires_at: datetime


@dataclass(frozen=True)
class Completed:
    account: ConnectedAccount
    organization_name: str
    connect_link_uuid: str


def _session_id(state: str) -> str:
    return hashlib.sha256(state.encode()).hexdigest()


def pick_connection(platform: Platform, wanted: str) -> ConnectionKind:
    if not wanted:
        return platform.default_connection
    if wanted not in platform.connections:
        raise InvalidArgument(
            f"{platform.name} accounts cannot be connected {wanted}ly; use "
            + " or ".join(platform.connections)
        )
    return wanted


@component
class ConnectFlow:
    _: KW_ONLY
    records: AccountCollections
    accounts: ConnectedAccounts
    links: ConnectLinks
    organizations: Organizations
    api: PlatformApi
    clock: Clock
    default_redirect_uri: str

    async def start(
        self,
        *,
        link_token: str | None,
        organization_id: str | None,
        platform_name: str,
        connection: str,
        redirect_uri: str,
    ) -> Started:
        link: ConnectLink | None = None
        if link_token:
            link = await self.links.by_token(link_token)
            if link.status == "used":
                raise FailedPrecondition(LINK_USED, reason=USED_REASON)
            organization_id = link.organization_id
            platform_name = platform_name or PHOTOAPP.name
            if platform_name.upper() != PHOTOAPP.name:
                raise InvalidArgument("connect links connect photoapp accounts only")
        elif organization_id:
            await self.organizations.get(organization_id)
        else:
            raise InvalidArgument("give a connect link token or an organization id")
        platform = by_name(platform_name)
        if platform is None:
            raise InvalidArgument(f"unknown platform {platform_name!r}")
        kind = pick_connection(platform, connection)
        redirect = redirect_uri or self.default_redirect_uri
        parts = urlsplit(redirect)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise InvalidArgument("redirect_uri must be an http(s) URL")
        state = secrets.token_urlsafe(32)
        now = self.clock.now()
        await self.records.connect_sessions.insert_one(
            {
                "_id": _session_id(state),
                "organizationId": organization_id,
                "platform": platform.key,
                "connection": kind,
                "linkId": link.link_id if link else None,
                "redirectUri": redirect,
                "createdAt": now,
                "expiresAt": now + SESSION_LIFETIME,
                "purgeAt": now + SESSION_KEPT,
                "completed": False,
            }
        )
        return Started(
            self.api.authorize_url(platform.key, redirect, state), state, now + SESSION_LIFETIME
        )

    async def complete(self, state: str, code: str, error: str) -> Completed:
        session_id = _session_id(state)
        session = (
            await self.records.connect_sessions.find_one({"_id": session_id}) if state else None
        )
        if session is None:
            raise NotFound("this sign-in is unknown or expired; start again")
        organization = await self.organizations.get(session["organizationId"])
        link = await self.links.by_id(session["linkId"]) if session.get("linkId") else None
        link_uuid = link.connect_link_uuid if link else ""
        if session.get("completed"):
            account = await self.accounts.get(
                organization.organization_id, AccountRef("id", session["socialAccountId"])
            )
            return Completed(account, organization.name, link_uuid)
        if session["expiresAt"] < self.clock.now():
            raise NotFound("this sign-in has expired; start again")
        _check_answer(error, code)
        if link is not None and link.status == "used":
            raise FailedPrecondition(LINK_USED, reason=USED_REASON)
        platform = by_key(session["platform"])
        assert platform is not None
        grant, profile, destinations = await self._sign_in(platform, code, session["redirectUri"])
        if link is not None and not await self.links.claim(link.link_id, session_id):
            raise FailedPrecondition(LINK_USED, reason=USED_REASON)
        account = await self.accounts.connect(
            organization.organization_id,
            platform,
            session["connection"],
            profile,
            grant,
            destinations,
            link_uuid or None,
        )
        if link is not None:
            await self.links.record_account(
                link.link_id, account.social_account_id, account.username
            )
        await self.records.connect_sessions.find_one_and_update(
            {"_id": session_id},
            {"$set": {"completed": True, "socialAccountId": account.social_account_id}},
            return_document=ReturnDocument.AFTER,
        )
        log.info(
            "account connected",
            organization_id=organization.organization_id,
            platform=platform.name,
            social_account_id=account.social_account_id,
        )
        return Completed(account, organization.name, link_uuid)

    async def _sign_in(
        self, platform: Platform, code: str, redirect_uri: str
    ) -> tuple[TokenGrant, Profile, list[Destination]]:
        """Trades the code for tokens and reads who signed in (and, for photoapp, the linknet
        pages it may post to)."""
        try:
            grant = await self.api.exchange_code(platform.key, code, redirect_uri)
            profile = await self.api.profile(platform.key, grant.access_token)
            destinations: list[Destination] = (
                await self.api.linknet_destinations(grant.access_token)
                if platform.key == "photoapp"
                else []
            )
        except PlatformError as failure:
            if failure.failure in (Failure.UNAVAILABLE, Failure.RATE_LIMITED):
                raise Unavailable(f"{platform.name} is not answering; try again") from None
            raise FailedPrecondition(
                f"{platform.name} refused the sign-in: {failure.message}", reason="CONNECT_REFUSED"
            ) from None
        return grant, profile, destinations


def _check_answer(error: str, code: str) -> None:
    """The platform's redirect back: a code, or the error it gave instead."""
    if error:
        raise FailedPrecondition(
            "the account owner did not allow access"
            if error == "access_denied"
            else f"the platform answered: {error}",
            reason="CONNECT_DENIED",
        )
    if not code:
        raise InvalidArgument("the platform sent no code")

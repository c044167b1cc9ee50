"""Connected platform accounts of organizations: stored, found, listed, disconnected, deleted.

Tokens are stored only encrypted (TokenCipher) and never leave this module except through
`tokens_of` (for GetAccessToken and mention lookups).
"""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from dataclasses import KW_ONLY, dataclass
from datetime import UTC, datetime
from typing import Literal

from pymongo import ASCENDING, DESCENDING, ReturnDocument
from pymongo.errors import DuplicateKeyError

from account_svc.connections.platform_api import Destination, Profile, TokenGrant
from account_svc.connections.platforms import (
    ConnectionKind,
    Platform,
    PostTypeSpec,
    by_key,
    by_name,
)
from account_svc.connections.token_crypto import TokenCipher
from account_svc.records import AccountCollections
from storypost_runtime.clock import Clock
from storypost_runtime.component import component
from storypost_runtime.errors import InvalidArgument, NotFound, Unavailable
from storypost_runtime.mongo import Document
from storypost_runtime.outbox import OUTBOX_FIELD, Event, new_record_outbox, with_event
from storypost_runtime.vocabulary import ACCOUNT_STATUS_EVENT, AccountStatus

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
# Never read back by listings or lookups.
SECRET_FIELDS = ("accessToken", "refreshToken")
# Nor are the events waiting in its outbox.
PUBLIC_PROJECTION = {**{name: 0 for name in SECRET_FIELDS}, OUTBOX_FIELD: 0}
REASON_MAX = 500
# The token keeper's bookkeeping (token_keeper.py), cleared by every new grant and status.
REFRESH_STATE = {"refreshFailures": "", "refreshRetryAt": "", "refreshLease": ""}


@dataclass(frozen=True)
class ConnectedAccount:
    social_account_id: str
    organization_id: str
    platform: Platform
    connection: ConnectionKind
    platform_account_id: str
    username: str
    display_name: str
    profile_picture_url: str
    disconnected: bool
    linknet_destinations: tuple[Destination, ...]
    connected_at: datetime
    disconnected_at: datetime | None = None
    disconnect_reason: str = ""
    deleted_at: datetime | None = None

    @classmethod
    def from_doc(cls, doc: Document) -> ConnectedAccount:
        platform = by_key(doc["platform"])
        if platform is None:
            raise ValueError(f"unknown platform {doc['platform']!r} in {doc['_id']}")
        return cls(
            social_account_id=doc["_id"],
            organization_id=doc["organizationId"],
            platform=platform,
            connection=doc["connection"],
            platform_account_id=doc["platformAccountId"],
            username=doc.get("username") or "",
            display_name=doc.get("displayName") or "",
            profile_picture_url=doc.get("profilePictureUrl") or "",
            disconnected=bool(doc.get("disconnected")),
            linknet_destinations=tuple(
                Destination(d["id"], d["name"], d["type"])
                for d in doc.get("linknetDestinations") or ()
            ),
            connected_at=doc["connectedAt"],
            disconnected_at=doc.get("disconnectedAt"),
            disconnect_reason=doc.get("disconnectReason") or "",
            deleted_at=doc.get("deletedAt"),
        )

    @property
    def post_types(self) -> tuple[PostTypeSpec, ...]:
        return self.platform.post_types.get(self.connection, ())


@dataclass(frozen=True)
class StoredTokens:
    """Decrypted tokens of one account (None when no key opens them any more)."""

    access_token: str | None
    refresh_token: str | None
    access_expires_at: datetime


@dataclass(frozen=True)
class AccountRef:
    """Names one account of an organization (exactly one way)."""

    kind: Literal["id", "username", "clipapp"]
    value: str
    # Uppercase platform name (kind "username" only).
    platform: str = ""


def username_key(username: str) -> str:
    return username.strip().removeprefix("@").lower()


def new_social_account_id() -> str:
    return "sa_" + secrets.token_hex(10)


@component
class ConnectedAccounts:
    _: KW_ONLY
    records: AccountCollections
    clock: Clock
    cipher: TokenCipher

    def ref_filter(self, organization_id: str, ref: AccountRef, *, live: bool = True) -> Document:
        """The query of one account of the organization (`live`: not deleted)."""
        query: Document = {"organizationId": organization_id}
        if live:
            query["deletedAt"] = None
        match ref.kind:
            case "id":
                query["_id"] = ref.value
            case "username":
                platform = by_name(ref.platform)
                if platform is None:
                    raise InvalidArgument(f"unknown platform {ref.platform!r}")
                query |= {
                    "platform": platform.key,
                    "connection": "direct",
                    "usernameKey": username_key(ref.value),
                }
            case "clipapp":
                query |= {
                    "platform": "clipapp",
                    "connection": "direct",
                    "platformAccountId": ref.value,
                }
        return query

    async def find_doc(
        self,
        organization_id: str,
        ref: AccountRef,
        projection: Document | None = None,
        *,
        live: bool = True,
    ) -> Document:
        if not ref.value:
            raise InvalidArgument("name the account: social_account_id, username or clipapp id")
        doc = await self.records.connected_accounts.find_one(
            self.ref_filter(organization_id, ref, live=live),
            projection,
            sort=[("connectedAt", DESCENDING)],
        )
        if doc is None:
            raise NotFound(f"no connected account {_describe(ref)} in this organization")
        return doc

    async def get(
        self, organization_id: str, ref: AccountRef, *, live: bool = True
    ) -> ConnectedAccount:
        return ConnectedAccount.from_doc(
            await self.find_doc(organization_id, ref, PUBLIC_PROJECTION, live=live)
        )

    async def list(
        self, organization_id: str, platform: str = "", connection: str = ""
    ) -> list[ConnectedAccount]:
        query: Document = {"organizationId": organization_id, "deletedAt": None}
        if platform:
            found = by_name(platform)
            if found is None:
                raise InvalidArgument(f"unknown platform {platform!r}")
            query["platform"] = found.key
        if connection:
            query["connection"] = connection
        cursor = self.records.connected_accounts.find(query, PUBLIC_PROJECTION).sort(
            "createdAt", ASCENDING
        )
        return [ConnectedAccount.from_doc(doc) async for doc in cursor]

    async def connect(
        self,
        organization_id: str,
        platform: Platform,
        connection: ConnectionKind,
        profile: Profile,
        grant: TokenGrant,
        destinations: Sequence[Destination],
        connect_link_uuid: str | None = None,
    ) -> ConnectedAccount:
        """Stores (or refreshes) the connection; connecting again clears `disconnected`.

        A new connection, or one that needed a reconnect or was deleted, becomes `connected`
        with its `account.status_changed` event in the same write; reconnecting a connected
        account changes no status and sends none. A grant without a refresh token (a platform
        that does not rotate it) keeps the stored one.
        """
        now = self.clock.now()
        key = {
            "organizationId": organization_id,
            "platform": platform.key,
            "connection": connection,
            "platformAccountId": profile.account_id,
        }
        fields: Document = {
            "username": profile.username,
            "usernameKey": username_key(profile.username),
            "displayName": profile.display_name or profile.username,
            "profilePictureUrl": profile.picture_url,
            "linknetDestinations": [
                {"id": d.id, "name": d.name, "type": d.type} for d in destinations
            ],
            **self._token_fields(grant),
            "disconnected": False,
            "deletedAt": None,
            "connectedAt": now,
            "updatedAt": now,
            "connectLinkUuid": connect_link_uuid,
        }
        # Each pass reads what is stored, then writes only if it is still so: two connects of
        # one account racing send one event between them.
        for _ in range(5):
            doc = await self._connect_once(key, fields, platform, now)
            if doc is not None:
                return ConnectedAccount.from_doc(doc)
        raise Unavailable("the account changed while it was connected; try again")

    async def _connect_once(
        self, key: Document, fields: Document, platform: Platform, now: datetime
    ) -> Document | None:
        """One try of `connect`; None when another write came first (try again)."""
        accounts = self.records.connected_accounts
        stored = await accounts.find_one(key, {"_id": 1, "disconnected": 1, "deletedAt": 1})
        clear = {"disconnectedAt": "", "disconnectReason": "", **REFRESH_STATE}
        if stored is None:
            account_id = new_social_account_id()
            event = self._status_event(
                {**key, **fields, "_id": account_id}, AccountStatus.CONNECTED, "connected", now
            )
            record = {
                **key, **fields, "_id": account_id, "createdAt": now, "busyUntil": EPOCH,
                **new_record_outbox(event),
            }  # fmt: skip
            try:
                await accounts.insert_one(record)
            except DuplicateKeyError:
                return None  # connected meanwhile: the next pass updates it
            return {k: v for k, v in record.items() if k not in SECRET_FIELDS}
        healthy = not stored.get("disconnected") and stored.get("deletedAt") is None
        update: Document = {"$set": fields, "$unset": clear}
        if not healthy:
            reason = "connected again" if stored.get("disconnected") else "connected"
            event = self._status_event(
                {**key, **fields, "_id": stored["_id"]}, AccountStatus.CONNECTED, reason, now
            )
            update = with_event(update, event)
        return await accounts.find_one_and_update(
            {
                "_id": stored["_id"],
                "disconnected": stored.get("disconnected"),
                "deletedAt": stored.get("deletedAt"),
            },
            update,
            projection=PUBLIC_PROJECTION,
            return_document=ReturnDocument.AFTER,
        )

    def _token_fields(self, grant: TokenGrant) -> Document:
        """The stored form of a grant: encrypted, and no refresh token when the platform gave
        none (the stored one stays)."""
        fields: Document = {
            "accessToken": self.cipher.encrypt(grant.access_token),
            "accessTokenExpiresAt": grant.access_expires_at,
        }
        if grant.refresh_token:
            fields["refreshToken"] = self.cipher.encrypt(grant.refresh_token)
            fields["refreshTokenExpiresAt"] = grant.refresh_expires_at
        return fields

    def _status_event(
        self, doc: Document, status: AccountStatus, reason: str, now: datetime
    ) -> Event:
        platform = by_key(doc["platform"])
        return Event.new(
            ACCOUNT_STATUS_EVENT.name,
            doc["organizationId"],
            now,
            {
                "socialAccountId": doc["_id"],
                "platform": platform.name if platform else doc["platform"].upper(),
                "username": doc.get("username") or "",
                "status": status.value,
                "reason": reason,
            },
        )

    def tokens_of(self, doc: Document) -> StoredTokens:
        access = doc.get("accessToken")
        refresh = doc.get("refreshToken")
        return StoredTokens(
            self.cipher.decrypt(access) if access else None,
            self.cipher.decrypt(refresh) if refresh else None,
            doc.get("accessTokenExpiresAt") or EPOCH,
        )

    async def store_tokens(self, social_account_id: str, grant: TokenGrant) -> None:
        now = self.clock.now()
        await self.records.connected_accounts.update_one(
            {"_id": social_account_id, "deletedAt": None},
            {
                # Platforms that do not rotate refresh tokens answer none: keep the old one.
                # A refresh the platform granted proves the grant alive: the account's check
                # (token_keeper.py) is that moment.
                "$set": {**self._token_fields(grant), "updatedAt": now, "checkedAt": now},
                "$unset": REFRESH_STATE,
            },
        )

    async def mark_disconnected(
        self, organization_id: str, ref: AccountRef, reason: str
    ) -> ConnectedAccount:
        """The platform refused the account's token for good: `needs_reconnect`, with its
        event, once (marking it again changes nothing)."""
        query = self.ref_filter(organization_id, ref)
        now = self.clock.now()
        said = reason.strip()[:REASON_MAX] or "the platform refused the account's token"
        stored = await self.records.connected_accounts.find_one(
            {**query, "disconnected": False}, PUBLIC_PROJECTION
        )
        doc = None
        if stored is not None:
            event = self._status_event(stored, AccountStatus.NEEDS_RECONNECT, said, now)
            doc = await self.records.connected_accounts.find_one_and_update(
                {"_id": stored["_id"], "deletedAt": None, "disconnected": False},
                with_event(
                    {
                        "$set": {
                            "disconnected": True,
                            "disconnectedAt": now,
                            "disconnectReason": said,
                            "updatedAt": now,
                        },
                        "$unset": REFRESH_STATE,
                    },
                    event,
                ),
                projection=PUBLIC_PROJECTION,
                return_document=ReturnDocument.AFTER,
            )
        if doc is None:
            # Already disconnected (idempotent), or not there at all (NotFound).
            return await self.get(organization_id, ref)
        return ConnectedAccount.from_doc(doc)

    async def delete(self, organization_id: str, ref: AccountRef) -> ConnectedAccount:
        """Soft delete: unlisted, tokens erased. Deleting again returns the deleted record."""
        query = self.ref_filter(organization_id, ref)
        now = self.clock.now()
        doc = None
        stored = await self.records.connected_accounts.find_one(query, PUBLIC_PROJECTION)
        if stored is not None:
            event = self._status_event(stored, AccountStatus.DISCONNECTED, "deleted", now)
            doc = await self.records.connected_accounts.find_one_and_update(
                {"_id": stored["_id"], "deletedAt": None},
                with_event(
                    {
                        "$set": {"deletedAt": now, "updatedAt": now},
                        "$unset": {"accessToken": "", "refreshToken": "", **REFRESH_STATE},
                    },
                    event,
                ),
                projection=PUBLIC_PROJECTION,
                return_document=ReturnDocument.AFTER,
            )
        if doc is None and ref.kind == "id":
            doc = await self.records.connected_accounts.find_one(
                {"_id": ref.value, "organizationId": organization_id}, PUBLIC_PROJECTION
            )
        if doc is None:
            raise NotFound(f"no connected account {_describe(ref)} in this organization")
        return ConnectedAccount.from_doc(doc)


def _describe(ref: AccountRef) -> str:
    match ref.kind:
        case "id":
            return ref.value
        case "username":
            return f"{ref.platform.upper()} @{username_key(ref.value)}"
        case _:
            return f"clipapp {ref.value}"

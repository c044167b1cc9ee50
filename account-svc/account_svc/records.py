"""The collections account-svc owns and their indexes."""

from __future__ import annotations

from dataclasses import dataclass, fields

from pymongo import ASCENDING, DESCENDING, IndexModel
from pymongo.asynchronous.collection import AsyncCollection
from pymongo.asynchronous.database import AsyncDatabase

from storypost_runtime.mongo import Document, ensure_indexes
from storypost_runtime.outbox import OUTBOX_INDEX

# Records whose `purgeAt` has passed are removed by MongoDB itself.
PURGE_INDEX = IndexModel([("purgeAt", ASCENDING)], expireAfterSeconds=0, name="purge")
# The collections named otherwise than their field of AccountCollections.
COLLECTION_NAMES = {"credentials": "api_credentials"}


def unique_in_organization(field: str, name: str) -> IndexModel:
    """No two of an organization's records hold the same `field`."""
    return IndexModel([("organizationId", ASCENDING), (field, ASCENDING)], unique=True, name=name)


@dataclass(frozen=True)
class AccountCollections:
    organizations: AsyncCollection[Document]
    # API credentials, in the collection "api_credentials" (COLLECTION_NAMES).
    credentials: AsyncCollection[Document]
    users: AsyncCollection[Document]
    rate_buckets: AsyncCollection[Document]
    # Connected platform accounts (tokens encrypted), one per (org, platform, connection,
    # platform account).
    connected_accounts: AsyncCollection[Document]
    connect_links: AsyncCollection[Document]
    # OAuth-like connect flows in progress (state -> who and where), short-lived.
    connect_sessions: AsyncCollection[Document]
    # Daily per-platform-account post counters, across organizations.
    daily_post_counters: AsyncCollection[Document]
    credit_balances: AsyncCollection[Document]
    # One record per post that took a credit (makes ConsumeCredit idempotent).
    credit_consumptions: AsyncCollection[Document]
    # App sign-in sessions, keyed by the SHA-256 of their token (sessions.py).
    app_sessions: AsyncCollection[Document]
    # Sign-in attempt buckets per email and per client address (signin_limits.py).
    signin_limits: AsyncCollection[Document]
    # Calendar feeds: secret URLs of the posting plan, their tokens as hashes
    # (identity/calendar_feeds.py).
    calendar_feeds: AsyncCollection[Document]
    # Per organization, the ids of its live feeds (at most MAX_FEEDS, by one conditional
    # write: storypost_runtime.bounded_set), so racing creations never pass the limit.
    calendar_feed_slots: AsyncCollection[Document]

    @classmethod
    def of(cls, db: AsyncDatabase[Document]) -> AccountCollections:
        """Each field's collection: the one named as the field, but for COLLECTION_NAMES."""
        return cls(**{f.name: db[COLLECTION_NAMES.get(f.name, f.name)] for f in fields(cls)})

    async def ensure_indexes(self) -> None:
        await self._ensure_identity_indexes()
        await self._ensure_connection_indexes()

    async def _ensure_identity_indexes(self) -> None:
        """Tokens, users, app sessions and sign-in limits (account_svc/identity)."""
        await ensure_indexes(
            self.credentials,
            [
                IndexModel([("tokenHash", ASCENDING)], unique=True, name="token_hash"),
                IndexModel(
                    [("organizationId", ASCENDING), ("createdAt", DESCENDING)], name="org_created"
                ),
                # The edge's revocation feed (ListRevokedCredentials); active ones have none.
                IndexModel([("revokedAt", ASCENDING)], sparse=True, name="revoked"),
            ],
        )
        await ensure_indexes(
            self.users,
            [unique_in_organization("email", "org_email")],
        )
        await ensure_indexes(
            self.calendar_feeds,
            [
                IndexModel([("tokenHash", ASCENDING)], unique=True, name="token_hash"),
                IndexModel(
                    [("organizationId", ASCENDING), ("createdAt", DESCENDING)], name="org_created"
                ),
            ],
        )
        await ensure_indexes(
            self.app_sessions,
            [
                PURGE_INDEX,
                # A removed user's (or a new password's) sessions are ended at once.
                IndexModel([("userId", ASCENDING)], name="user"),
            ],
        )
        await ensure_indexes(self.signin_limits, [PURGE_INDEX])

    async def _ensure_connection_indexes(self) -> None:
        """Connected accounts, connect links and flows, daily counters
        (account_svc/connections)."""
        await ensure_indexes(
            self.connected_accounts,
            [
                # Connecting the same platform account again updates the one record.
                IndexModel(
                    [
                        ("organizationId", ASCENDING),
                        ("platform", ASCENDING),
                        ("connection", ASCENDING),
                        ("platformAccountId", ASCENDING),
                    ],
                    unique=True,
                    name="org_platform_account",
                ),
                IndexModel(
                    [("organizationId", ASCENDING), ("createdAt", ASCENDING)],
                    name="org_created",
                ),
                IndexModel(
                    [
                        ("organizationId", ASCENDING),
                        ("platform", ASCENDING),
                        ("usernameKey", ASCENDING),
                    ],
                    name="org_platform_username",
                ),
                # The token keeper's pass: tokens that expire soonest.
                IndexModel([("accessTokenExpiresAt", ASCENDING)], name="access_expiry"),
                # `account.status_changed` events waiting for the relay.
                OUTBOX_INDEX,
            ],
        )
        await ensure_indexes(
            self.connect_links,
            [
                unique_in_organization("uuid", "org_uuid"),
                # Slot n is the organization's (n+1)-th link: the 100-link limit holds under
                # concurrent creates because two links can never take the same slot.
                unique_in_organization("slot", "org_slot"),
                IndexModel([("tokenHash", ASCENDING)], unique=True, name="token_hash"),
            ],
        )
        await ensure_indexes(self.connect_sessions, [PURGE_INDEX])
        await ensure_indexes(self.daily_post_counters, [PURGE_INDEX])

"""Builds account-svc from its settings: Mongo, indexes, domain objects, servicer."""

from __future__ import annotations

from contextlib import AsyncExitStack
from datetime import timedelta

import grpc
import httpx
from argon2 import PasswordHasher
from prometheus_client import CollectorRegistry

from account_svc import migrations
from account_svc.callers import RESTRICTIONS, SERVICE_NAME
from account_svc.config import AccountSettings
from account_svc.connections.access_tokens import AccessTokens
from account_svc.connections.connect_flow import ConnectFlow
from account_svc.connections.connect_links import ConnectLinks
from account_svc.connections.connected_accounts import ConnectedAccounts
from account_svc.connections.credits import Credits
from account_svc.connections.daily_limits import DailyLimits
from account_svc.connections.mentions import MentionResolver
from account_svc.connections.platform_api import PlatformApi
from account_svc.connections.token_crypto import TokenCipher
from account_svc.connections.token_keeper import TokenKeeper
from account_svc.identity.calendar_feeds import CalendarFeeds
from account_svc.identity.credentials import Credentials
from account_svc.identity.organizations import Organizations
from account_svc.identity.rate_buckets_kv import FailoverBuckets, KvBuckets, keep_kv_attached
from account_svc.identity.ratelimit import BucketStore, MongoBuckets, RateLimiter
from account_svc.identity.sessions import AppSessions
from account_svc.identity.signin_limits import Bucket, SignInLimits
from account_svc.identity.users import Users
from account_svc.records import AccountCollections
from account_svc.servicer import AccountServicer, ConnectedAccountParts
from storypost.account.v1 import account_pb2_grpc
from storypost_runtime.clock import Clock, SystemClock
from storypost_runtime.migrations import check_at_start
from storypost_runtime.mongo import mongo_client
from storypost_runtime.outbox import OutboxMetrics, start_outbox_relay
from storypost_runtime.service import ServiceParts
from storypost_runtime.tasks import background


async def build(
    settings: AccountSettings,
    stack: AsyncExitStack,
    registry: CollectorRegistry,
    clock: Clock | None = None,
) -> ServiceParts:
    clock = clock or SystemClock()
    client = mongo_client(settings, "account-svc")
    stack.push_async_callback(client.close)
    db = client[settings.mongo_database]
    await check_at_start(migrations.plan(db), settings)
    records = AccountCollections.of(db)
    http = await stack.enter_async_context(
        httpx.AsyncClient(timeout=settings.platform_timeout_seconds, follow_redirects=False)
    )
    organizations = Organizations(records, clock)
    users = Users(records=records, clock=clock, hasher=PasswordHasher())
    connected = connected_parts(settings, records, organizations, http, clock)
    servicer = AccountServicer(
        organizations=organizations,
        credentials=Credentials(records, clock),
        users=users,
        rate_limiter=RateLimiter(
            store=await rate_buckets(settings, records, stack, registry),
            clock=clock,
            per_minute=settings.rate_limit_per_minute,
        ),
        connected=connected,
        sessions=app_sessions(settings, records, users, clock),
        calendar_feeds=CalendarFeeds(records, clock),
    )
    # Account health: tokens kept fresh, and `account.status_changed` events relayed to
    # webhook-svc once NATS answers (account-svc serves without it; events wait meanwhile).
    await stack.enter_async_context(background(connected.keeper.run(), "token keeper"))
    await start_outbox_relay(
        stack,
        settings,
        [records.connected_accounts],
        name="account-svc events",
        metrics=OutboxMetrics.create(registry),
        serves_without_nats=True,
    )

    def register(server: grpc.aio.Server) -> None:
        account_pb2_grpc.add_AccountServiceServicer_to_server(servicer, server)

    return ServiceParts([SERVICE_NAME], register, RESTRICTIONS)


async def rate_buckets(
    settings: AccountSettings,
    records: AccountCollections,
    stack: AsyncExitStack,
    registry: CollectorRegistry,
) -> BucketStore:
    """The rate-limit buckets: NATS key-value (attached in the background, so account-svc
    starts and limits without NATS) over MongoDB's, or MongoDB's alone."""
    mongo = MongoBuckets(records)
    if settings.rate_limit_store == "mongo":
        return mongo
    kv = KvBuckets()
    attach = keep_kv_attached(
        settings,
        kv,
        bucket=settings.rate_limit_nats_bucket,
        timeout_seconds=settings.rate_limit_nats_timeout_seconds,
    )
    await stack.enter_async_context(background(attach, "rate limit buckets"))
    return FailoverBuckets(primary=kv, fallback=mongo, registry=registry)


def connected_parts(
    settings: AccountSettings,
    records: AccountCollections,
    organizations: Organizations,
    http: httpx.AsyncClient,
    clock: Clock,
) -> ConnectedAccountParts:
    """The connected-account domain objects, wired to their collaborators."""
    cipher = TokenCipher(settings.token_keys())
    api = PlatformApi(
        http=http,
        clock=clock,
        api_url=settings.sandbox_url,
        browser_url=settings.browser_sandbox_url(),
        client_id=settings.platform_client_id,
        client_secret=settings.platform_client_secret.get_secret_value(),
    )
    accounts = ConnectedAccounts(records=records, clock=clock, cipher=cipher)
    tokens = AccessTokens(accounts=accounts, api=api, clock=clock)
    links = ConnectLinks(records=records, clock=clock, cipher=cipher)
    return ConnectedAccountParts(
        accounts=accounts,
        tokens=tokens,
        keeper=TokenKeeper(
            records=records,
            tokens=tokens,
            clock=clock,
            horizon=timedelta(seconds=settings.token_refresh_horizon_seconds),
            check_interval=timedelta(seconds=settings.account_check_interval_seconds),
            poll_seconds=settings.token_keeper_poll_seconds,
        ),
        mentions=MentionResolver(
            records=records,
            accounts=accounts,
            tokens=tokens,
            api=api,
            clock=clock,
            lease_seconds=settings.mention_lease_seconds,
            cooldown_seconds=settings.mention_rate_limit_cooldown_seconds,
        ),
        daily_limits=DailyLimits(records=records, accounts=accounts, clock=clock),
        credits=Credits(records=records, clock=clock, default_credits=settings.default_credits),
        links=links,
        connect=ConnectFlow(
            records=records,
            accounts=accounts,
            links=links,
            organizations=organizations,
            api=api,
            clock=clock,
            default_redirect_uri=settings.connect_callback_url(),
        ),
    )


def app_sessions(
    settings: AccountSettings, records: AccountCollections, users: Users, clock: Clock
) -> AppSessions:
    """The app's sign-in sessions with their attempt limits."""
    window = settings.signin_window_minutes * 60
    limits = SignInLimits(
        records=records,
        clock=clock,
        per_email=Bucket(settings.signin_attempts_per_email, window),
        per_address=Bucket(settings.signin_attempts_per_address, window),
        per_address_everywhere=Bucket(settings.signin_attempts_per_address_everywhere, window),
    )
    return AppSessions(
        records=records,
        clock=clock,
        users=users,
        limits=limits,
        idle=timedelta(minutes=settings.app_session_idle_minutes),
        lifetime=timedelta(hours=settings.app_session_max_hours),
    )

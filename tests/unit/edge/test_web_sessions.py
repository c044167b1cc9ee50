"""account-svc's app sessions: hashed tokens, expiry, sign-out, the sign-in limits per
email and per client address, and workspace users managed from the app (admins only) with
their time zone."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, cast

import pytest
from argon2 import PasswordHasher
from pymongo.asynchronous.database import AsyncDatabase

from account_svc.connections.connect_links import ConnectLinks
from account_svc.connections.token_crypto import TokenCipher
from account_svc.convert import role_of, session_pb
from account_svc.identity.organizations import Organizations
from account_svc.identity.sessions import AppSessions, hash_session_token
from account_svc.identity.signin_limits import Bucket, SignInLimits
from account_svc.identity.users import Users
from account_svc.identity.workspace_users import NOT_ADMIN, WorkspaceUsers
from account_svc.records import AccountCollections
from storypost.account.v1 import account_pb2 as pb
from storypost_runtime.clock import FrozenClock
from storypost_runtime.errors import (
    FailedPrecondition,
    InvalidArgument,
    PermissionDenied,
    ResourceExhausted,
    Unauthenticated,
)
from storypost_runtime.mongo import Document
from tests.support.accounts import TEST_TOKEN_KEY

PASSWORD = "correct horse battery"


@dataclass
class World:
    records: AccountCollections
    clock: FrozenClock
    sessions: AppSessions
    users: Users
    organizations: Organizations


@pytest.fixture
async def world(db: AsyncDatabase[Document]) -> AsyncIterator[World]:
    records = AccountCollections.of(db)
    await records.ensure_indexes()
    # Near real time: the embedded MongoDB drops records whose TTL time has passed.
    clock = FrozenClock(datetime.now(UTC).replace(microsecond=0))
    # A cheap argon2 setting: the tests are about sessions, not hashing cost.
    users = Users(
        records=records,
        clock=clock,
        hasher=PasswordHasher(time_cost=1, memory_cost=1024, parallelism=1),
    )
    limits = SignInLimits(
        records=records,
        clock=clock,
        per_email=Bucket(3, 300),
        per_address=Bucket(5, 300),
        per_address_everywhere=Bucket(12, 300),
    )
    sessions = AppSessions(
        records=records,
        clock=clock,
        users=users,
        limits=limits,
        idle=timedelta(hours=2),
        lifetime=timedelta(hours=12),
    )
    yield World(records, clock, sessions, users, Organizations(records, clock))


async def _org_with_user(world: World, email: str = "ana@example.com") -> str:
    org = (await world.organizations.create("Acme")).organization_id
    await world.users.create(org, email, PASSWORD)
    return org


async def test_sign_in_stores_only_the_token_hash(world: World) -> None:
    org = await _org_with_user(world)
    session, token = await world.sessions.sign_in(
        org, "Ana@Example.com", PASSWORD, "10.0.0.1", "UA"
    )
    assert len(token) == 43
    assert session.email == "ana@example.com" and session.organization_id == org
    raw = await world.records.app_sessions.find_one({})
    assert raw is not None and token not in str(raw)
    assert raw["_id"] == hash_session_token(token)
    assert (await world.sessions.get(org, token)).session_id == session.session_id


async def test_a_session_works_only_in_its_organization(world: World) -> None:
    org = await _org_with_user(world)
    other = await _org_with_user(world)
    _, token = await world.sessions.sign_in(org, "ana@example.com", PASSWORD, "", "")
    with pytest.raises(Unauthenticated):
        await world.sessions.get(other, token)
    for bad in ("", "x" * 43, token[:-1], token + "a"):
        with pytest.raises(Unauthenticated):
            await world.sessions.get(org, bad)


async def test_sign_out_ends_the_session_at_once(world: World) -> None:
    org = await _org_with_user(world)
    _, token = await world.sessions.sign_in(org, "ana@example.com", PASSWORD, "", "")
    assert await world.sessions.end(token) is True
    with pytest.raises(Unauthenticated):
        await world.sessions.get(org, token)
    assert await world.sessions.end(token) is False
    assert await world.records.app_sessions.count_documents({}) == 0


async def test_idle_timeout_slides_but_the_lifetime_does_not(world: World) -> None:
    org = await _org_with_user(world)
    session, token = await world.sessions.sign_in(org, "ana@example.com", PASSWORD, "", "")
    assert session.expires_at == world.clock.now() + timedelta(hours=2)
    # Used every 1.5 hours, it lives on until the 12-hour lifetime ends it.
    for _ in range(7):
        world.clock.advance(timedelta(hours=1, minutes=30))
        seen = await world.sessions.get(org, token)
    assert seen.expires_at == session.created_at + timedelta(hours=12)
    world.clock.advance(timedelta(hours=1, minutes=30, seconds=1))
    with pytest.raises(Unauthenticated):
        await world.sessions.get(org, token)


async def test_an_idle_session_expires(world: World) -> None:
    org = await _org_with_user(world)
    _, token = await world.sessions.sign_in(org, "ana@example.com", PASSWORD, "", "")
    world.clock.advance(timedelta(hours=2))
    with pytest.raises(Unauthenticated):
        await world.sessions.get(org, token)


async def test_wrong_password_and_unknown_email_get_the_same_answer(world: World) -> None:
    org = await _org_with_user(world)
    with pytest.raises(Unauthenticated) as wrong:
        await world.sessions.sign_in(org, "ana@example.com", "wrong password!", "", "")
    with pytest.raises(Unauthenticated) as unknown:
        await world.sessions.sign_in(org, "bob@example.com", PASSWORD, "", "")
    assert wrong.value.message == unknown.value.message == "wrong email or password"
    assert await world.records.app_sessions.count_documents({}) == 0


async def test_failed_attempts_per_email_are_limited(world: World) -> None:
    org = await _org_with_user(world)
    for _ in range(3):
        with pytest.raises(Unauthenticated):
            await world.sessions.sign_in(org, "ana@example.com", "wrong password!", "10.0.0.1", "")
    # The fourth attempt is refused before the password is even checked, also the right one.
    with pytest.raises(ResourceExhausted) as limited:
        await world.sessions.sign_in(org, "ANA@example.com", PASSWORD, "10.0.0.2", "")
    assert limited.value.retry_after_seconds == 100
    assert limited.value.message == "too many sign-in attempts; try again in 2 minutes"
    # Another email of the same workspace is not affected.
    await world.users.create(org, "bob@example.com", PASSWORD)
    await world.sessions.sign_in(org, "bob@example.com", PASSWORD, "10.0.0.2", "")
    # One attempt comes back every 100 seconds.
    world.clock.advance(timedelta(seconds=100))
    await world.sessions.sign_in(org, "ana@example.com", PASSWORD, "10.0.0.3", "")


async def test_successful_sign_ins_do_not_use_up_the_limit(world: World) -> None:
    org = await _org_with_user(world)
    for _ in range(8):
        await world.sessions.sign_in(org, "ana@example.com", PASSWORD, "10.0.0.1", "")


async def test_attempts_per_address_are_limited_across_emails(world: World) -> None:
    org = await _org_with_user(world)
    for n in range(5):
        with pytest.raises(Unauthenticated):
            await world.sessions.sign_in(org, f"user{n}@example.com", PASSWORD, "10.9.9.9", "")
    with pytest.raises(ResourceExhausted):
        await world.sessions.sign_in(org, "ana@example.com", PASSWORD, "10.9.9.9", "")
    # The limits live in MongoDB, so every replica shares them: keys are hashed.
    keys = [doc["_id"] async for doc in world.records.signin_limits.find({})]
    assert keys and not any("10.9.9.9" in key or "@" in key for key in keys)
    await world.sessions.sign_in(org, "ana@example.com", PASSWORD, "10.9.9.8", "")


async def test_an_address_limited_in_one_workspace_still_signs_in_to_another(
    world: World,
) -> None:
    sprayed = await _org_with_user(world)
    other = await _org_with_user(world)
    for n in range(5):
        with pytest.raises(Unauthenticated):
            await world.sessions.sign_in(sprayed, f"user{n}@example.com", "x", "10.7.7.7", "")
    with pytest.raises(ResourceExhausted):
        await world.sessions.sign_in(sprayed, "ana@example.com", PASSWORD, "10.7.7.7", "")
    await world.sessions.sign_in(other, "ana@example.com", PASSWORD, "10.7.7.7", "")


async def test_one_address_spraying_every_workspace_meets_the_higher_global_limit(
    world: World,
) -> None:
    # 12 attempts per address across workspaces here; 5 per workspace.
    workspaces = [await _org_with_user(world) for _ in range(4)]
    failures = 0
    for org in workspaces[:3]:
        for n in range(4):
            with pytest.raises(Unauthenticated):
                await world.sessions.sign_in(org, f"u{n}@example.com", "x", "10.6.6.6", "")
            failures += 1
    assert failures == 12
    # A fresh workspace, never tried from here: the address's global bucket is empty.
    with pytest.raises(ResourceExhausted):
        await world.sessions.sign_in(workspaces[3], "ana@example.com", PASSWORD, "10.6.6.6", "")
    # Another address is not affected.
    await world.sessions.sign_in(workspaces[3], "ana@example.com", PASSWORD, "10.6.6.5", "")


async def test_concurrent_guesses_cannot_pass_the_limit(world: World) -> None:
    org = await _org_with_user(world)
    results = await asyncio.gather(
        *(
            world.sessions.sign_in(org, "ana@example.com", "wrong password!", "", "")
            for _ in range(8)
        ),
        return_exceptions=True,
    )
    assert sum(isinstance(r, Unauthenticated) for r in results) == 3
    assert sum(isinstance(r, ResourceExhausted) for r in results) == 5


async def test_connect_links_are_listed_newest_first(world: World) -> None:
    org = (await world.organizations.create("Acme")).organization_id
    links = ConnectLinks(
        records=world.records, clock=world.clock, cipher=TokenCipher([TEST_TOKEN_KEY])
    )
    first = await links.create(org, "6f1c2a43-5b7e-4e38-9a51-0c2f3b4d5e61", "first")
    world.clock.advance(timedelta(seconds=1))
    second = await links.create(org, "7f1c2a43-5b7e-4e38-9a51-0c2f3b4d5e62", "second")
    await links.create(
        (await world.organizations.create("Other")).organization_id,
        "8f1c2a43-5b7e-4e38-9a51-0c2f3b4d5e63",
        "",
    )
    listed = await links.list(org)
    assert [link.connect_link_uuid for link in listed] == [
        second.connect_link_uuid,
        first.connect_link_uuid,
    ]
    assert listed[0].token == second.token and listed[0].status == "active"


async def _signed_in(world: World, org: str, email: str) -> str:
    _, token = await world.sessions.sign_in(org, email, PASSWORD, "203.0.113.7", "ua")
    return token


async def test_an_admin_adds_sets_passwords_and_removes_users(world: World) -> None:
    org = await _org_with_user(world)  # made by the operator: an admin
    admin = await _signed_in(world, org, "ana@example.com")
    assert (await world.sessions.get(org, admin)).role == "admin"
    manage = WorkspaceUsers(world.users, world.sessions)
    bob = await manage.add(org, admin, "Bob@Example.com", PASSWORD, "member")
    assert (bob.email, bob.role, bob.time_zone) == ("bob@example.com", "member", "UTC")
    assert [u.email for u in await manage.list(org, admin)] == ["ana@example.com", bob.email]
    bob_token = await _signed_in(world, org, bob.email)
    assert (await world.sessions.get(org, bob_token)).role == "member"

    # A new password ends bob's sessions; the new one signs in.
    await manage.set_password(org, admin, bob.user_id, "a brand new password")
    with pytest.raises(Unauthenticated):
        await world.sessions.get(org, bob_token)
    await world.sessions.sign_in(org, bob.email, "a brand new password", "203.0.113.7", "ua")
    # Admins setting their own keep the session they are using.
    ana = (await manage.list(org, admin))[0]
    await manage.set_password(org, admin, ana.user_id, "ana's next password")
    assert (await world.sessions.get(org, admin)).user_id == ana.user_id

    with pytest.raises(FailedPrecondition):
        await manage.remove(org, admin, ana.user_id)
    removed = await manage.remove(org, admin, bob.user_id)
    assert removed.email == bob.email
    assert await world.records.app_sessions.count_documents({"userId": bob.user_id}) == 0
    assert [u.email for u in await manage.list(org, admin)] == ["ana@example.com"]


async def test_a_member_is_refused_user_management(world: World) -> None:
    org = await _org_with_user(world)
    admin = await _signed_in(world, org, "ana@example.com")
    manage = WorkspaceUsers(world.users, world.sessions)
    bob = await manage.add(org, admin, "bob@example.com", PASSWORD, "member")
    member = await _signed_in(world, org, bob.email)
    ana = (await manage.list(org, member))[0]  # members may see who is there
    for attempt in (
        manage.add(org, member, "eve@example.com", PASSWORD, "admin"),
        manage.remove(org, member, ana.user_id),
        manage.set_password(org, member, ana.user_id, "taken over at last"),
    ):
        with pytest.raises(PermissionDenied) as refused:
            await attempt
        assert refused.value.reason == NOT_ADMIN
    assert len(await manage.list(org, admin)) == 2
    # A session of another workspace is no session here.
    other = await _org_with_user(world, "zed@example.com")
    with pytest.raises(Unauthenticated):
        await manage.list(other, admin)


async def test_the_time_zone_is_kept_per_user_and_reaches_their_sessions(world: World) -> None:
    org = await _org_with_user(world)
    first = await _signed_in(world, org, "ana@example.com")
    second = await _signed_in(world, org, "ana@example.com")
    manage = WorkspaceUsers(world.users, world.sessions)
    changed = await manage.set_time_zone(org, first, "Europe/Paris")
    assert changed.time_zone == "Europe/Paris"
    assert (await world.sessions.get(org, second)).time_zone == "Europe/Paris"
    third = await _signed_in(world, org, "ana@example.com")
    assert (await world.sessions.get(org, third)).time_zone == "Europe/Paris"
    for bad in ("Mars/Olympus", "../etc/passwd", ""):
        with pytest.raises(InvalidArgument):
            await manage.set_time_zone(org, first, bad)


async def test_roles_default_to_admin_for_the_operator_and_member_in_the_app(
    world: World,
) -> None:
    assert role_of(pb.USER_ROLE_UNSPECIFIED, unspecified="admin") == "admin"  # CreateUser
    assert role_of(pb.USER_ROLE_UNSPECIFIED, unspecified="member") == "member"  # AddUser
    assert role_of(pb.USER_ROLE_ADMIN, unspecified="member") == "admin"
    with pytest.raises(InvalidArgument):
        role_of(cast(Any, 7), unspecified="member")
    # Users and sessions stored before roles existed were the operator's: admins, in UTC.
    org = await _org_with_user(world)
    token = await _signed_in(world, org, "ana@example.com")
    await world.records.users.update_many({}, {"$unset": {"role": "", "timeZone": ""}})
    await world.records.app_sessions.update_many({}, {"$unset": {"role": "", "timeZone": ""}})
    session = session_pb(await world.sessions.get(org, token))
    assert (session.role, session.time_zone) == (pb.USER_ROLE_ADMIN, "UTC")
    assert (await world.users.of_organization(org))[0].role == "admin"

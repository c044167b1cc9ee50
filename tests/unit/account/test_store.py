"""account-svc domain objects against a real (in-process) MongoDB wire server."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from argon2 import PasswordHasher

from account_svc.identity.credentials import Credential, Credentials, hash_token
from account_svc.identity.organizations import Organizations
from account_svc.identity.ratelimit import MongoBuckets
from account_svc.identity.users import Users
from account_svc.records import AccountCollections
from storypost_runtime.clock import FrozenClock
from storypost_runtime.errors import (
    AlreadyExists,
    InvalidArgument,
    NotFound,
    Unauthenticated,
)
from tests.support.ratelimit import full_bucket_then_refuses_then_refills

START = datetime(2026, 11, 23, 10, 0, tzinfo=UTC)


@pytest.fixture
def clock() -> FrozenClock:
    return FrozenClock(START)


async def issued(
    records: AccountCollections, clock: FrozenClock, name: str
) -> tuple[str, Credentials, Credential, str]:
    """A new organization's id, its Credentials, and one credential named `name` with its
    token."""
    org = await Organizations(records, clock).create("Acme")
    credentials = Credentials(records, clock)
    credential, token = await credentials.create(org.organization_id, name)
    return org.organization_id, credentials, credential, token


async def test_token_is_stored_only_as_hash(
    records: AccountCollections, clock: FrozenClock
) -> None:
    org_id, credentials, credential, token = await issued(records, clock, "ci")
    assert token.startswith("sp_") and len(token) == 46
    stored = await records.credentials.find_one({"_id": credential.credential_id})
    assert stored is not None
    assert token not in str(stored)
    assert stored["tokenHash"] == hash_token(token)
    found = await credentials.authenticate(token)
    assert found.organization_id == org_id


async def test_unknown_malformed_and_revoked_tokens_are_refused(
    records: AccountCollections, clock: FrozenClock
) -> None:
    org_id, credentials, credential, token = await issued(records, clock, "")
    for bad in ["", "sp_short", "x" * 46, token[:-1] + ("A" if token[-1] != "A" else "B")]:
        with pytest.raises(Unauthenticated, match="not authenticated"):
            await credentials.authenticate(bad)
    revoked = await credentials.revoke(org_id, credential.credential_id)
    assert revoked.revoked_at == START
    with pytest.raises(Unauthenticated):
        await credentials.authenticate(token)
    # Revoking twice succeeds and keeps the first time.
    clock.advance(timedelta(minutes=5))
    again = await credentials.revoke(org_id, credential.credential_id)
    assert again.revoked_at == START
    with pytest.raises(NotFound):
        await credentials.revoke("someone-else", credential.credential_id)
    assert await credentials.list(org_id, include_revoked=False) == []
    assert len(await credentials.list(org_id, include_revoked=True)) == 1


async def test_revocations_are_listed_since_a_time_oldest_first_across_organizations(
    records: AccountCollections, clock: FrozenClock
) -> None:
    org_a, credentials, first, _ = await issued(records, clock, "a")
    org_b, _, second, _ = await issued(records, clock, "b")
    _, _, kept, _ = await issued(records, clock, "kept")
    assert (await credentials.revoked_since(None)).credential_ids == []
    await credentials.revoke(org_a, first.credential_id)
    clock.advance(timedelta(seconds=10))
    await credentials.revoke(org_b, second.credential_id)
    everything = await credentials.revoked_since(None)
    assert everything.credential_ids == [first.credential_id, second.credential_id]
    assert not everything.truncated and everything.as_of == START + timedelta(seconds=10)
    # `since` is inclusive: a revocation at that very instant is listed.
    later = await credentials.revoked_since(START + timedelta(seconds=10))
    assert later.credential_ids == [second.credential_id]
    assert (await credentials.revoked_since(START + timedelta(seconds=11))).credential_ids == []
    assert kept.credential_id not in everything.credential_ids


async def test_a_long_list_of_revocations_is_cut_and_says_so(
    records: AccountCollections, clock: FrozenClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("account_svc.identity.credentials.REVOKED_PAGE", 2)
    org_id, credentials, _, _ = await issued(records, clock, "")
    made = [(await credentials.create(org_id, f"c{n}"))[0] for n in range(3)]
    for credential in made:
        clock.advance(timedelta(seconds=1))
        await credentials.revoke(org_id, credential.credential_id)
    page = await credentials.revoked_since(None)
    assert page.credential_ids == [c.credential_id for c in made[:2]] and page.truncated


async def test_last_used_is_written_at_most_once_a_minute(
    records: AccountCollections, clock: FrozenClock
) -> None:
    _, credentials, credential, token = await issued(records, clock, "ci")
    await credentials.authenticate(token)
    clock.advance(timedelta(seconds=30))
    await credentials.authenticate(token)
    stored = await records.credentials.find_one({"_id": credential.credential_id})
    assert stored is not None and stored["lastUsedAt"] == START
    clock.advance(timedelta(seconds=31))
    await credentials.authenticate(token)
    stored = await records.credentials.find_one({"_id": credential.credential_id})
    assert stored is not None and stored["lastUsedAt"] == START + timedelta(seconds=61)


async def test_credentials_need_an_existing_organization(
    records: AccountCollections, clock: FrozenClock
) -> None:
    with pytest.raises(NotFound):
        await Credentials(records, clock).create("000000000000000000000000", "x")
    with pytest.raises(InvalidArgument):
        await Organizations(records, clock).create("   ")


async def test_users_hash_passwords_and_refuse_wrong_ones(
    records: AccountCollections, clock: FrozenClock
) -> None:
    org = await Organizations(records, clock).create("Acme")
    users = Users(
        records=records, clock=clock, hasher=PasswordHasher(time_cost=1, memory_cost=8192)
    )
    user = await users.create(org.organization_id, " Ann@Example.com ", "correct horse battery")
    assert user.email == "ann@example.com"
    stored = await records.users.find_one({"_id": user.user_id})
    assert stored is not None and stored["passwordHash"].startswith("$argon2id$")
    assert "correct horse" not in str(stored)
    assert (
        await users.verify(org.organization_id, "ANN@example.com", "correct horse battery")
    ).user_id == user.user_id
    for email, password in [("ann@example.com", "wrong password!"), ("bob@example.com", "x" * 12)]:
        with pytest.raises(Unauthenticated, match="wrong email or password"):
            await users.verify(org.organization_id, email, password)
    with pytest.raises(AlreadyExists):
        await users.create(org.organization_id, "ann@example.com", "another password")
    with pytest.raises(InvalidArgument):
        await users.create(org.organization_id, "not-an-email", "long enough pw")
    with pytest.raises(InvalidArgument):
        await users.create(org.organization_id, "c@example.com", "short")


async def test_rate_limit_allows_a_full_bucket_then_refuses_then_refills(
    records: AccountCollections, clock: FrozenClock
) -> None:
    await full_bucket_then_refuses_then_refills(MongoBuckets(records), clock)

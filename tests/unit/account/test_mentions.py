"""Mention resolution through the organization's photoapp accounts: one short lease per
account (shared by every replica), busy or rate-limited accounts are skipped, and when all are
busy the caller is told to retry (RESOURCE_EXHAUSTED with a delay)."""

from __future__ import annotations

from datetime import timedelta

import pytest

from account_svc.connections.access_tokens import AccessTokens
from account_svc.connections.connected_accounts import AccountRef
from account_svc.connections.mentions import MentionResolver
from account_svc.connections.platform_api import PlatformApi
from sandbox_net.identity import account_id
from sandbox_net.switches import Switch
from storypost_runtime.errors import (
    FailedPrecondition,
    InvalidArgument,
    NotFound,
    ResourceExhausted,
)
from tests.support.accounts import SANDBOX_BASE, AccountWorld


def replica(world: AccountWorld) -> MentionResolver:
    """A second account-svc replica's resolver over the same database."""
    api = PlatformApi(
        http=world.http, clock=world.clock, api_url=SANDBOX_BASE, browser_url=SANDBOX_BASE,
        client_id="storypost", client_secret="x",
    )  # fmt: skip
    return MentionResolver(
        records=world.records,
        accounts=world.parts.accounts,
        tokens=AccessTokens(accounts=world.parts.accounts, api=api, clock=world.clock),
        api=api,
        clock=world.clock,
        lease_seconds=15,
        cooldown_seconds=60,
    )


async def test_resolves_a_username_and_reports_unknown_ones(world: AccountWorld) -> None:
    org = await world.organization()
    with pytest.raises(FailedPrecondition, match="no connected photoapp account"):
        await world.parts.mentions.resolve(org, "natgeo")
    await world.connect(org, "PHOTOAPP", "resolver")
    user_id, username = await world.parts.mentions.resolve(org, "@NatGeo")
    assert (user_id, username) == (account_id("photoapp", "natgeo"), "natgeo")
    with pytest.raises(NotFound, match="no user named @unknown_person"):
        await world.parts.mentions.resolve(org, "unknown_person")
    with pytest.raises(InvalidArgument):
        await world.parts.mentions.resolve(org, "@")
    # The lease was given back each time: the account is free again.
    assert await world.parts.mentions.resolve(org, "bob")


async def test_every_account_busy_is_resource_exhausted(world: AccountWorld) -> None:
    org = await world.organization()
    await world.connect(org, "PHOTOAPP", "one")
    await world.connect(org, "PHOTOAPP", "two")
    other = replica(world)
    # Another replica holds both accounts (two resolutions in flight there).
    held = [await other._acquire(org, "other-replica", []) for _ in range(2)]
    assert all(doc is not None for doc in held)
    assert await other._acquire(org, "other-replica", []) is None
    with pytest.raises(ResourceExhausted) as busy:
        await world.parts.mentions.resolve(org, "natgeo")
    assert busy.value.retry_after_seconds == 15
    # A crashed holder's lease expires by itself.
    world.clock.advance(timedelta(seconds=16))
    assert (await world.parts.mentions.resolve(org, "natgeo"))[1] == "natgeo"


async def test_a_rate_limited_account_is_skipped_and_rests(world: AccountWorld) -> None:
    org = await world.organization()
    first = await world.connect(org, "PHOTOAPP", "limited")
    await world.connect(org, "PHOTOAPP", "fresh")
    world.sandbox.store.set_switch(
        Switch("photoapp", first.platform_account_id, "rate-limited", retry_after_seconds=120)
    )
    # The least recently used account goes first; the 429 moves on to the next account.
    for _ in range(3):
        assert (await world.parts.mentions.resolve(org, "natgeo"))[1] == "natgeo"
    rested = await world.records.connected_accounts.find_one({"_id": first.social_account_id})
    assert rested is not None
    assert rested["busyUntil"] - world.clock.now() == timedelta(seconds=120)
    # Both rate-limited: the caller learns when to retry.
    world.sandbox.store.set_switch(Switch("photoapp", None, "rate-limited", retry_after_seconds=30))
    with pytest.raises(ResourceExhausted) as busy:
        await world.parts.mentions.resolve(org, "natgeo")
    assert busy.value.retry_after_seconds == 30


async def test_a_refused_token_disconnects_the_account_and_moves_on(world: AccountWorld) -> None:
    org = await world.organization()
    expired = await world.connect(org, "PHOTOAPP", "expired")
    await world.connect(org, "PHOTOAPP", "working")
    world.sandbox.store.set_switch(Switch("photoapp", expired.platform_account_id, "token-expired"))
    assert (await world.parts.mentions.resolve(org, "natgeo"))[1] == "natgeo"
    assert (await world.parts.mentions.resolve(org, "natgeo"))[1] == "natgeo"
    found = await world.parts.accounts.get(org, AccountRef("id", expired.social_account_id))
    assert found.disconnected
    # With every account disconnected there is none to resolve with.
    world.sandbox.store.set_switch(Switch("photoapp", None, "token-expired"))
    with pytest.raises(FailedPrecondition, match="no connected photoapp account"):
        await world.parts.mentions.resolve(org, "natgeo")


async def test_accounts_of_other_organizations_are_never_used(world: AccountWorld) -> None:
    org_a, org_b = await world.organization("A"), await world.organization("B")
    await world.connect(org_a, "PHOTOAPP", "a.account")
    await world.connect(org_b, "CLIPAPP", "b.clip")
    with pytest.raises(FailedPrecondition):
        await world.parts.mentions.resolve(org_b, "natgeo")

"""Account health: `account.status_changed` once per change, in the same write as the change;
tokens refreshed ahead by the keeper; a refusal for good marks `needs_reconnect`, a timeout
or 5xx never does; a reconnect without a new refresh token keeps the stored one."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

from account_svc.connections.connected_accounts import AccountRef, ConnectedAccount
from account_svc.connections.platform_api import TokenGrant
from account_svc.connections.token_keeper import TokenKeeper
from sandbox_net.switches import Switch
from storypost_runtime.outbox import OUTBOX_FIELD, PENDING_FIELD
from storypost_runtime.vocabulary import ACCOUNT_STATUS_EVENT
from tests.support.accounts import AccountWorld


async def events(world: AccountWorld, account: ConnectedAccount) -> list[dict[str, Any]]:
    """The account's events waiting in its outbox (the relay is not running here)."""
    raw = await world.records.connected_accounts.find_one({"_id": account.social_account_id})
    assert raw is not None
    return [e for e in raw.get(OUTBOX_FIELD) or [] if e["type"] == ACCOUNT_STATUS_EVENT.name]


def utc(moment: datetime) -> datetime:
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def statuses(found: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return [(e["data"]["status"], e["data"]["reason"]) for e in found]


def keeper(world: AccountWorld, **kwargs: Any) -> TokenKeeper:
    return replace(world.parts.keeper, **kwargs) if kwargs else world.parts.keeper


async def test_connecting_sends_connected_once_and_a_reconnect_of_a_healthy_one_none(
    world: AccountWorld,
) -> None:
    org = await world.organization()
    account = await world.connect(org, "PHOTOAPP", "healthy")
    found = await events(world, account)
    assert statuses(found) == [("connected", "connected")]
    (event,) = found
    assert event["organizationId"] == org
    assert event["data"] == {
        "socialAccountId": account.social_account_id,
        "platform": "PHOTOAPP",
        "username": "healthy",
        "status": "connected",
        "reason": "connected",
    }
    again = await world.connect(org, "PHOTOAPP", "healthy")
    assert again.social_account_id == account.social_account_id
    assert len(await events(world, account)) == 1  # no change, no event


async def test_needs_reconnect_then_connected_again_then_deleted(world: AccountWorld) -> None:
    org = await world.organization()
    account = await world.connect(org, "CLIPAPP", "flaky")
    ref = AccountRef("id", account.social_account_id)
    await world.parts.accounts.mark_disconnected(org, ref, "the grant was revoked")
    await world.parts.accounts.mark_disconnected(org, ref, "marked twice")  # no change
    await world.connect(org, "CLIPAPP", "flaky")
    await world.parts.accounts.delete(org, ref)
    await world.parts.accounts.delete(org, ref)  # deleting again changes nothing
    assert statuses(await events(world, account)) == [
        ("connected", "connected"),
        ("needs_reconnect", "the grant was revoked"),
        ("connected", "connected again"),
        ("disconnected", "deleted"),
    ]


async def test_racing_reconnects_send_one_event(world: AccountWorld) -> None:
    org = await world.organization()
    account = await world.connect(org, "PINBOARD", "racer")
    ref = AccountRef("id", account.social_account_id)
    await world.parts.accounts.mark_disconnected(org, ref, "revoked")
    await asyncio.gather(*(world.connect(org, "PINBOARD", "racer") for _ in range(4)))
    assert statuses(await events(world, account))[-1] == ("connected", "connected again")
    assert [s for s, _ in statuses(await events(world, account))].count("connected") == 2


async def test_a_reconnect_without_a_refresh_token_keeps_the_stored_one(
    world: AccountWorld,
) -> None:
    org = await world.organization()
    account = await world.connect(org, "LINKNET", "keeper")
    raw = await world.records.connected_accounts.find_one({"_id": account.social_account_id})
    assert raw is not None
    stored = world.parts.accounts.tokens_of(raw)
    grant = TokenGrant("new-access", "", world.clock.now() + timedelta(hours=1), None)
    await world.parts.accounts.store_tokens(account.social_account_id, grant)
    after = await world.records.connected_accounts.find_one({"_id": account.social_account_id})
    assert after is not None
    kept = world.parts.accounts.tokens_of(after)
    assert kept.access_token == "new-access"
    assert kept.refresh_token == stored.refresh_token  # not wiped


async def test_the_keeper_refreshes_tokens_before_they_expire(world: AccountWorld) -> None:
    org = await world.organization()
    account = await world.connect(org, "PINBOARD", "fresh")
    ref = AccountRef("id", account.social_account_id)
    _, first, expires = await world.parts.tokens.get(org, ref)
    keep = keeper(world)
    assert await keep.refresh_expiring() == 0  # nothing expires within the horizon yet
    world.clock.advance(expires - world.clock.now() - keep.horizon / 2)
    assert await keep.refresh_expiring() == 1
    _, refreshed, new_expiry = await world.parts.tokens.get(org, ref)
    assert refreshed != first and new_expiry > expires
    assert await keep.refresh_expiring() == 0  # refreshed: not due again


async def test_a_refused_refresh_marks_needs_reconnect_once(world: AccountWorld) -> None:
    org = await world.organization()
    account = await world.connect(org, "CLIPAPP", "revoked")
    world.sandbox.store.set_switch(Switch("clipapp", account.platform_account_id, "token-expired"))
    world.clock.advance(timedelta(days=1))  # every token expired
    keep = keeper(world)
    assert await keep.refresh_expiring() == 1
    assert await keep.refresh_expiring() == 0  # needs a reconnect: no more refreshes
    found = await world.parts.accounts.get(org, AccountRef("id", account.social_account_id))
    assert found.disconnected and "revoked" in found.disconnect_reason
    (_, changed) = statuses(await events(world, account))
    assert changed[0] == "needs_reconnect" and "revoked" in changed[1]


async def test_a_platform_outage_never_marks_an_account_and_backs_off(
    world: AccountWorld,
) -> None:
    org = await world.organization()
    account = await world.connect(org, "PINBOARD", "patient")
    world.sandbox.store.set_switch(Switch("pinboard", account.platform_account_id, "offline"))
    world.clock.advance(timedelta(days=1))
    keep = keeper(world)
    waits = []
    for _ in range(3):
        assert await keep.refresh_expiring() == 1
        raw = await world.records.connected_accounts.find_one({"_id": account.social_account_id})
        assert raw is not None and not raw["disconnected"]
        waits.append(utc(raw["refreshRetryAt"]) - world.clock.now())
        assert await keep.refresh_expiring() == 0  # waits before the next try
        world.clock.advance(timedelta(seconds=keep.retry.most))
    assert raw is not None and raw["refreshFailures"] == 3
    # Each wait is in [half, all] of the one doubling from 30 s (jitter).
    for failures, wait in enumerate(waits, start=1):
        full = timedelta(seconds=min(1800, 30 * 2 ** (failures - 1)))
        assert full / 2 <= wait <= full
    assert statuses(await events(world, account)) == [("connected", "connected")]
    # The platform is back: the next try refreshes and clears the failures.
    world.sandbox.store.reset_switches("pinboard")
    assert await keep.refresh_expiring() == 1
    raw = await world.records.connected_accounts.find_one({"_id": account.social_account_id})
    assert raw is not None and "refreshFailures" not in raw and "refreshRetryAt" not in raw


async def test_two_keepers_never_refresh_one_account_at_once(world: AccountWorld) -> None:
    org = await world.organization()
    for name in ("a1", "a2", "a3"):
        await world.connect(org, "PINBOARD", name)
    world.clock.advance(timedelta(days=1))
    one, two = keeper(world, owner="one"), keeper(world, owner="two")
    worked = await asyncio.gather(one.refresh_expiring(), two.refresh_expiring())
    assert sum(worked) == 3


async def test_check_refreshes_an_account_once_per_interval(world: AccountWorld) -> None:
    org = await world.organization()
    account = await world.connect(org, "PINBOARD", "due")
    other_org = await world.organization("Other")
    ref = AccountRef("id", account.social_account_id)
    _, first, _ = await world.parts.tokens.get(org, ref)
    keep = keeper(world)
    found = await keep.check(org, [account.social_account_id, "sa_unknown"])
    assert found == {account.social_account_id: "connected"}
    _, checked, _ = await world.parts.tokens.get(org, ref)
    assert checked != first  # refreshed: the grant is alive
    assert await keep.check(org, [account.social_account_id]) == found
    _, same, _ = await world.parts.tokens.get(org, ref)
    assert same == checked  # within the interval: not again
    # Another organization's id is unknown to it.
    assert await keep.check(other_org, [account.social_account_id]) == {}
    world.sandbox.store.set_switch(Switch("pinboard", account.platform_account_id, "token-expired"))
    world.clock.advance(keep.check_interval + timedelta(seconds=1))
    assert await keep.check(org, [account.social_account_id]) == {
        account.social_account_id: "needs_reconnect"
    }


async def test_the_pending_flag_goes_with_every_event(world: AccountWorld) -> None:
    org = await world.organization()
    account = await world.connect(org, "PHOTOAPP", "flagged")
    raw = await world.records.connected_accounts.find_one({"_id": account.social_account_id})
    assert raw is not None and raw[PENDING_FIELD] is True
    # Never shown by a lookup.
    found = await world.parts.accounts.get(org, AccountRef("id", account.social_account_id))
    assert OUTBOX_FIELD not in repr(found)

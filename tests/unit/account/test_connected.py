"""Connected accounts in account-svc: the connect flow against the in-process sandbox, listing,
organization scoping, disconnect, reconnect and soft delete."""

from __future__ import annotations

import pytest

from account_svc.connections.connected_accounts import AccountRef
from storypost_runtime.errors import FailedPrecondition, InvalidArgument, NotFound
from tests.support.accounts import AccountWorld


async def test_connect_flow_stores_the_profile_and_linknet_destinations(
    world: AccountWorld,
) -> None:
    org = await world.organization()
    account = await world.connect(
        org, "PHOTOAPP", "Alice.Shop", linknet_destinations="101:Alice Page:page\n102:Grp:group"
    )
    assert account.platform.name == "PHOTOAPP"
    assert account.connection == "direct"
    assert account.username == "alice.shop"
    assert account.platform_account_id.isdigit() and len(account.platform_account_id) == 17
    assert [(d.id, d.name, d.type) for d in account.linknet_destinations] == [
        ("101", "Alice Page", "page"),
        ("102", "Grp", "group"),
    ]
    assert [p.post_type for p in account.post_types] == ["IMAGE_STORY", "VIDEO_STORY", "REEL"]
    listed = await world.parts.accounts.list(org)
    assert [a.social_account_id for a in listed] == [account.social_account_id]
    # Found by username (case-insensitive, "@" ignored) and by id.
    by_name = await world.parts.accounts.get(org, AccountRef("username", "@ALICE.shop", "PHOTOAPP"))
    assert by_name.social_account_id == account.social_account_id


async def test_each_platform_connects_with_its_default_connection(world: AccountWorld) -> None:
    org = await world.organization()
    clip = await world.connect(org, "CLIPAPP", "clipper")
    clip_social = await world.connect(org, "CLIPAPP", "clipper", connection="social")
    pins = await world.connect(org, "PINBOARD", "pinner")
    channel = await world.connect(org, "VIDEOCHANNEL", "tv", connection="direct")
    assert (clip.connection, clip_social.connection, pins.connection) == (
        "direct",
        "social",
        "social",
    )
    # One clipapp account, listed once per connection, with the same platform id.
    assert clip.platform_account_id == clip_social.platform_account_id
    assert clip.social_account_id != clip_social.social_account_id
    assert channel.post_types == ()
    found = await world.parts.accounts.get(org, AccountRef("clipapp", clip.platform_account_id))
    assert found.social_account_id == clip.social_account_id
    with pytest.raises(InvalidArgument, match="cannot be connected directly"):
        await world.parts.connect.start(
            link_token=None,
            organization_id=org,
            platform_name="PINBOARD",
            connection="direct",
            redirect_uri="",
        )
    assert len(await world.parts.accounts.list(org)) == 4
    assert len(await world.parts.accounts.list(org, "CLIPAPP", "direct")) == 1


async def test_an_organization_never_sees_another_organizations_accounts(
    world: AccountWorld,
) -> None:
    org_a, org_b = await world.organization("A"), await world.organization("B")
    account = await world.connect(org_a, "PHOTOAPP", "alice")
    assert await world.parts.accounts.list(org_b) == []
    for ref in (
        AccountRef("id", account.social_account_id),
        AccountRef("username", "alice", "PHOTOAPP"),
    ):
        with pytest.raises(NotFound):
            await world.parts.accounts.get(org_b, ref)
        with pytest.raises(NotFound):
            await world.parts.accounts.mark_disconnected(org_b, ref, "x")
        with pytest.raises(NotFound):
            await world.parts.accounts.delete(org_b, ref)
        with pytest.raises(NotFound):
            await world.parts.tokens.get(org_b, ref)
    # B connecting the same platform user gets its own record.
    mine = await world.connect(org_b, "PHOTOAPP", "alice")
    assert mine.social_account_id != account.social_account_id
    assert mine.platform_account_id == account.platform_account_id


async def test_disconnect_reconnect_and_soft_delete(world: AccountWorld) -> None:
    org = await world.organization()
    account = await world.connect(org, "PHOTOAPP", "bob")
    ref = AccountRef("id", account.social_account_id)
    marked = await world.parts.accounts.mark_disconnected(org, ref, "token expired")
    assert marked.disconnected and marked.disconnect_reason == "token expired"
    again = await world.parts.accounts.mark_disconnected(org, ref, "other reason")
    assert again.disconnect_reason == "token expired"  # idempotent: the first reason stays
    listed = await world.parts.accounts.list(org)
    assert [a.disconnected for a in listed] == [True]
    with pytest.raises(FailedPrecondition) as refused:
        await world.parts.tokens.get(org, ref)
    assert refused.value.reason == "ACCOUNT_DISCONNECTED"
    # Connecting again clears the flag and keeps the id.
    reconnected = await world.connect(org, "PHOTOAPP", "bob")
    assert reconnected.social_account_id == account.social_account_id
    assert not reconnected.disconnected and reconnected.disconnect_reason == ""
    deleted = await world.parts.accounts.delete(org, ref)
    assert deleted.deleted_at is not None
    assert await world.parts.accounts.list(org) == []
    with pytest.raises(NotFound):
        await world.parts.accounts.get(org, ref)
    # Deleting again answers the deleted record; the tokens are gone from the record.
    assert (await world.parts.accounts.delete(org, ref)).deleted_at is not None
    raw = await world.records.connected_accounts.find_one({"_id": account.social_account_id})
    assert raw is not None and "accessToken" not in raw and "refreshToken" not in raw


async def test_connect_flow_refusals(world: AccountWorld) -> None:
    org = await world.organization()
    started = await world.parts.connect.start(
        link_token=None, organization_id=org, platform_name="PHOTOAPP", connection="",
        redirect_uri="http://127.0.0.1:9/cb",
    )  # fmt: skip
    with pytest.raises(FailedPrecondition, match="did not allow"):
        await world.parts.connect.complete(started.state, "", "access_denied")
    with pytest.raises(NotFound):
        await world.parts.connect.complete("no-such-state", "code", "")
    code, state = await world.authorize(started.authorize_url, "carol")
    done = await world.parts.connect.complete(state, code, "")
    # Reloading the callback answers the same account (the code is not redeemed twice).
    repeat = await world.parts.connect.complete(state, code, "")
    assert repeat.account.social_account_id == done.account.social_account_id
    with pytest.raises(NotFound):
        await world.parts.connect.start(
            link_token=None, organization_id="nope", platform_name="PHOTOAPP", connection="",
            redirect_uri="",
        )  # fmt: skip
    with pytest.raises(InvalidArgument, match="unknown platform"):
        await world.parts.connect.start(
            link_token=None, organization_id=org, platform_name="MYSPACE", connection="",
            redirect_uri="",
        )  # fmt: skip

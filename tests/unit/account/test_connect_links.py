"""Connect links: idempotent on their UUID, at most 100 per organization (also under
concurrent creates), one use each, and the connect flow through them."""

from __future__ import annotations

import asyncio
import uuid

import pytest

from account_svc.connections.connect_links import LINK_LIMIT, ConnectLinks, hash_link_token
from account_svc.connections.token_crypto import TokenCipher
from storypost_runtime.errors import FailedPrecondition, InvalidArgument, NotFound
from tests.support.accounts import TEST_TOKEN_KEY, AccountWorld


async def test_the_same_uuid_returns_the_same_link(world: AccountWorld) -> None:
    org = await world.organization()
    links = world.parts.links
    link_uuid = str(uuid.uuid4())
    first = await links.create(org, link_uuid, "Lisbon store")
    again = await links.create(org, link_uuid.upper(), "another note")
    assert first.token == again.token and len(first.token) == 43
    assert again.description == "Lisbon store" and again.connect_link_uuid == link_uuid
    # The token is stored hashed (for lookup) and encrypted (to answer the same URL again).
    raw = await world.records.connect_links.find_one({"uuid": link_uuid})
    assert raw is not None and first.token not in str(raw)
    assert raw["tokenHash"] == hash_link_token(first.token)
    # Another organization's same UUID is another link.
    other = await links.create(await world.organization("B"), link_uuid, "")
    assert other.token != first.token
    assert (await links.by_token(first.token)).organization_id == org
    for unknown in ("x" * 43, "short", first.token[:-1] + "?"):
        with pytest.raises(NotFound):
            await links.by_token(unknown)


async def test_bad_input_is_refused(world: AccountWorld) -> None:
    org = await world.organization()
    with pytest.raises(InvalidArgument) as bad:
        await world.parts.links.create(org, "not-a-uuid", "")
    assert bad.value.field_violations == {"connectLinkUuid": ["not a valid uuid"]}
    with pytest.raises(InvalidArgument, match="at most 500"):
        await world.parts.links.create(org, str(uuid.uuid4()), "x" * 501)
    await world.parts.links.create(org, str(uuid.uuid4()), "x" * 500)


async def test_at_most_100_links_even_when_creates_race(world: AccountWorld) -> None:
    org = await world.organization()
    # Two "replicas" creating links at once.
    replicas = [
        world.parts.links,
        ConnectLinks(
            records=world.records, clock=world.clock, cipher=TokenCipher([TEST_TOKEN_KEY])
        ),
    ]
    uuids = [str(uuid.uuid4()) for _ in range(120)]

    async def create(index: int) -> str:
        try:
            await replicas[index % 2].create(org, uuids[index % 120], f"link {index}")
            return "ok"
        except FailedPrecondition as error:
            assert error.reason == "CONNECT_LINK_LIMIT"
            assert "at most 100 connect links" in error.message
            return "refused"

    for batch in range(0, 80, 16):
        assert set(await asyncio.gather(*(create(i) for i in range(batch, batch + 16)))) == {"ok"}
    # 40 new links race for the last 20 slots, and 10 of them are retried at the same time.
    outcomes = await asyncio.gather(*(create(i) for i in [*range(80, 120), *range(80, 90)]))
    stored = await world.records.connect_links.find({"organizationId": org}).to_list()
    assert len(stored) == LINK_LIMIT
    assert sorted(doc["slot"] for doc in stored) == list(range(LINK_LIMIT))
    assert len({doc["uuid"] for doc in stored}) == LINK_LIMIT
    assert outcomes.count("refused") >= 20
    # The 101st is refused and changes nothing; an existing one still answers.
    before = sorted((d["uuid"], d["tokenHash"]) for d in stored)
    with pytest.raises(FailedPrecondition):
        await world.parts.links.create(org, str(uuid.uuid4()), "")
    kept = stored[0]["uuid"]
    assert (await world.parts.links.create(org, kept, "")).connect_link_uuid == kept
    after = await world.records.connect_links.find({"organizationId": org}).to_list()
    assert sorted((d["uuid"], d["tokenHash"]) for d in after) == before


async def test_a_link_connects_one_photoapp_account_once(world: AccountWorld) -> None:
    org = await world.organization()
    link = await world.parts.links.create(org, str(uuid.uuid4()), "")
    flow = world.parts.connect
    first = await flow.start(
        link_token=link.token, organization_id=None, platform_name="", connection="",
        redirect_uri="http://127.0.0.1:9/connect/callback",
    )  # fmt: skip
    # A second browser opened the same link before the first finished.
    second = await flow.start(
        link_token=link.token, organization_id=None, platform_name="PHOTOAPP", connection="",
        redirect_uri="http://127.0.0.1:9/connect/callback",
    )  # fmt: skip
    code, state = await world.authorize(first.authorize_url, "linked.owner")
    done = await flow.complete(state, code, "")
    assert done.account.username == "linked.owner"
    assert done.connect_link_uuid == link.connect_link_uuid
    assert done.organization_name == "Acme"
    stored = await world.parts.links.by_token(link.token)
    assert stored.status == "used" and stored.social_account_id == done.account.social_account_id
    assert stored.connected_username == "linked.owner"
    code2, state2 = await world.authorize(second.authorize_url, "intruder")
    with pytest.raises(FailedPrecondition) as used:
        await flow.complete(state2, code2, "")
    assert used.value.reason == "CONNECT_LINK_USED"
    with pytest.raises(FailedPrecondition) as again:
        await flow.start(
            link_token=link.token, organization_id=None, platform_name="", connection="",
            redirect_uri="",
        )  # fmt: skip
    assert again.value.reason == "CONNECT_LINK_USED"
    assert [a.username for a in await world.parts.accounts.list(org)] == ["linked.owner"]
    with pytest.raises(InvalidArgument, match="photoapp accounts only"):
        await flow.start(
            link_token=(await world.parts.links.create(org, str(uuid.uuid4()), "")).token,
            organization_id=None, platform_name="CLIPAPP", connection="", redirect_uri="",
        )  # fmt: skip

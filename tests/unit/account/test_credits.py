"""Credit balances: the default for a new organization, set, and one credit per post taken
idempotently, also when takes of one post race."""

from __future__ import annotations

import asyncio
import uuid

import pytest

from account_svc.connections.credits import Credits
from account_svc.identity.organizations import Organizations
from account_svc.records import AccountCollections
from storypost_runtime.clock import FrozenClock, SystemClock
from storypost_runtime.errors import InvalidArgument, NotFound


async def organization(records: AccountCollections) -> str:
    return (await Organizations(records, SystemClock()).create("Acme")).organization_id


async def test_a_new_organization_starts_with_the_default_balance(
    records: AccountCollections,
) -> None:
    credits = Credits(records=records, clock=SystemClock(), default_credits=7)
    org = await organization(records)
    assert await credits.get(org) == 7
    taken = await credits.consume(org, str(uuid.uuid4()))
    assert (taken.consumed, taken.already_consumed, taken.balance) == (True, False, 6)
    assert await credits.get(org) == 6


async def test_one_credit_per_post_whatever_the_retries(records: AccountCollections) -> None:
    credits = Credits(records=records, clock=SystemClock(), default_credits=10)
    org = await organization(records)
    post = str(uuid.uuid4())
    first = await credits.consume(org, post)
    again = await credits.consume(org, post.upper())
    assert (first.consumed, first.already_consumed, first.balance) == (True, False, 9)
    assert (again.consumed, again.already_consumed, again.balance) == (True, True, 9)
    # Concurrent takes of one post from two "replicas" count once.
    other = Credits(records=records, clock=SystemClock(), default_credits=10)
    racing = str(uuid.uuid4())
    results = await asyncio.gather(
        *(c.consume(org, racing) for c in (credits, other, credits, other, credits))
    )
    assert all(r.consumed for r in results)
    assert sum(not r.already_consumed for r in results) == 1
    assert await credits.get(org) == 8
    # The same post uuid in another organization is another post.
    org_b = await organization(records)
    assert (await credits.consume(org_b, post)).balance == 9


async def test_nothing_is_taken_while_the_balance_is_not_positive(
    records: AccountCollections,
) -> None:
    clock = FrozenClock(SystemClock().now())
    credits = Credits(records=records, clock=clock, default_credits=1000)
    org = await organization(records)
    assert await credits.set(org, 2) == 2
    posts = [str(uuid.uuid4()) for _ in range(5)]
    results = await asyncio.gather(*(credits.consume(org, p) for p in posts))
    assert sorted(r.consumed for r in results) == [False, False, False, True, True]
    assert await credits.get(org) == 0
    refused = next(p for p, r in zip(posts, results, strict=True) if not r.consumed)
    assert (await credits.consume(org, refused)).consumed is False
    # Topping up lets the refused post take its credit later, once.
    await credits.set(org, 1)
    late = await credits.consume(org, refused)
    assert (late.consumed, late.already_consumed, late.balance) == (True, False, 0)
    assert (await credits.consume(org, refused)).already_consumed
    await credits.set(org, -3)
    assert await credits.get(org) == -3
    assert not (await credits.consume(org, str(uuid.uuid4()))).consumed


async def test_bad_input(records: AccountCollections) -> None:
    credits = Credits(records=records, clock=SystemClock(), default_credits=5)
    with pytest.raises(NotFound):
        await credits.set("no-such-org", 3)
    with pytest.raises(InvalidArgument):
        await credits.consume(await organization(records), "  ")

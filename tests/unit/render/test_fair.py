"""render_svc/fair.py: slots shared fairly between organizations (issue #21 item 5)."""

from __future__ import annotations

import asyncio

import pytest

from render_svc.fair import FairSlots
from storypost_runtime.errors import ResourceExhausted


def slots(count: int, *, queue_limit: int = 16, per_org: int = 8, seconds: float = 5) -> FairSlots:
    return FairSlots(
        slots=count,
        queue_seconds=seconds,
        queue_limit=queue_limit,
        per_org_queue_limit=per_org,
        busy=lambda: ResourceExhausted("busy", retry_after_seconds=5),
    )


async def settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


async def test_a_burst_of_one_organization_does_not_go_before_a_later_call_of_another() -> None:
    fair = slots(2)
    order: list[str] = []
    release = asyncio.Event()

    async def render(org: str) -> None:
        async with fair.slot(org):
            order.append(org)
            await release.wait()

    burst = [asyncio.create_task(render("a")) for _ in range(6)]
    await settle()
    other = asyncio.create_task(render("b"))
    await settle()
    assert order == ["a", "a"] and fair.waiting == 5
    release.set()
    await asyncio.gather(*burst, other)
    # The first slot freed went to b (it held none), not to a's next queued call.
    assert order[2] == "b", order


async def test_the_organization_holding_fewest_slots_goes_first_ties_in_turn() -> None:
    fair = slots(1)
    await fair.acquire("a")
    got: list[str] = []

    async def wait(org: str) -> None:
        await fair.acquire(org)
        got.append(org)

    waiters = [asyncio.create_task(wait(org)) for org in ["a", "a", "b", "c", "b"]]
    await settle()
    for _ in range(5):
        fair.release(got[-1] if got else "a")
        await settle()
    await asyncio.gather(*waiters)
    assert got == ["a", "b", "c", "a", "b"], got


async def test_one_organization_fills_only_its_share_of_the_queue() -> None:
    fair = slots(1, queue_limit=4, per_org=2)
    await fair.acquire("a")
    waiting = [asyncio.create_task(fair.acquire("a")) for _ in range(2)]
    await settle()
    with pytest.raises(ResourceExhausted):
        await fair.acquire("a")  # a's share of the queue is full
    other = asyncio.create_task(fair.acquire("b"))  # b still gets in line
    await settle()
    assert fair.waiting == 3 and not other.done()
    for task in [*waiting, other]:
        task.cancel()
    await asyncio.gather(*waiting, other, return_exceptions=True)
    assert fair.waiting == 0


async def test_waiting_past_the_queue_time_is_refused_and_leaks_nothing() -> None:
    fair = slots(1, seconds=0.05)
    await fair.acquire("a")
    with pytest.raises(ResourceExhausted):
        await fair.acquire("b")
    assert fair.waiting == 0
    fair.release("a")
    await asyncio.wait_for(fair.acquire("b"), 1)  # the slot came back
    assert fair.held("b") == 1 and fair.held("a") == 0


async def test_a_slot_handed_to_a_call_that_gave_up_goes_to_the_next() -> None:
    fair = slots(1)
    await fair.acquire("a")
    first = asyncio.create_task(fair.acquire("b"))
    second = asyncio.create_task(fair.acquire("c"))
    await settle()
    fair.release("a")  # hands the slot to b ...
    first.cancel()  # ... which is cancelled before it runs again
    await asyncio.gather(first, return_exceptions=True)
    await asyncio.wait_for(second, 1)
    assert fair.held("c") == 1 and fair.held("b") == 0

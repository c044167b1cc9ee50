"""Admission of attempts: per-URL and per-replica bounds, a short FIFO wait, then MongoDB."""

from __future__ import annotations

import asyncio

from webhook_svc.lanes import Lanes


def test_bounds_per_lane_and_in_total() -> None:
    lanes = Lanes(total=3, per_lane=2)
    assert lanes.try_take("a") and lanes.try_take("a")
    assert not lanes.try_take("a") and lanes.full_lanes() == ["a"]
    assert lanes.try_take("b") and not lanes.has_room
    assert not lanes.try_take("c")
    assert lanes.try_take("c", force=True) and lanes.running == 4
    lanes.release("a")
    assert lanes.full_lanes() == [] and lanes.try_take("a") is False  # the total is still full
    for lane in ("a", "b", "c"):
        lanes.release(lane)
    assert lanes.running == 0 and lanes.has_room


async def test_a_waiter_gets_the_slot_of_an_ending_attempt_in_order() -> None:
    lanes = Lanes(total=10, per_lane=1, queue_per_lane=2, max_wait=5)
    assert await lanes.enter("a")
    first = asyncio.create_task(lanes.enter("a"))
    second = asyncio.create_task(lanes.enter("a"))
    await asyncio.sleep(0)
    assert not await lanes.enter("a")  # the lane's queue is full: store it due instead
    lanes.release("a")
    assert await first and not second.done()
    lanes.release("a")
    assert await second
    lanes.release("a")
    assert lanes.running == 0


async def test_waiting_is_short_and_only_for_a_busy_lane() -> None:
    lanes = Lanes(total=1, per_lane=5, queue_per_lane=5, max_wait=0.05)
    assert await lanes.enter("a")
    # The replica is full but lane b runs nothing that could hand it a slot: no waiting.
    assert not await lanes.enter("b")
    assert not await lanes.enter("a")  # waited 50 ms, then gave up
    lanes.release("a")
    assert lanes.running == 0 and await lanes.enter("b")


async def test_room_is_what_a_lane_could_start_now() -> None:
    lanes = Lanes(total=5, per_lane=3, queue_per_lane=2, max_wait=5)
    assert lanes.room("a") == 3 and lanes.free == 5
    assert lanes.try_take("a") and lanes.try_take("b") and lanes.try_take("b")
    assert lanes.room("a") == 2 and lanes.room("b") == 1 and lanes.free == 2
    assert lanes.try_take("c") and lanes.try_take("c")
    assert lanes.room("a") == 0 and lanes.free == 0  # the replica is full
    lanes.release("c")
    assert lanes.try_take("b") and lanes.room("b") == 0
    # Someone waits for lane b: whatever frees there is theirs, not the scheduler's.
    waiter = asyncio.create_task(lanes.enter("b"))
    await asyncio.sleep(0)
    lanes.release("c")
    assert lanes.room("b") == 0 and lanes.room("a") == 1
    lanes.release("b")
    assert await waiter


async def test_held_deliveries_wait_in_turn_outside_the_queue_bound() -> None:
    lanes = Lanes(total=10, per_lane=1, queue_per_lane=1, max_wait=5)
    assert await lanes.wait_turn("a", 1)  # room now: taken at once
    held = [asyncio.create_task(lanes.wait_turn("a", 5)) for _ in range(3)]
    await asyncio.sleep(0)
    # Held ones do not count in the queue bound: one new delivery may still wait, after them.
    newcomer = asyncio.create_task(lanes.enter("a"))
    await asyncio.sleep(0)
    assert not await lanes.enter("a")  # the queue's one place is taken
    order = [*held, newcomer]
    for turn in order:
        assert not turn.done()
        lanes.release("a")
        assert await turn
    lanes.release("a")
    assert lanes.running == 0


async def test_a_held_delivery_without_a_turn_leaves_the_queue() -> None:
    lanes = Lanes(total=1, per_lane=1, queue_per_lane=0, max_wait=0)
    assert lanes.try_take("a")
    # The replica is full and nothing runs in lane b that could hand it a slot: no holding.
    assert not await lanes.wait_turn("b", 1)
    assert not await lanes.wait_turn("a", 0.05)
    assert lanes.room("a") == 0 and not lanes.has_room
    lanes.release("a")
    assert lanes.running == 0 and lanes.room("a") == 1  # nobody waits any more

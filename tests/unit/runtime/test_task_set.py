"""storypost_runtime/tasks.py: the one fire-and-forget task set of every service, and the
loop of passes that background workers run."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from storypost_runtime.tasks import Next, TaskSet, claim_due, run_passes


async def test_tasks_are_kept_until_done_and_cancelled_together_on_close() -> None:
    tasks = TaskSet()
    finished: list[str] = []
    cancelled: list[str] = []

    async def quick() -> None:
        finished.append("quick")

    async def forever(name: str) -> None:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.append(name)
            raise

    async def failing() -> None:
        raise RuntimeError("its own error, logged by itself")

    tasks.spawn(quick())
    tasks.spawn(failing())
    tasks.spawn(forever("a"), name="a")
    tasks.spawn(forever("b"))
    await asyncio.sleep(0.01)
    assert finished == ["quick"] and len(tasks) == 2  # the ended ones are let go
    await tasks.close()
    assert sorted(cancelled) == ["a", "b"] and len(tasks) == 0


async def test_wait_idle_waits_for_tasks_started_meanwhile() -> None:
    tasks = TaskSet()
    done: list[int] = []

    async def chain(n: int) -> None:
        await asyncio.sleep(0.01)
        done.append(n)
        if n < 3:
            tasks.spawn(chain(n + 1))

    tasks.spawn(chain(1))
    await asyncio.wait_for(tasks.wait_idle(), 2)
    assert done == [1, 2, 3]


async def test_passes_rerun_at_once_after_work_and_wait_for_wake_or_poll_otherwise() -> None:
    results = [2, 1, 0, 0]
    failures: list[str] = []
    calls: list[int] = []
    wake = asyncio.Event()

    async def one_pass() -> int:
        calls.append(1)
        if not results:
            raise RuntimeError("bus down")
        return results.pop(0)

    task = asyncio.create_task(
        run_passes(one_pass, lambda error: failures.append(str(error)), poll_seconds=30, wake=wake)
    )
    await asyncio.sleep(0.05)
    assert len(calls) == 3  # two passes with work, then one idle pass: it waits
    wake.set()
    await asyncio.sleep(0.05)
    assert len(calls) == 4 and not wake.is_set()  # woken, and the wake is used up
    wake.set()
    await asyncio.sleep(0.05)
    assert len(calls) == 5 and failures == ["bus down"]  # a failed pass counts as idle
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task


async def test_passes_without_wake_sleep_the_poll_interval() -> None:
    calls: list[int] = []

    async def one_pass() -> int:
        calls.append(1)
        return 0

    task = asyncio.create_task(run_passes(one_pass, lambda error: None, poll_seconds=0.05))
    await asyncio.sleep(0.12)
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
    assert 2 <= len(calls) <= 4


async def test_room_waits_for_a_task_to_end_and_drain_waits_a_bounded_time() -> None:
    tasks = TaskSet()
    release = asyncio.Event()

    async def held() -> None:
        await release.wait()

    async def stuck() -> None:
        await asyncio.Event().wait()

    tasks.spawn(held())
    assert await tasks.room(3) == 2
    tasks.spawn(held())
    waiting = asyncio.create_task(tasks.room(2))
    await asyncio.sleep(0.02)
    assert not waiting.done()  # both places taken
    release.set()
    assert await asyncio.wait_for(waiting, 1) == 2
    tasks.spawn(stuck())
    started = asyncio.get_running_loop().time()
    await tasks.drain(0.05)
    assert 0.04 <= asyncio.get_running_loop().time() - started < 1 and len(tasks) == 1
    await tasks.close()


async def test_an_idle_pass_sleeps_until_the_next_due_time_capped_by_the_poll() -> None:
    calls: list[float] = []
    due: list[float | None] = [0.05, 60.0, None]

    async def one_pass() -> int:
        calls.append(asyncio.get_running_loop().time())
        return 0

    async def due_in() -> float | None:
        if not due:
            raise RuntimeError("database away")
        return due.pop(0)

    task = asyncio.create_task(
        run_passes(one_pass, lambda error: None, poll_seconds=0.2, due_in=due_in)
    )
    await asyncio.sleep(0.9)
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
    gaps = [later - earlier for earlier, later in itertools.pairwise(calls)]
    # Due in 0.05 s; due in 60 s, capped at 0.2; nothing due: 0.2; due_in failing: 0.2.
    assert len(gaps) >= 4 and 0.04 <= gaps[0] < 0.15 and all(0.19 <= g < 0.5 for g in gaps[1:4])


async def test_a_contended_pass_runs_again_after_the_pause_and_a_failed_one_after_the_poll() -> (
    None
):
    answers: list[Next | Exception] = [Next.AFTER_PAUSE, Next.AT_ONCE, RuntimeError("away")]
    calls: list[float] = []
    failures: list[str] = []
    wake = asyncio.Event()

    async def one_pass() -> Next:
        calls.append(asyncio.get_running_loop().time())
        answer = answers.pop(0) if answers else Next.WHEN_DUE
        if isinstance(answer, Exception):
            raise answer
        return answer

    async def due_in() -> float:
        return 0.01  # not asked after a failure: the poll interval is waited

    task = asyncio.create_task(
        run_passes(
            one_pass,
            lambda error: failures.append(str(error)),
            poll_seconds=30,
            wake=wake,
            due_in=due_in,
            pause_seconds=0.1,
        )
    )
    await asyncio.sleep(0.3)
    assert len(calls) == 3 and failures == ["away"]  # then waiting out the poll
    assert 0.09 <= calls[1] - calls[0] < 0.3 and calls[2] - calls[1] < 0.05
    wake.set()  # a wake ends the wait after a failure too
    await asyncio.sleep(0.05)
    assert len(calls) >= 4
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
    assert task.cancelled()


@dataclass
class Due:
    """Three due records; `b` is claimed by another replica between the search and its claim."""

    claims: list[tuple[str, str]] = field(default_factory=list)

    async def due_ids(self, now: datetime, limit: int) -> list[str]:
        return ["a", "b", "c"][:limit]

    async def claim(
        self, record_id: str, holder: str, now: datetime, until: datetime
    ) -> str | None:
        self.claims.append((record_id, holder))
        assert until == now + timedelta(seconds=30)
        return None if record_id == "b" else f"record {record_id}"


async def test_a_batch_is_claimed_each_record_under_a_holder_of_its_own() -> None:
    store = Due()
    now = datetime(2026, 7, 1, tzinfo=UTC)
    found, claimed = await claim_due(
        store, owner="replica-1", now=now, lease=timedelta(seconds=30), most=3
    )
    assert found == 3 and [record for record, _ in claimed] == ["record a", "record c"]
    holders = [holder for _, holder in store.claims]
    assert len(set(holders)) == 3 and all(h.startswith("replica-1/") for h in holders)
    assert [holder for _, holder in claimed] == [holders[0], holders[2]]
    assert Next.after_claims(found, len(claimed)) is Next.AT_ONCE
    assert Next.after_claims(3, 0) is Next.AFTER_PAUSE and Next.after_claims(0, 0) is Next.WHEN_DUE
    assert (await claim_due(store, owner="r", now=now, lease=timedelta(seconds=30), most=1))[0] == 1

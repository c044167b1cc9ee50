"""storypost_runtime/tasks.py: the one fire-and-forget task set of every service, and the
loop of passes that background workers run."""

from __future__ import annotations

import asyncio
import contextlib

from storypost_runtime.tasks import TaskSet, run_passes


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

"""storypost_runtime/tasks.py TaskSet: the one fire-and-forget task set of every service."""

from __future__ import annotations

import asyncio

from storypost_runtime.tasks import TaskSet


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

"""Background tasks: those that live as long as an AsyncExitStack (started on enter, cancelled on
exit), a component's fire-and-forget set (also a worker's bounded set of running jobs), the
claim of a batch of due records, and the loop of passes a background worker runs."""

from __future__ import annotations

import asyncio
import contextlib
import enum
import secrets
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine
from contextlib import asynccontextmanager
from datetime import datetime, timedelta
from typing import Any, Protocol


@asynccontextmanager
async def background(
    coro: Coroutine[Any, Any, None], name: str
) -> AsyncIterator[asyncio.Task[None]]:
    task = asyncio.create_task(coro, name=name)
    try:
        yield task
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


class TaskSet:
    """Fire-and-forget tasks of a component: each is referenced until it ends (the event loop
    keeps only weak references to tasks) and all are cancelled together on close."""

    def __init__(self) -> None:
        self._tasks: set[asyncio.Task[None]] = set()
        self._ended = asyncio.Event()

    def __len__(self) -> int:
        return len(self._tasks)

    def spawn(self, coro: Coroutine[Any, Any, None], name: str | None = None) -> asyncio.Task[None]:
        task = asyncio.create_task(coro, name=name)
        self._tasks.add(task)
        task.add_done_callback(self._end)
        return task

    def _end(self, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        self._ended.set()

    async def room(self, most: int) -> int:
        """Waits until fewer than `most` tasks run; answers how many more may start."""
        while len(self._tasks) >= most:
            self._ended.clear()
            await self._ended.wait()
        return most - len(self._tasks)

    async def wait_idle(self) -> None:
        """Waits until no task runs (those started meanwhile included)."""
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)

    async def drain(self, seconds: float) -> None:
        """On shutdown: waits up to `seconds` for the running tasks to end (those
        still running then are left running)."""
        if self._tasks:
            await asyncio.wait(set(self._tasks), timeout=seconds)

    async def close(self) -> None:
        """Cancels every task and waits for them to end; their errors are theirs to log."""
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


# After a pass whose candidates were all taken by other replicas: the next one after this.
CONTENDED_PAUSE_SECONDS = 0.05


class Next(enum.Enum):
    """When the pass after this one runs (a pass may answer a count of work done instead:
    more than 0 is AT_ONCE, 0 is WHEN_DUE)."""

    # It did something: more may be waiting.
    AT_ONCE = "at once"
    # What it found was claimed by other replicas meanwhile: look again after a short pause.
    AFTER_PAUSE = "after a pause"
    # Nothing to do: when the next thing is due, at a wake, or after the poll interval.
    WHEN_DUE = "when due"

    @classmethod
    def after_claims(cls, found: int, claimed: int) -> Next:
        """A claiming pass that found `found` due candidates and claimed `claimed`."""
        if claimed:
            return cls.AT_ONCE
        return cls.AFTER_PAUSE if found else cls.WHEN_DUE


class Claimable[T](Protocol):
    """A store of records that fall due, each leased by one claim at a time."""

    async def due_ids(self, now: datetime, limit: int) -> list[str]:
        """Ids of up to `limit` due records that no lease holds (candidates, not yet ours)."""
        ...

    async def claim(
        self, record_id: str, holder: str, now: datetime, until: datetime, /
    ) -> T | None:
        """Leases the record to `holder` until `until`; None when it is no longer due (another
        replica claimed it first)."""
        ...


async def claim_due[T](
    store: Claimable[T], *, owner: str, now: datetime, lease: timedelta, most: int
) -> tuple[int, list[tuple[T, str]]]:
    """Claims up to `most` due records: one search, then a guarded claim of each (so a burst
    of due records costs one search per batch). Answers how many candidates were found, and
    the records claimed with their holders.

    Each claim is one attempt's lease (`owner/random`), not the replica's: when an attempt
    outlives its lease (a renewal lost while the database was away) and this replica claims
    the record again, the earlier attempt's guarded writes fail instead of letting two
    attempts of one replica both work on it."""
    ids = await store.due_ids(now, most)
    claimed: list[tuple[T, str]] = []
    for record_id in ids:
        holder = f"{owner}/{secrets.token_hex(4)}"
        record = await store.claim(record_id, holder, now, now + lease)
        if record is not None:
            claimed.append((record, holder))
    return len(ids), claimed


async def run_passes(
    one_pass: Callable[[], Awaitable[int | Next]],
    failed: Callable[[Exception], None],
    *,
    poll_seconds: float,
    wake: asyncio.Event | None = None,
    due_in: Callable[[], Awaitable[float | None]] | None = None,
    pause_seconds: float = CONTENDED_PAUSE_SECONDS,
) -> None:
    """Runs passes until cancelled. After a pass that did something (answered more than 0,
    or AT_ONCE) the next runs at once; after AFTER_PAUSE, `pause_seconds` later; otherwise
    when `wake` is set, or after `due_in()` seconds (the time until the next due thing, None
    when nothing is) capped at `poll_seconds`, or `poll_seconds` without `due_in`. A pass
    that raises is handed to `failed` (to log it) and the next runs after `poll_seconds` (or
    at a wake); a `due_in` that raises counts as nothing due."""
    while True:
        try:
            answer = await one_pass()
        except asyncio.CancelledError:
            raise
        except Exception as error:
            failed(error)
            await _idle(wake, poll_seconds)
            continue
        if answer is Next.AT_ONCE or (not isinstance(answer, Next) and answer > 0):
            continue
        if answer is Next.AFTER_PAUSE:
            await asyncio.sleep(pause_seconds)
            continue
        await _idle(wake, await _idle_seconds(due_in, poll_seconds))


async def _idle_seconds(
    due_in: Callable[[], Awaitable[float | None]] | None, poll_seconds: float
) -> float:
    if due_in is None:
        return poll_seconds
    try:
        seconds = await due_in()
    except asyncio.CancelledError:
        raise
    except Exception:
        return poll_seconds
    if seconds is None:
        return poll_seconds
    return max(0.0, min(poll_seconds, seconds))


async def _idle(wake: asyncio.Event | None, seconds: float) -> None:
    """Sleeps `seconds`, or until `wake` is set (which the wake uses up)."""
    if wake is None:
        await asyncio.sleep(seconds)
        return
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(wake.wait(), timeout=seconds)
    wake.clear()

"""The failure matrix of issue #23 on the whole stack: every platform call of every driver
made to fail, to answer after publish-svc's platform timeout, and performed right before
publish-svc is killed -9 (the cells: tests/support/failure_matrix.py; the table:
docs/publishing.md).

All cells run at once, each with its own organization and sandbox account (switches are
per account and endpoint, and apply to one call). The kill cells are scheduled first, with a
date a little ahead, so that they reach their calls together; once every one of them was
performed (its answer held), publish-svc is killed once and started again. The look-up cells
lose a publishing answer first; their look-up is switched as soon as that answer is held. A
late or look-up cell caught by the kill is resumed by the restarted replica and must end the
same way. The kill cells run in every stack shape: one kill and one start of publish-svc (its
replicas) is all they cost.

Every cell: at most one post on the sandbox network, the status that tells the truth (with
the post id and permalink, the platform's reason, or "outcome unknown"), one event per status
change, and the credits, daily count and story quota right.
"""

from __future__ import annotations

import asyncio
import time
from collections import defaultdict
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from typing import Any

import pytest
from nats.aio.client import Client as NatsClient

from publish_svc.model import EVENT_TYPE, UUID_FIELD, Kind
from storypost.testing.stack import StackHandle
from tests.integration.publish.conftest import platform_timeout
from tests.integration.publish.matrix_cells import (
    PROCEDURES,
    Run,
    Stores,
    arm,
    arm_look_up,
    holds,
    prepare,
    problems,
    settled,
)
from tests.reliability.support import future
from tests.support.accounts import held, release_held, reset_switches, switches
from tests.support.api import Api, only_in_passes
from tests.support.failure_matrix import CELLS, Cell, Expect, Mode
from tests.support.mongo import stack_database


@pytest.fixture(scope="module", autouse=True)
def matrix_passes(request: pytest.FixtureRequest) -> None:
    only_in_passes(
        request,
        "processes",
        "production",
        why="the drivers it checks are the same code in every shape; the production pass "
        "runs it on the images with replicas, the containers pass would only repeat it",
    )


# The kill cells' date: after their renderings (under load too), so that they reach their
# calls together, within the platform timeout.
KILL_DUE_SECONDS = 45.0
# Cells prepared (organization, account, switch) and scheduled at once.
SETUP_CONCURRENCY = 24
SETTLE_WITHIN_SECONDS = 300.0


@pytest.fixture
async def stores(storypost_stack: StackHandle) -> AsyncIterator[Stores]:
    async with stack_database(storypost_stack.env, tz_aware=True) as db:
        yield Stores(
            db["posts"],
            db["credit_balances"],
            db["credit_consumptions"],
            db["daily_post_counters"],
            db["story_quota"],
        )


async def each[T](items: Iterable[T], work: Callable[[T], Awaitable[Any]]) -> list[Any]:
    gate = asyncio.Semaphore(SETUP_CONCURRENCY)

    async def one(item: T) -> Any:
        async with gate:
            return await work(item)

    return list(await asyncio.gather(*(one(item) for item in items)))


async def schedule(api: Api, runs: list[Run], video_url: str, date: str | None = None) -> None:
    async def one(run: Run) -> None:
        procedure = PROCEDURES[run.driver.kind][0]
        body = run.body(video_url, date)
        deadline = time.monotonic() + 120
        while True:
            answer = await api.call(run.org, procedure, body)
            # Busy render slots (429) and a restarting service (503) are retried, as the spec
            # tells callers to, with the same UUID.
            if answer.status_code not in (429, 503) or time.monotonic() > deadline:
                break
            await asyncio.sleep(float(answer.headers.get("Retry-After") or 1))
        assert answer.status_code == 200, (run.cell.name, answer.text)
        run.scheduled_as = answer.json()["status"]

    await each(runs, one)


async def arm_look_ups(stack: StackHandle, look_ups: list[Run], timeout: float) -> None:
    """Arms each look-up's switch once the answer it follows is held (the publishing call
    was performed), before or after the kill."""
    waiting = list(look_ups)
    deadline = time.monotonic() + SETTLE_WITHIN_SECONDS
    while waiting:
        items = await held(stack)
        for run in list(waiting):
            assert run.cell.call.after_lost is not None
            if holds(run, items, run.cell.call.after_lost):
                await arm_look_up(stack, run, timeout)
                waiting.remove(run)
        assert time.monotonic() < deadline, [run.cell.name for run in waiting]
        await asyncio.sleep(0.25)


async def kill_when_held(
    stack: StackHandle, kills: list[Run], timeout: float, killed: asyncio.Event
) -> list[str]:
    """Once every kill cell's call was performed (its answer held), kills publish-svc -9 and
    starts it again. Returns the kill cells caught too late (held past the platform timeout:
    those would be late cells)."""
    deadline = time.monotonic() + KILL_DUE_SECONDS + 150
    while True:
        items = await held(stack)
        missing = [run for run in kills if not holds(run, items, run.cell.call.endpoint)]
        if not missing:
            break
        assert time.monotonic() < deadline, [run.cell.name for run in missing]
        await asyncio.sleep(0.25)
    too_late = [
        run.cell.name
        for run in kills
        if max(h["heldSeconds"] for h in holds(run, items, run.cell.call.endpoint)) >= timeout - 1
    ]
    killed.set()  # from here on, publish-svc must be started again whatever happens
    await stack.processes.kill("publish")
    # Every held answer's caller is gone with the process.
    await release_held(stack)
    await stack.processes.start_component("publish")
    return too_late


async def wait_settled(stores: Stores, runs: list[Run]) -> None:
    ids = [run.record_id for run in runs]
    deadline = time.monotonic() + SETTLE_WITHIN_SECONDS
    while True:
        docs = {doc["_id"]: doc async for doc in stores.posts.find({"_id": {"$in": ids}})}
        open_ = [run.cell.name for run in runs if not settled(docs.get(run.record_id))]
        if not open_:
            return
        assert time.monotonic() < deadline, f"not settled: {open_}"
        await asyncio.sleep(0.5)


async def statuses_on_the_bus(bus: NatsClient, kinds: set[Kind]) -> dict[str, list[str]]:
    """Every status event of these kinds on the stream, by post UUID, in order."""
    import json

    found: dict[str, list[str]] = defaultdict(list)
    js = bus.jetstream()
    for kind in kinds:
        subject = f"events.{EVENT_TYPE[kind]}"
        stream = await js.find_stream_name_by_subject(subject)
        last = (await js.stream_info(stream)).state.last_seq
        sub = await js.subscribe(subject, ordered_consumer=True)
        seen: set[str] = set()
        try:
            while True:
                message = await sub.next_msg(timeout=10.0)
                body = json.loads(message.data)
                assert body["id"] not in seen, f"event {body['id']} delivered twice"
                seen.add(body["id"])
                found[body["data"][UUID_FIELD[kind]]].append(body["data"]["status"])
                # The last one of the subject, or of the stream, is read.
                meta = message.metadata
                if meta.num_pending == 0 or meta.sequence.stream >= last:
                    break
        finally:
            await sub.unsubscribe()
    return found


def expected_events(run: Run) -> list[str]:
    """One event per status change: the status scheduling answered (a social post with a
    date still ahead is scheduled, else in progress at once), in-progress where the kind
    announces it, the end."""
    final = "executed" if run.cell.expect is Expect.EXECUTED else "failed"
    if run.driver.kind in ("story", "social"):
        return [run.scheduled_as, final]
    return [run.scheduled_as, "in-progress", final]


async def test_every_driver_call_failing_late_or_killed_ends_truthfully_and_once(
    api: Api,
    storypost_stack: StackHandle,
    stores: Stores,
    bus: NatsClient,
    sample_video_url: str,
) -> None:
    stack = storypost_stack
    timeout = platform_timeout(stack)
    started = time.monotonic()
    phases: dict[str, float] = {}

    def phase(name: str) -> None:
        phases[name] = round(time.monotonic() - started, 1)
        print(f"failure matrix: {name} after {phases[name]} s")

    # Late cells take the platform timeout and a retry, failing ones end at once: after the
    # kill cells (they render first: their date must come after the last of them) and the
    # look-ups, the slow ones go first, so that they run while the others are rendered; the
    # failing ones are scheduled once the kill is over.
    groups = {
        "kill": [c for c in CELLS if c.mode is Mode.KILL],
        "look-up": [c for c in CELLS if c.call.after_lost],
        "late": [c for c in CELLS if c.mode is Mode.LATE and not c.call.after_lost],
        "fail": [c for c in CELLS if c.mode is Mode.FAIL and not c.call.after_lost],
    }
    assert sum(map(len, groups.values())) == len(CELLS)
    gate = asyncio.Semaphore(SETUP_CONCURRENCY)

    async def ready(cell: Cell) -> Run:
        async with gate:  # in the order asked: a group is ready before the next
            run = await prepare(api, stack, cell)
            await arm(stack, run, timeout)
            return run

    # Every cell's organization, account and switch, while the groups before it run.
    preparing = {
        name: [asyncio.create_task(ready(c)) for c in cells] for name, cells in groups.items()
    }
    background: list[asyncio.Task[Any]] = []
    killed = asyncio.Event()
    killing: asyncio.Task[list[str]] | None = None
    try:
        kills = list(await asyncio.gather(*preparing["kill"]))
        killing = asyncio.create_task(kill_when_held(stack, kills, timeout, killed))
        await schedule(api, kills, sample_video_url, future(KILL_DUE_SECONDS))
        phase("kill cells scheduled")
        look_ups = list(await asyncio.gather(*preparing["look-up"]))
        arming = asyncio.create_task(arm_look_ups(stack, look_ups, timeout))
        background.append(arming)
        await schedule(api, look_ups, sample_video_url)
        phase("look-ups scheduled")
        lates = list(await asyncio.gather(*preparing["late"]))
        await schedule(api, lates, sample_video_url)
        phase("late cells scheduled")
        fails = list(await asyncio.gather(*preparing["fail"]))
        too_late = await killing
        phase("killed and restarted")
        # The failing cells go after the kill: a refusal lost with a killed replica is a
        # lost answer (a look-up cell's story), not the refusal this cell is about (seen in
        # the production shape, where the kill came while their calls were in flight).
        await schedule(api, fails, sample_video_url)
        phase("all scheduled")
        runs = kills + look_ups + lates + fails
        await arming
        await wait_settled(stores, runs)
        phase("settled")
        found = await each(runs, lambda run: problems(api, stack, stores, run))
        report = {run.cell.name: issues for run, issues in zip(runs, found, strict=True) if issues}
        for name in too_late:
            report.setdefault(name, []).append("held past the platform timeout before the kill")
        # Each once-only switch was used: the cell's call (or look-up) was really made.
        left = {(item["platform"], item["account"]) for item in await switches(stack)}
        for run in runs:
            stays = run.cell.mode is Mode.FAIL and run.cell.expect is Expect.FAILED
            if not stays and (run.driver.platform, run.account_id) in left:
                report.setdefault(run.cell.name, []).append("its switch never applied")
        events = await statuses_on_the_bus(bus, {Kind(run.driver.kind) for run in runs})
        for run in runs:
            want = expected_events(run)
            if events.get(run.uuid) != want:
                report.setdefault(run.cell.name, []).append(
                    f"events {events.get(run.uuid)}, expected {want}"
                )
        lines = [f"{name}: {'; '.join(v)}" for name, v in report.items()]
        assert not report, "\n".join([f"phases: {phases}", *lines])
    finally:
        for task in background:
            task.cancel()
        if killing is not None and not killing.done():
            if killed.is_set():
                await asyncio.gather(killing, return_exceptions=True)
            else:
                killing.cancel()
        await release_held(stack)
        done = await asyncio.gather(
            *(t for ts in preparing.values() for t in ts), return_exceptions=True
        )
        prepared = [run for run in done if isinstance(run, Run)]
        await each(prepared, lambda run: reset_switches(stack, run.driver.platform, run.account_id))

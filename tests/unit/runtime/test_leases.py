"""The lease keeper both publish-svc's attempts and render-svc's finishers run."""

from __future__ import annotations

import asyncio
import itertools
from datetime import timedelta

from storypost_runtime.leases import keep_renewed, renewing

LEASE = timedelta(seconds=0.06)  # a renewal every 20 ms


async def test_renews_every_third_of_the_lease_until_the_lease_is_no_longer_held() -> None:
    answers = iter([True, True, False])
    calls: list[float] = []
    loop = asyncio.get_running_loop()

    async def renew() -> bool:
        calls.append(loop.time())
        return next(answers)

    started = loop.time()
    await asyncio.wait_for(keep_renewed(renew, _never_fails, lease=LEASE), 2)
    assert len(calls) == 3
    assert calls[0] - started >= 0.015
    assert all(b - a >= 0.015 for a, b in itertools.pairwise(calls))


async def test_a_failed_renewal_is_reported_and_tried_again_at_the_next_turn() -> None:
    answers: list[bool | Exception] = [ConnectionError("mongo away"), True, False]
    failures: list[Exception] = []

    async def renew() -> bool:
        answer = answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer

    await asyncio.wait_for(keep_renewed(renew, failures.append, lease=LEASE), 2)
    assert [str(error) for error in failures] == ["mongo away"]
    assert answers == []


async def test_renewing_stops_renewing_when_the_work_ends() -> None:
    calls = 0

    async def renew() -> bool:
        nonlocal calls
        calls += 1
        return True

    async with renewing(renew, _never_fails, lease=LEASE, name="test lease"):
        await asyncio.sleep(0.07)
    renewed_during_work = calls
    assert renewed_during_work >= 2
    await asyncio.sleep(0.1)
    assert calls == renewed_during_work


def _never_fails(error: Exception) -> None:
    raise AssertionError(f"no renewal should fail here: {error!r}")

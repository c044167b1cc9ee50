"""A dependency that is down gives 503 with errorMessage, never a hang (issue #3)."""

from __future__ import annotations

import asyncio
import time

from storypost.testing.stack import StackHandle
from tests.support.api import Api, Org


async def test_account_service_down_is_503_then_recovers(
    api: Api, fresh_org: Org, storypost_stack: StackHandle
) -> None:
    assert (await api.call(fresh_org, "generate-uuid", {})).status_code == 200
    await storypost_stack.processes.kill("account")
    try:
        started = time.monotonic()
        response = await api.call(fresh_org, "generate-uuid", {})
        assert response.status_code == 503
        assert response.json()["errorMessage"]
        assert response.headers["Retry-After"]
        # Every internal call has a deadline: the answer comes well before a client gives up.
        assert time.monotonic() - started < 10
        # The edge stays ready (in its Service) while a backend is down: callers get the
        # per-call 503 with Retry-After above, not connection errors from an empty Service.
        for _ in range(10):
            assert (await api.get("/readyz")).status_code == 200
            assert (await api.call(fresh_org, "generate-uuid", {})).status_code == 503
            await asyncio.sleep(0.2)
    finally:
        await storypost_stack.processes.start_component("account")
    await recovers(api, fresh_org)


async def test_database_down_is_503_then_recovers(
    api: Api, fresh_org: Org, storypost_stack: StackHandle
) -> None:
    if "mongo" not in storypost_stack.processes.components:
        # Containers provide the database here; the account-svc case above covers the path.
        return
    # A call that reads the database (generate-uuid needs none while the token check is
    # cached: the rate-limit buckets live on NATS).
    assert (await api.call(fresh_org, "list-social-accounts", {})).status_code == 200
    await storypost_stack.processes.kill("mongo")
    try:
        response = await api.call(fresh_org, "list-social-accounts", {})
        assert response.status_code == 503
        assert response.json()["errorMessage"]
    finally:
        await storypost_stack.processes.start_component("mongo")
    # Services reconnect on their own once the database is back.
    await recovers(api, fresh_org)


async def recovers(api: Api, org: Org, within: float = 20.0) -> None:
    """Callers retry 503s (as the spec says); within a few seconds the answer is 200 again."""
    deadline = time.monotonic() + within
    while True:
        status = (await api.call(org, "generate-uuid", {})).status_code
        if status == 200:
            return
        assert status == 503 and time.monotonic() < deadline, status
        await asyncio.sleep(0.5)

"""A rolling restart of two edge replicas behind a load balancer loses no call (issue #10).

SIGTERM: /readyz turns 503 at once, the balancer stops sending new connections within its
poll, the listener closes after the drain time, calls in flight (slow uploads included)
finish, the process exits 0. Generate-uuid calls today; schedule calls join this load once
their procedures land (they go through the same edge path).
"""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest

from storypost.testing.balancer import Backend, Balancer
from storypost.testing.stack import Organization, StackHandle
from storypost_runtime.service_auth import EDGE
from tests.support.polling import wait_until

pytestmark = pytest.mark.integration
DRAIN_SECONDS = 1.0


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class EdgeReplica:
    """One more `python -m edge`, talking to the stack's services."""

    def __init__(self, stack: StackHandle, log: Path) -> None:
        self.port = free_port()
        self.log = log
        self._env = {
            **os.environ,
            **stack.env,
            # Signs its calls as the stack's own edge does (docs/service-auth.md).
            "STORYPOST_SERVICE_KEY": stack.credentials[EDGE],
            "STORYPOST_EDGE_HOST": "127.0.0.1",
            "STORYPOST_EDGE_PORT": str(self.port),
            "STORYPOST_METRICS_PORT": "-1",
            "STORYPOST_SHUTDOWN_DRAIN_SECONDS": str(DRAIN_SECONDS),
            "STORYPOST_SHUTDOWN_GRACE_SECONDS": "15",
            "PYTHONUNBUFFERED": "1",
        }
        self.process: asyncio.subprocess.Process | None = None

    async def start(self) -> None:
        self.process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "edge", env=self._env, stdout=self.log.open("ab"),
            stderr=asyncio.subprocess.STDOUT,
        )  # fmt: skip
        deadline = time.monotonic() + 60
        async with httpx.AsyncClient(timeout=2, trust_env=False) as http:
            while True:
                assert self.process.returncode is None, "the edge replica exited at start"
                try:
                    if (await http.get(f"http://127.0.0.1:{self.port}/readyz")).status_code == 200:
                        return
                except httpx.HTTPError:
                    pass
                assert time.monotonic() < deadline, "the edge replica did not get ready"
                await asyncio.sleep(0.1)

    async def terminate(self) -> int:
        assert self.process is not None
        self.process.send_signal(signal.SIGTERM)
        return await asyncio.wait_for(self.process.wait(), 30)

    async def kill(self) -> None:
        if self.process is not None and self.process.returncode is None:
            self.process.kill()
            await self.process.wait()


@dataclass
class Load:
    """Callers through the balancer; every answer is kept."""

    url: str
    orgs: list[Organization]
    statuses: list[int | str] = field(default_factory=list)
    stop: asyncio.Event = field(default_factory=asyncio.Event)
    turn: int = 0

    def next_org(self) -> Organization:
        self.turn += 1
        return self.orgs[self.turn % len(self.orgs)]

    async def call(self, http: httpx.AsyncClient, slow: bool) -> None:
        org = self.next_org()
        path = f"/o/{org.organization_id}/api/v1/generate-uuid"

        async def slow_body() -> AsyncIterator[bytes]:
            # The body arrives over 2 s: still arriving when the listener closes.
            for part in (b"{", b" ", b"}"):
                yield part
                await asyncio.sleep(1.0)

        try:
            answer = await http.post(
                self.url + path,
                headers={
                    "Authorization": f"Bearer {org.token}",
                    "Content-Type": "application/json",
                },
                content=slow_body() if slow else b"{}",
            )
            self.statuses.append(answer.status_code)
        except httpx.HTTPError as error:
            self.statuses.append(f"{type(error).__name__}: {error}")

    async def worker(self, slow: bool) -> None:
        # A new connection per call, so the balancer routes each one.
        limits = httpx.Limits(max_keepalive_connections=0)
        async with httpx.AsyncClient(timeout=30, trust_env=False, limits=limits) as http:
            while not self.stop.is_set():
                await self.call(http, slow)
                await asyncio.sleep(0.25 if not slow else 0.1)


def slow_call_open(backend: Backend) -> Callable[[], Awaitable[bool | None]]:
    async def check() -> bool | None:
        return backend.open_for(0.3) or None

    return check


async def test_rolling_restart_of_two_edge_replicas_loses_no_call(
    storypost_stack: StackHandle, tmp_path: Path
) -> None:
    orgs = [await storypost_stack.new_organization(f"rolling {n}") for n in range(6)]
    replicas = [EdgeReplica(storypost_stack, tmp_path / f"edge-{n}.log") for n in (1, 2)]
    try:
        await asyncio.gather(*(r.start() for r in replicas))
        backends = [Backend(r.port) for r in replicas]
        async with Balancer(backends).running() as balancer:
            while not all(b.ready for b in backends):
                await asyncio.sleep(0.05)
            load = Load(f"http://127.0.0.1:{balancer.port}", orgs)
            workers = [
                asyncio.create_task(load.worker(slow)) for slow in (False, False, True, True)
            ]
            signalled: list[float] = []
            exit_codes: list[int] = []
            try:
                await asyncio.sleep(1.5)
                for replica, backend in zip(replicas, backends, strict=True):
                    # SIGTERM while a slow upload is mid-body on this replica (the balancer
                    # may have sent both slow callers to the other one for a while).
                    await wait_until(slow_call_open(backend), 20, "a slow call", every=0.02)
                    signalled.append(time.monotonic())
                    exit_codes.append(await replica.terminate())
                    await replica.start()
                    await asyncio.sleep(1.5)
            finally:
                load.stop.set()
                await asyncio.gather(*workers)
        assert exit_codes == [0, 0]
        failures = [s for s in load.statuses if s != 200]
        assert not failures, f"{len(failures)} of {len(load.statuses)} calls failed: {failures}"
        assert len(load.statuses) >= 30
        for backend, at in zip(backends, signalled, strict=True):
            spanning = [c for c in backend.connections if c[0] < at < c[1]]
            assert spanning, "no call was in flight at SIGTERM: the test proved nothing"
    finally:
        for replica in replicas:
            await replica.kill()


async def test_sigterm_waits_for_a_body_still_arriving_then_exits_0(
    storypost_stack: StackHandle, tmp_path: Path
) -> None:
    """An upload still arriving when the listener closes is answered; an idle keep-alive
    connection of the same client does not keep the process alive."""
    org = await storypost_stack.new_organization("slow upload")
    replica = EdgeReplica(storypost_stack, tmp_path / "edge.log")
    await replica.start()
    assert replica.process is not None
    url = f"http://127.0.0.1:{replica.port}/o/{org.organization_id}/api/v1/generate-uuid"
    headers = {"Authorization": f"Bearer {org.token}", "Content-Type": "application/json"}

    async def slow_body() -> AsyncIterator[bytes]:
        for part in (b"{", b" ", b" ", b"}"):
            yield part
            await asyncio.sleep(0.8)

    try:
        async with httpx.AsyncClient(timeout=30, trust_env=False) as http:
            # A first call leaves a keep-alive connection open and idle.
            assert (await http.post(url, headers=headers, content=b"{}")).status_code == 200
            call = asyncio.create_task(http.post(url, headers=headers, content=slow_body()))
            await asyncio.sleep(0.3)
            replica.process.send_signal(signal.SIGTERM)
            signalled = time.monotonic()
            answer = await call
            assert answer.status_code == 200, answer.text
            # The body ended about 2.9 s after SIGTERM, well past the listener's close (1 s).
            assert time.monotonic() - signalled > DRAIN_SECONDS + 1
            code = await asyncio.wait_for(replica.process.wait(), 10)
        assert code == 0
        assert time.monotonic() - signalled < 10
    finally:
        await replica.kill()

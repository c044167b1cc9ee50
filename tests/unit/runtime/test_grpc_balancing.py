"""Issue #22 item 3: calls spread over every replica a target resolves to, and a replica that
drains (SIGTERM: NOT_SERVING, drain pause, grace) is left by its clients without a failed call;
a max connection age makes clients reconnect (and re-resolve) without failing calls either.

Two real servers of the runtime's bootstrap; the client's target lists both addresses (a
headless Service's DNS answer is the same list, through `dns:///`).
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import AsyncIterator
from dataclasses import field
from typing import Any

import grpc
import pytest

from storypost.account.v1 import account_pb2 as pb
from storypost.account.v1 import account_pb2_grpc
from storypost_runtime.component import component
from storypost_runtime.grpc_client import aio_channel
from storypost_runtime.grpc_server import GrpcServer
from tests.support.account_server import account_server


@component
class Named(account_pb2_grpc.AccountServiceServicer):
    """Answers with its replica's name, a little slowly (calls overlap a drain)."""

    name: str
    # The client ends of the connections calls came on (a new port: a new connection).
    peers: set[str] = field(init=False, default_factory=set)
    # When each call arrived (loop time).
    arrivals: list[float] = field(init=False, default_factory=list)

    async def GetOrganization(self, request: Any, context: Any) -> Any:
        self.peers.add(context.peer())
        self.arrivals.append(asyncio.get_running_loop().time())
        await asyncio.sleep(0.02)
        return pb.Organization(organization_id=self.name)


async def replica(name: str, **settings: Any) -> tuple[GrpcServer, int, Named]:
    servicer = Named(name)  # type: ignore[abstract]
    server = account_server(servicer, shutdown_grace_seconds=5, **settings)
    return server, await server.start(), servicer


@pytest.fixture
async def replicas() -> AsyncIterator[list[tuple[GrpcServer, int, Named]]]:
    started = [
        await replica("a", shutdown_drain_seconds=0.5),
        await replica("b", shutdown_drain_seconds=0.5),
    ]
    yield started
    for server, _, _ in started:
        await server.stop()


async def call_stream(channel: grpc.aio.Channel, until: asyncio.Event) -> Counter[str]:
    """Calls back to back from 4 callers until `until` is set; every call must succeed."""
    stub = account_pb2_grpc.AccountServiceStub(channel)
    answered: Counter[str] = Counter()

    async def caller() -> None:
        while not until.is_set():
            org = await stub.GetOrganization(pb.GetOrganizationRequest())
            answered[org.organization_id] += 1

    await asyncio.gather(*(caller() for _ in range(4)))
    return answered


async def test_calls_spread_over_replicas_and_a_draining_one_is_left_without_failures(
    replicas: list[tuple[GrpcServer, int, Named]],
) -> None:
    (first, first_port, first_named), (_, second_port, _) = replicas
    target = f"ipv4:127.0.0.1:{first_port},127.0.0.1:{second_port}"
    async with aio_channel(target, 5.0) as channel:
        done = asyncio.Event()
        both = await asyncio.gather(call_stream(channel, done), stop_after(done, 1.0))
        # Round robin: both replicas share the calls (pick-first would send all to one).
        shared = both[0]
        assert min(shared["a"], shared["b"]) > 0.3 * sum(shared.values()), shared
        done = asyncio.Event()
        stream = asyncio.create_task(call_stream(channel, done))
        await asyncio.sleep(0.3)
        # SIGTERM on replica a: NOT_SERVING, drain, then in-flight calls finish in the grace.
        stopping = asyncio.get_running_loop().time()
        await first.stop()
        await asyncio.sleep(0.5)
        done.set()
        answered = await stream  # raises if any call failed
    assert answered["b"] > answered["a"] > 0, answered
    # The clients watch each replica's health: once a says NOT_SERVING they stop sending it
    # calls well within its drain pause (0.5 s), so none reach it as its server stops.
    late = [t - stopping for t in first_named.arrivals if t - stopping > 0.3]
    assert not late, late


async def stop_after(event: asyncio.Event, seconds: float) -> None:
    await asyncio.sleep(seconds)
    event.set()


async def test_an_old_connection_is_closed_by_age_without_failing_a_call() -> None:
    server, port, servicer = await replica(
        "aged", grpc_max_connection_age_seconds=0.5, grpc_max_connection_age_grace_seconds=2
    )
    try:
        async with aio_channel(f"127.0.0.1:{port}", 5.0) as channel:
            done = asyncio.Event()
            stream = asyncio.create_task(call_stream(channel, done))
            # Several connection ages go by while calls keep coming.
            await asyncio.sleep(2.0)
            done.set()
            answered = await stream
        assert answered["aged"] > 20
        # The client came back on new connections (where it would re-resolve its target).
        assert len(servicer.peers) >= 3, servicer.peers
    finally:
        await server.stop()

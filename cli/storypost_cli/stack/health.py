"""Health probes: each returns when its component answers and raises (with a reason) otherwise."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import aioboto3
import grpc
import httpx
from aiobotocore.config import AioConfig
from grpc_health.v1 import health_pb2, health_pb2_grpc
from pymongo import AsyncMongoClient

Probe = Callable[[], Awaitable[None]]

# One attempt should never take long: the supervisor retries until its own deadline.
_ATTEMPT_SECONDS = 2.0


class NotReady(Exception):
    """The component answered, but not (yet) the way a healthy one does."""


def mongo_ping(url: str) -> Probe:
    """`ping` on the admin database answers ok."""

    async def probe() -> None:
        timeout_ms = int(_ATTEMPT_SECONDS * 1000)
        client: AsyncMongoClient[dict[str, object]] = AsyncMongoClient(
            url, serverSelectionTimeoutMS=timeout_ms, connectTimeoutMS=timeout_ms
        )
        try:
            reply = await client.admin.command("ping")
        finally:
            await client.close()
        if reply.get("ok") != 1:
            raise NotReady(f"ping answered {reply!r}")

    return probe


def http_ok(url: str) -> Probe:
    """GET `url` answers 200."""

    async def probe() -> None:
        async with httpx.AsyncClient(timeout=_ATTEMPT_SECONDS, trust_env=False) as client:
            response = await client.get(url)
        if response.status_code != 200:
            raise NotReady(f"GET {url} answered {response.status_code}: {response.text[:200]}")

    return probe


def grpc_serving(address: str) -> Probe:
    """The standard gRPC health service says SERVING for the whole server (service "")."""

    async def probe() -> None:
        async with grpc.aio.insecure_channel(address) as channel:
            stub = health_pb2_grpc.HealthStub(channel)
            try:
                reply = await stub.Check(
                    health_pb2.HealthCheckRequest(service=""), timeout=_ATTEMPT_SECONDS
                )
            except grpc.aio.AioRpcError as error:
                raise NotReady(f"health check: {error.code().name} {error.details()}") from None
        if reply.status != health_pb2.HealthCheckResponse.SERVING:
            status = health_pb2.HealthCheckResponse.ServingStatus.Name(reply.status)
            raise NotReady(f"health status {status}")

    return probe


def seaweed_volume_space(master_url: str) -> Probe:
    """The SeaweedFS master knows a volume server with room: the first upload will not wait."""

    async def probe() -> None:
        async with httpx.AsyncClient(timeout=_ATTEMPT_SECONDS, trust_env=False) as client:
            response = await client.get(f"{master_url}/dir/status")
        response.raise_for_status()
        topology = response.json().get("Topology") or {}
        if not topology.get("Free"):
            raise NotReady("no volume server has registered with the master yet")

    return probe


def all_of(*probes: Probe) -> Probe:
    """Healthy when every probe passes, checked in order."""

    async def probe() -> None:
        for each in probes:
            await each()

    return probe


def s3_list_buckets(endpoint_url: str, access_key: str, secret_key: str, region: str) -> Probe:
    """A signed ListBuckets succeeds: the gateway is up and knows our identity."""
    config = AioConfig(
        connect_timeout=_ATTEMPT_SECONDS,
        read_timeout=_ATTEMPT_SECONDS,
        retries={"max_attempts": 1},
    )

    async def probe() -> None:
        session = aioboto3.Session()
        async with session.client(
            "s3",
            endpoint_url=endpoint_url,
            aws_access_key_id=access_key,
            aws_secret_access_key=secret_key,
            region_name=region,
            config=config,
        ) as client:
            await client.list_buckets()

    return probe

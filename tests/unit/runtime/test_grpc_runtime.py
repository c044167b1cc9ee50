"""The shared gRPC bootstrap: errors become rich statuses, request ids travel, health flips."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from prometheus_client import CollectorRegistry
from pymongo.errors import ServerSelectionTimeoutError, WTimeoutError

from storypost.account.v1 import account_pb2 as pb
from storypost.account.v1 import account_pb2_grpc
from storypost_runtime.context import current_request_id, request_scope
from storypost_runtime.errors import InvalidArgument, ResourceExhausted
from storypost_runtime.grpc_client import aio_channel
from storypost_runtime.grpc_server import GrpcServer
from storypost_runtime.status import details_from
from tests.support.account_server import SERVICE, account_server


class Faulty(account_pb2_grpc.AccountServiceServicer):
    """Each RPC fails in its own way; GetOrganization echoes the request id it saw."""

    async def CreateOrganization(self, request: Any, context: Any) -> Any:
        raise InvalidArgument(
            "bad name", field_violations={"name": ["too long"]}, reason="NAME_TOO_LONG"
        )

    async def ConsumeRateLimit(self, request: Any, context: Any) -> Any:
        raise ResourceExhausted("quota used up", retry_after_seconds=2.5, reason="QUOTA_EXCEEDED")

    async def GetOrganization(self, request: Any, context: Any) -> Any:
        return pb.Organization(organization_id=current_request_id() or "none")

    async def Authenticate(self, request: Any, context: Any) -> Any:
        raise ServerSelectionTimeoutError("mongo down")

    async def CreateUser(self, request: Any, context: Any) -> Any:
        raise RuntimeError("secret internals /path/to/file.py line 3")

    async def ListApiCredentials(self, request: Any, context: Any) -> Any:
        raise WTimeoutError("waiting for replication timed out", 64)

    CreateApiCredential = RevokeApiCredential = VerifyUserPassword = CreateUser


@pytest.fixture
async def server() -> AsyncIterator[tuple[GrpcServer, str, CollectorRegistry]]:
    registry = CollectorRegistry()
    srv = account_server(Faulty(), registry)  # type: ignore[abstract]
    port = await srv.start()
    yield srv, f"127.0.0.1:{port}", registry
    await srv.stop()


@pytest.fixture
async def stub(server: Any) -> AsyncIterator[account_pb2_grpc.AccountServiceAsyncStub]:
    """A client of the server, calls with a 5 s deadline."""
    _srv, address, _ = server
    async with aio_channel(address, 5.0) as channel:
        yield account_pb2_grpc.AccountServiceStub(channel)


async def test_domain_errors_carry_message_violations_reason_and_retry(
    stub: account_pb2_grpc.AccountServiceAsyncStub,
) -> None:
    with pytest.raises(grpc.aio.AioRpcError) as bad:
        await stub.CreateOrganization(pb.CreateOrganizationRequest(name="x"))
    details = details_from(bad.value)
    assert details.code == grpc.StatusCode.INVALID_ARGUMENT
    assert details.message == "bad name"
    assert details.field_violations == {"name": ["too long"]}
    assert details.reason == "NAME_TOO_LONG"
    with pytest.raises(grpc.aio.AioRpcError) as busy:
        await stub.ConsumeRateLimit(pb.ConsumeRateLimitRequest())
    details = details_from(busy.value)
    assert details.code == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert details.retry_after_seconds == pytest.approx(2.5)


async def test_database_down_is_unavailable_and_crashes_hide_internals(
    server: Any, stub: account_pb2_grpc.AccountServiceAsyncStub
) -> None:
    _srv, _address, registry = server
    with pytest.raises(grpc.aio.AioRpcError) as down:
        await stub.Authenticate(pb.AuthenticateRequest(token="t"))
    assert down.value.code() == grpc.StatusCode.UNAVAILABLE
    # A write its replicas did not confirm in time: slow, not broken (retry, same UUID).
    with pytest.raises(grpc.aio.AioRpcError) as slow:
        await stub.ListApiCredentials(pb.ListApiCredentialsRequest())
    assert slow.value.code() == grpc.StatusCode.UNAVAILABLE
    with pytest.raises(grpc.aio.AioRpcError) as crash:
        await stub.CreateUser(pb.CreateUserRequest())
    assert crash.value.code() == grpc.StatusCode.INTERNAL
    assert crash.value.details() == "internal error"
    count = registry.get_sample_value(
        "storypost_grpc_requests_total",
        {"method": f"/{SERVICE}/CreateUser", "code": "INTERNAL"},
    )
    assert count == 1


async def test_request_id_travels_in_metadata(
    stub: account_pb2_grpc.AccountServiceAsyncStub,
) -> None:
    with request_scope("req-12345"):
        reply = await stub.GetOrganization(pb.GetOrganizationRequest())
    assert reply.organization_id == "req-12345"
    # Without a bound id the server makes its own.
    reply = await stub.GetOrganization(pb.GetOrganizationRequest())
    assert reply.organization_id not in ("none", "req-12345") and len(reply.organization_id) == 32


async def test_health_and_deadline(server: Any) -> None:
    srv, address, _ = server
    async with aio_channel(address, 0.5) as channel:
        health = health_pb2_grpc.HealthStub(channel)
        for name in ("", SERVICE):
            reply = await health.Check(health_pb2.HealthCheckRequest(service=name))
            assert reply.status == health_pb2.HealthCheckResponse.SERVING
        await srv.stop()
    # A stopped server: calls fail fast with UNAVAILABLE instead of hanging.
    async with aio_channel(address, 0.5) as channel:
        with pytest.raises(grpc.aio.AioRpcError) as gone:
            await health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest())
        assert gone.value.code() in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED)


async def test_downstream_errors_pass_through_with_details(server: Any) -> None:
    """A service relaying another service's failure keeps its code, message and details."""
    _srv, address, _ = server
    downstream = aio_channel(address, 5.0)

    class Relaying(Faulty):
        async def GetOrganization(self, request: Any, context: Any) -> Any:
            stub = account_pb2_grpc.AccountServiceStub(downstream)
            return await stub.ConsumeRateLimit(pb.ConsumeRateLimitRequest())

    registry = CollectorRegistry()
    relay = account_server(Relaying(), registry)  # type: ignore[abstract]
    port = await relay.start()
    try:
        async with aio_channel(f"127.0.0.1:{port}", 5.0) as channel:
            with pytest.raises(grpc.aio.AioRpcError) as relayed:
                await account_pb2_grpc.AccountServiceStub(channel).GetOrganization(
                    pb.GetOrganizationRequest()
                )
        details = details_from(relayed.value)
        assert details.code == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert details.message == "quota used up"
        assert details.retry_after_seconds == pytest.approx(2.5)
        assert details.reason == "QUOTA_EXCEEDED"
    finally:
        await relay.stop()
        await downstream.close()

"""storypost_runtime's GrpcServer serving one AccountService servicer on a free port: the
runtime's tests use the account service's API to stand for any service's."""

from __future__ import annotations

from typing import Any

from opentelemetry.trace import TracerProvider
from prometheus_client import CollectorRegistry

from storypost.account.v1 import account_pb2_grpc
from storypost_runtime.grpc_server import GrpcServer
from storypost_runtime.metrics import RpcMetrics
from storypost_runtime.service_auth import Restrictions
from storypost_runtime.settings import GrpcServerSettings

SERVICE = "storypost.account.v1.AccountService"


def account_server(
    servicer: account_pb2_grpc.AccountServiceServicer,
    registry: CollectorRegistry | None = None,
    *,
    restrictions: Restrictions | None = None,
    tracer_provider: TracerProvider | None = None,
    **settings: Any,
) -> GrpcServer:
    """Not started yet; `settings` (GrpcServerSettings fields) replace a free port and a
    one-second shutdown grace."""
    return GrpcServer(
        GrpcServerSettings(**{"grpc_port": 0, "shutdown_grace_seconds": 1, **settings}),
        [SERVICE],
        lambda server: account_pb2_grpc.add_AccountServiceServicer_to_server(servicer, server),
        RpcMetrics.create(registry or CollectorRegistry()),
        restrictions,
        tracer_provider,
    )

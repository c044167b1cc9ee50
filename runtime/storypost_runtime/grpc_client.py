"""gRPC channels for callers: request id, caller token and a deadline on every call.

Calls are balanced round robin over every address the target resolves to: with a headless
Kubernetes Service (`dns:///account-svc:50051`) that is every ready replica. The servers'
max connection age makes clients re-resolve, so replicas added later get calls too.

When tracing is on (storypost_runtime.tracing), every call is a client span and carries the
W3C `traceparent` in its metadata (opentelemetry-instrumentation-grpc's interceptors, which
support both the blocking and the asyncio API); when it is off no interceptor is added and the
instrumentation is not even imported.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import KW_ONLY
from typing import Any

import grpc
from opentelemetry.trace import TracerProvider

from storypost_runtime.component import component
from storypost_runtime.context import REQUEST_ID_METADATA_KEY, current_request_id
from storypost_runtime.service_auth import AUTHORIZATION_METADATA_KEY, TokenSigner
from storypost_runtime.tracing import provider_for

CHANNEL_OPTIONS = [
    ("grpc.max_receive_message_length", 64 * 1024 * 1024),
    ("grpc.max_send_message_length", 64 * 1024 * 1024),
    ("grpc.keepalive_time_ms", 30_000),
    ("grpc.keepalive_timeout_ms", 10_000),
    # Reconnect quickly after a service restarts.
    ("grpc.initial_reconnect_backoff_ms", 200),
    ("grpc.max_reconnect_backoff_ms", 2_000),
    # Round robin over every address, and client-side health checking (grpc.health.v1 Watch,
    # open to every caller): a replica that says NOT_SERVING at SIGTERM gets no new calls
    # during its drain pause, so none arrive as its server stops (a call the server has
    # received but not yet handed to a handler when it stops is answered CANCELLED).
    # A server with no health service (UNIMPLEMENTED) is taken as healthy.
    (
        "grpc.service_config",
        json.dumps(
            {
                "loadBalancingConfig": [{"round_robin": {}}],
                "healthCheckConfig": {"serviceName": ""},
            }
        ),
    ),
]


def _with_defaults(details: Any, default_timeout: float, signer: TokenSigner | None) -> Any:
    metadata = list(details.metadata or ())
    request_id = current_request_id()
    if request_id and not any(k == REQUEST_ID_METADATA_KEY for k, _ in metadata):
        metadata.append((REQUEST_ID_METADATA_KEY, request_id))
    if signer is not None and not any(k == AUTHORIZATION_METADATA_KEY for k, _ in metadata):
        method = details.method
        metadata.append(
            signer.metadata_for(method.decode() if isinstance(method, bytes) else method)
        )
    timeout = details.timeout if details.timeout is not None else default_timeout
    return details._replace(metadata=metadata, timeout=timeout)


@component
class _AioDefaults(grpc.aio.UnaryUnaryClientInterceptor):
    _: KW_ONLY
    default_timeout: float
    signer: TokenSigner | None
    wait_for_ready: bool

    async def intercept_unary_unary(
        self, continuation: Callable[..., Any], client_call_details: Any, request: Any
    ) -> Any:
        details = _with_defaults(client_call_details, self.default_timeout, self.signer)
        if self.wait_for_ready and details.wait_for_ready is None:
            details = details._replace(wait_for_ready=True)
        return await continuation(details, request)


@component
class _SyncDefaults(grpc.UnaryUnaryClientInterceptor):
    default_timeout: float
    signer: TokenSigner | None

    def intercept_unary_unary(
        self, continuation: Callable[..., Any], client_call_details: Any, request: Any
    ) -> Any:
        return continuation(
            _with_defaults(client_call_details, self.default_timeout, self.signer), request
        )


def aio_channel(
    address: str,
    default_timeout: float,
    signer: TokenSigner | None = None,
    *,
    wait_for_ready: bool = False,
    tracer_provider: TracerProvider | None = None,
) -> grpc.aio.Channel:
    """An asyncio channel whose calls carry the request id, `signer`'s token and a deadline.

    Services fail fast (UNAVAILABLE, answered 503 + Retry-After); `wait_for_ready` makes a
    call wait within its deadline for a service that is (re)starting instead, as an operator's
    or a test's client may want.
    """
    interceptors: list[Any] = [
        _AioDefaults(default_timeout=default_timeout, signer=signer, wait_for_ready=wait_for_ready)
    ]
    provider = provider_for(tracer_provider)
    if provider is not None:
        from opentelemetry.instrumentation.grpc import aio_client_interceptors

        # After ours: the span covers the call as sent, with the metadata ours added.
        # The instrumentation package ships no type hints.
        interceptors += aio_client_interceptors(tracer_provider=provider)  # type: ignore[no-untyped-call]
    return grpc.aio.insecure_channel(address, options=CHANNEL_OPTIONS, interceptors=interceptors)


def sync_channel(
    address: str,
    default_timeout: float,
    signer: TokenSigner | None = None,
    *,
    tracer_provider: TracerProvider | None = None,
) -> grpc.Channel:
    """A blocking channel (the WSGI edge, the CLI) with the same defaults."""
    channel = grpc.insecure_channel(address, options=CHANNEL_OPTIONS)
    provider = provider_for(tracer_provider)
    if provider is not None:
        from opentelemetry.instrumentation.grpc import client_interceptor
        from opentelemetry.instrumentation.grpc.grpcext import intercept_channel

        traced = client_interceptor(tracer_provider=provider)  # type: ignore[no-untyped-call]
        channel = intercept_channel(channel, traced)  # type: ignore[no-untyped-call]
    return grpc.intercept_channel(channel, _SyncDefaults(default_timeout, signer))

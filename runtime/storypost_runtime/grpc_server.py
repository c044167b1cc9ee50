"""The one gRPC server bootstrap: health, reflection, request ids, metrics, errors, SIGTERM."""

from __future__ import annotations

import asyncio
import signal
import time
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection
from opentelemetry.trace import TracerProvider
from pymongo.errors import ConnectionFailure, ExecutionTimeout, NetworkTimeout, PyMongoError

from storypost_runtime.context import request_id_from_metadata, request_scope
from storypost_runtime.errors import DomainError
from storypost_runtime.logs import get_logger
from storypost_runtime.metrics import RpcMetrics
from storypost_runtime.service_auth import CallerCheck, Restrictions, caller_verifier
from storypost_runtime.settings import GrpcServerSettings
from storypost_runtime.status import status_for
from storypost_runtime.tracing import provider_for

log = get_logger(__name__)

try:  # services with the s3 extra: the media store not answering is an outage too
    from botocore.exceptions import ClientError as _StoreError
    from botocore.exceptions import ConnectionError as _StoreConnectionError
    from botocore.exceptions import HTTPClientError as _StoreHttpError

    _STORE_DOWN: tuple[type[Exception], ...] = (_StoreConnectionError, _StoreHttpError)
except ImportError:  # pragma: no cover - a service without the s3 extra
    _StoreError = None  # type: ignore[assignment,misc]
    _STORE_DOWN = ()

_DEPENDENCY_DOWN: tuple[type[Exception], ...] = (
    ConnectionFailure,
    ExecutionTimeout,
    NetworkTimeout,
    *_STORE_DOWN,
)
STORE_DOWN_MESSAGE = "a storage dependency is unavailable; retry later"


def _store_unavailable(error: Exception) -> bool:
    """A media store that answered 5xx (restarting, overloaded): retry later, not a bug."""
    if _StoreError is None or not isinstance(error, _StoreError):
        return False
    status = error.response.get("ResponseMetadata", {}).get("HTTPStatusCode") or 0
    return int(status) >= 500


class ServiceInterceptor(grpc.aio.ServerInterceptor):
    """Binds the request id, counts calls, and turns exceptions into status codes.

    Domain errors keep their message; a database or media store that does not answer
    becomes UNAVAILABLE;
    anything else becomes INTERNAL with a generic message (the traceback goes to the log only).
    """

    def __init__(self, metrics: RpcMetrics) -> None:
        self._metrics = metrics

    async def intercept_service(
        self,
        continuation: Callable[
            [grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler[Any, Any] | None]
        ],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler[Any, Any] | None:
        handler = await continuation(handler_call_details)
        if handler is None or handler.unary_unary is None:
            return handler
        method: str = handler_call_details.method
        metadata = dict(handler_call_details.invocation_metadata or ())
        inner: Any = handler.unary_unary
        metrics = self._metrics

        async def wrapped(request: Any, context: grpc.aio.ServicerContext[Any, Any]) -> Any:
            started = time.perf_counter()
            code = grpc.StatusCode.OK
            with request_scope(request_id_from_metadata(metadata)):
                try:
                    return await inner(request, context)
                except DomainError as error:
                    status = status_for(error)
                    code = status.code
                    await context.abort(status.code, status.details, status.trailing_metadata)
                except grpc.aio.AioRpcError as error:
                    # A call to another service failed: keep its status and details, except
                    # that its deadline running out means that service is unavailable to us.
                    code = error.code()
                    trailers = _details_only(error.trailing_metadata())
                    if code == grpc.StatusCode.DEADLINE_EXCEEDED:
                        code, trailers = grpc.StatusCode.UNAVAILABLE, ()
                    log.warning("downstream call failed", method=method, code=code.name)
                    await context.abort(code, error.details() or "", trailers)
                except _DEPENDENCY_DOWN as error:
                    code = grpc.StatusCode.UNAVAILABLE
                    log.warning("dependency unavailable", method=method, error=str(error))
                    await context.abort(code, STORE_DOWN_MESSAGE)
                except PyMongoError:
                    code = grpc.StatusCode.INTERNAL
                    log.exception("database error", method=method)
                    await context.abort(code, "internal error")
                except (asyncio.CancelledError, grpc.aio.AbortError):
                    aborted: Any = context.code()
                    code = (
                        aborted
                        if isinstance(aborted, grpc.StatusCode)
                        else grpc.StatusCode.CANCELLED
                    )
                    raise
                except Exception as error:
                    if _store_unavailable(error):
                        code = grpc.StatusCode.UNAVAILABLE
                        log.warning("media store unavailable", method=method, error=str(error))
                        await context.abort(
                            code, "a storage dependency is unavailable; retry later"
                        )
                    code = grpc.StatusCode.INTERNAL
                    log.exception("unhandled error", method=method)
                    await context.abort(code, "internal error")
                finally:
                    metrics.requests.labels(method, code.name).inc()
                    metrics.latency.labels(method).observe(time.perf_counter() - started)

        return grpc.unary_unary_rpc_method_handler(
            wrapped,
            request_deserializer=handler.request_deserializer,
            response_serializer=handler.response_serializer,
        )


def _server_options(settings: GrpcServerSettings) -> list[tuple[str, int]]:
    options = [
        ("grpc.max_receive_message_length", 64 * 1024 * 1024),
        ("grpc.max_send_message_length", 64 * 1024 * 1024),
        ("grpc.keepalive_permit_without_calls", 1),
        ("grpc.http2.min_ping_interval_without_data_ms", 10_000),
    ]
    if settings.grpc_max_connection_age_seconds:
        # GOAWAY after this age: clients reconnect and re-resolve the headless Service's
        # addresses, so new replicas get calls; calls in flight get the grace to finish.
        options += [
            ("grpc.max_connection_age_ms", int(settings.grpc_max_connection_age_seconds * 1000)),
            (
                "grpc.max_connection_age_grace_ms",
                int(settings.grpc_max_connection_age_grace_seconds * 1000),
            ),
        ]
    return options


def _details_only(trailing: Any) -> tuple[tuple[str, str | bytes], ...]:
    """The rich-status entry of a downstream call's trailers, to pass on unchanged."""
    return tuple(
        (key, value) for key, value in (trailing or ()) if key == "grpc-status-details-bin"
    )


Registrar = Callable[[grpc.aio.Server], None]


class GrpcServer:
    """A started aio server with health and reflection for the given service names.

    Calls pass the caller check (storypost_runtime.service_auth) inside the service
    interceptor, so refused calls are counted and logged like any other.
    """

    def __init__(
        self,
        settings: GrpcServerSettings,
        service_names: Iterable[str],
        register: Registrar,
        metrics: RpcMetrics,
        restrictions: Restrictions | None = None,
        tracer_provider: TracerProvider | None = None,
    ) -> None:
        self._settings = settings
        self._names = list(service_names)
        self.verifier = caller_verifier(settings.service_public_keys)
        interceptors: list[grpc.aio.ServerInterceptor] = [
            ServiceInterceptor(metrics),
            CallerCheck(self.verifier, restrictions or {}),
        ]
        provider = provider_for(tracer_provider)
        if provider is not None:
            from opentelemetry.instrumentation.grpc import aio_server_interceptor, filters

            # Outermost: the server span (its parent from the caller's `traceparent`) is
            # current while the request id is bound, so the span gets it as an attribute.
            # Not around the health and reflection services: the interceptor only wraps
            # streaming handlers written as async generators, and theirs write to the context
            # (Health/Watch, which every client's health checking calls, would fail).
            untraced = filters.any_of(
                filters.health_check(), filters.service_prefix("grpc.reflection.")
            )
            traced = aio_server_interceptor(  # type: ignore[no-untyped-call]
                tracer_provider=provider,
                filter_=filters.negate(untraced),
            )
            interceptors.insert(0, traced)
        self._server = grpc.aio.server(interceptors=interceptors, options=_server_options(settings))
        self._health = health.aio.HealthServicer()
        register(self._server)
        health_pb2_grpc.add_HealthServicer_to_server(self._health, self._server)
        reflection.enable_server_reflection(
            [
                *self._names,
                health_pb2.DESCRIPTOR.services_by_name["Health"].full_name,
                reflection.SERVICE_NAME,
            ],
            self._server,
        )
        self.port = 0

    async def start(self) -> int:
        address = f"{self._settings.grpc_host}:{self._settings.grpc_port}"
        self.port = self._server.add_insecure_port(address)
        if self.port == 0:
            raise RuntimeError(f"cannot listen on {address}")
        await self._server.start()
        await self._set_all(health_pb2.HealthCheckResponse.SERVING)
        return self.port

    async def _set_all(
        self, status: health_pb2.HealthCheckResponse.ServingStatus.ValueType
    ) -> None:
        for name in ("", *self._names):
            await self._health.set(name, status)

    async def stop(self) -> None:
        """NOT_SERVING first, then let in-flight calls finish within the grace period."""
        await self._set_all(health_pb2.HealthCheckResponse.NOT_SERVING)
        if self._settings.shutdown_drain_seconds:
            await asyncio.sleep(self._settings.shutdown_drain_seconds)
        await self._server.stop(self._settings.shutdown_grace_seconds)


def stop_signal() -> asyncio.Event:
    """An event set by SIGTERM or SIGINT."""
    event = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, event.set)
    return event

"""The one gRPC server bootstrap: health, reflection, request ids, metrics, errors, SIGTERM."""

from __future__ import annotations

import asyncio
import signal
import time
from collections.abc import Callable, Iterable
from typing import Any, NamedTuple

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection
from opentelemetry.trace import TracerProvider
from pymongo.errors import ConnectionFailure, PyMongoError

from storypost_runtime.context import request_id_from_metadata, request_scope
from storypost_runtime.errors import DomainError
from storypost_runtime.interceptors import (
    Behaviour,
    Continuation,
    Handler,
    invocation_metadata,
    unary_handler,
)
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

# A database that does not answer (its time limits are PyMongo's `timeout`, in `_failure`).
_DEPENDENCY_DOWN: tuple[type[Exception], ...] = (ConnectionFailure, *_STORE_DOWN)
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
        self, continuation: Continuation, handler_call_details: grpc.HandlerCallDetails
    ) -> Handler | None:
        handler = await continuation(handler_call_details)
        if handler is None or handler.unary_unary is None:
            return handler
        # An aio server's methods are coroutines, though grpc types them in the sync form.
        inner: Any = handler.unary_unary
        guarded = self._guarded(
            handler_call_details.method, invocation_metadata(handler_call_details), inner
        )
        return unary_handler(guarded, like=handler)

    def _guarded(self, method: str, metadata: dict[str, Any], inner: Behaviour) -> Behaviour:
        """`inner` inside the call's request id, counted, its failures answered by `_failure`."""

        async def guarded(request: Any, context: grpc.aio.ServicerContext[Any, Any]) -> Any:
            started = time.perf_counter()
            code = grpc.StatusCode.OK
            with request_scope(request_id_from_metadata(metadata)):
                try:
                    return await inner(request, context)
                except (asyncio.CancelledError, grpc.aio.AbortError):
                    code = _aborted_code(context)
                    raise
                except Exception as error:
                    answer = _failure(method, error)
                    code = answer.code
                    await context.abort(answer.code, answer.details, answer.trailers)
                finally:
                    self._count(method, code, started)

        return guarded

    def _count(self, method: str, code: grpc.StatusCode, started: float) -> None:
        self._metrics.requests.labels(method, code.name).inc()
        self._metrics.latency.labels(method).observe(time.perf_counter() - started)


class _Answer(NamedTuple):
    """The status a failed call ends with."""

    code: grpc.StatusCode
    details: str
    trailers: Any = ()


def _aborted_code(context: grpc.aio.ServicerContext[Any, Any]) -> grpc.StatusCode:
    """The code of a call the method aborted itself (CANCELLED when the client went away)."""
    aborted: Any = context.code()
    return aborted if isinstance(aborted, grpc.StatusCode) else grpc.StatusCode.CANCELLED


def _failure(method: str, error: Exception) -> _Answer:
    """What a method's exception answers, logged; called while the exception is handled."""
    if isinstance(error, DomainError):
        status = status_for(error)
        return _Answer(status.code, status.details, status.trailing_metadata)
    if isinstance(error, grpc.aio.AioRpcError):
        return _downstream_failure(method, error)
    # PyMongo marks every error a time limit caused (`timeout`): a server-side time limit
    # (ExecutionTimeout), a socket timeout, a write concern not met in time (replicas
    # behind). The database was slow, not wrong: the caller retries with the same UUID.
    if isinstance(error, _DEPENDENCY_DOWN) or (isinstance(error, PyMongoError) and error.timeout):
        log.warning("dependency unavailable", method=method, error=str(error))
        return _Answer(grpc.StatusCode.UNAVAILABLE, STORE_DOWN_MESSAGE)
    if isinstance(error, PyMongoError):
        log.exception("database error", method=method)
        return _Answer(grpc.StatusCode.INTERNAL, "internal error")
    if _store_unavailable(error):
        log.warning("media store unavailable", method=method, error=str(error))
        return _Answer(grpc.StatusCode.UNAVAILABLE, STORE_DOWN_MESSAGE)
    log.exception("unhandled error", method=method)
    return _Answer(grpc.StatusCode.INTERNAL, "internal error")


def _downstream_failure(method: str, error: grpc.aio.AioRpcError) -> _Answer:
    """A call to another service failed: keep its status and details, except that its
    deadline running out means that service is unavailable to us."""
    code = error.code()
    trailers = _details_only(error.trailing_metadata())
    if code == grpc.StatusCode.DEADLINE_EXCEEDED:
        code, trailers = grpc.StatusCode.UNAVAILABLE, ()
    log.warning("downstream call failed", method=method, code=code.name)
    return _Answer(code, error.details() or "", trailers)


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

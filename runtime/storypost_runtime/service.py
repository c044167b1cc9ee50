"""Start-up and shutdown of a gRPC service in one place (AsyncExitStack)."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Awaitable, Callable, Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass, field

from prometheus_client import CollectorRegistry

from storypost_runtime.grpc_server import GrpcServer, Registrar, stop_signal
from storypost_runtime.logs import configure_logging, get_logger
from storypost_runtime.metrics import RpcMetrics, serve_metrics
from storypost_runtime.service_auth import Restrictions
from storypost_runtime.settings import GrpcServerSettings, SettingRefused, load_settings
from storypost_runtime.tracing import configure_tracing


@dataclass(frozen=True)
class ServiceParts:
    """What a service's build step hands back: its gRPC services and how to add them."""

    service_names: Sequence[str]
    register: Registrar
    # Procedures that answer only some callers (the rest answer every signed caller).
    restrictions: Restrictions = field(default_factory=dict)


Builder = Callable[[AsyncExitStack, CollectorRegistry], Awaitable[ServiceParts]]


async def serve(name: str, settings: GrpcServerSettings, build: Builder) -> None:
    """Builds the service (its collaborators enter `stack`), serves until SIGTERM, then stops.

    Order on stop: health NOT_SERVING, in-flight calls finish within the grace period, then
    the exit stack closes collaborators in reverse (background loops, NATS drain, Mongo).
    """
    log = get_logger(name)
    stopping = stop_signal()
    registry = CollectorRegistry()
    metrics = RpcMetrics.create(registry)
    async with AsyncExitStack() as stack:
        parts = await build(stack, registry)
        server = GrpcServer(
            settings, parts.service_names, parts.register, metrics, parts.restrictions
        )
        port = await server.start()
        metrics_port = serve_metrics(registry, settings.metrics_host, settings.metrics_port)
        if server.verifier is None:
            log.warning("STORYPOST_SERVICE_PUBLIC_KEYS is empty: every caller is answered")
        log.info(
            "serving",
            grpc_port=port,
            metrics_port=metrics_port,
            callers=sorted(server.verifier.callers) if server.verifier else None,
        )
        await stopping.wait()
        log.info("stopping", grace_seconds=settings.shutdown_grace_seconds)
        await server.stop()
    log.info("stopped")


def run(name: str, settings: GrpcServerSettings, build: Builder) -> None:
    """Process entry point: logging and traces (before any channel or client is made: they
    are instrumented only when tracing is on), then serve() under asyncio.run()."""
    configure_logging(name, settings.log_level)
    traces = configure_tracing(name)
    try:
        asyncio.run(serve(name, settings, build))
    except SettingRefused as refused:
        get_logger(name).error("refused at start", error=str(refused))
        print(f"{name} cannot start: {refused}", file=sys.stderr)
        raise SystemExit(2) from None
    finally:
        if traces is not None:
            traces.shutdown()  # exports the spans still batched


def main[S: GrpcServerSettings](
    name: str,
    settings_class: type[S],
    build: Callable[[S, AsyncExitStack, CollectorRegistry], Awaitable[ServiceParts]],
) -> None:
    """`python -m <service>`: settings from the environment (exit 2 when bad), then run()."""
    settings = load_settings(settings_class)

    async def builder(stack: AsyncExitStack, registry: CollectorRegistry) -> ServiceParts:
        return await build(settings, stack, registry)

    run(name, settings, builder)

"""OpenTelemetry traces: set up once per process from the OTEL_* variables; context helpers.

With `OTEL_EXPORTER_OTLP_ENDPOINT` (or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`) set, a process
installs an SDK tracer provider that batches spans to that OTLP/gRPC endpoint; the exporter
reads the other standard variables itself (`OTEL_EXPORTER_OTLP_HEADERS`, `_INSECURE`,
`_TIMEOUT`, `OTEL_BSP_*`, `OTEL_TRACES_SAMPLER`, `OTEL_RESOURCE_ATTRIBUTES`). Without it nothing
is installed: the API's no-op provider stays, the gRPC/Mongo instrumentation is not even added
(`provider_for`), and the few spans of our own code are non-recording no-ops.

The global tracer provider, set once at process start, is OpenTelemetry's own pattern (the
instrumentations and `trace.get_tracer` read it); it is the one process-wide object we keep.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping, MutableMapping
from contextlib import contextmanager
from typing import TYPE_CHECKING

from opentelemetry import context as otel_context
from opentelemetry import propagate, trace
from opentelemetry.context import Context
from opentelemetry.trace import NoOpTracerProvider, ProxyTracerProvider
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

if TYPE_CHECKING:  # the SDK is imported only by a process that traces (it costs ~30 ms)
    from opentelemetry.sdk.trace import TracerProvider

ENDPOINT_VARIABLES = ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT")
TRACEPARENT = "traceparent"
TRACER_NAME = "storypost"
# Stored records carry W3C trace context whatever OTEL_PROPAGATORS says.
_W3C = TraceContextTextMapPropagator()
# The edge's request id, kept on every span that handles the request (logs carry it too).
REQUEST_ID_ATTRIBUTE = "storypost.request_id"


def tracing_wanted(environ: Mapping[str, str]) -> bool:
    """An OTLP endpoint is configured and the SDK is not switched off."""
    if environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    if environ.get("OTEL_TRACES_EXPORTER", "otlp").strip().lower() == "none":
        return False
    return any(environ.get(name, "").strip() for name in ENDPOINT_VARIABLES)


def configure_tracing(
    service: str, environ: Mapping[str, str] | None = None
) -> TracerProvider | None:
    """Installs the global SDK provider with an OTLP exporter when an endpoint is set.

    Returns the provider (call `shutdown()` on exit to flush the last spans), or None when
    tracing is off. Call once, at process start, before any channel or client is made.
    """
    env = os.environ if environ is None else environ
    if not tracing_wanted(env):
        return None
    # Imported only when wanted: the SDK and the exporter are more than a traceless process
    # needs.
    from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import (
        OTLPSpanExporter,
    )
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    provider = TracerProvider(resource=Resource.create({"service.name": service}))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    trace.set_tracer_provider(provider)
    return provider


def provider_for(explicit: trace.TracerProvider | None = None) -> trace.TracerProvider | None:
    """The provider to instrument with: `explicit` (tests), else the global one when a real
    provider was installed, else None (tracing off: add no instrumentation at all)."""
    if explicit is not None:
        return explicit
    current = trace.get_tracer_provider()
    return None if isinstance(current, (ProxyTracerProvider, NoOpTracerProvider)) else current


def tracer(provider: trace.TracerProvider | None = None) -> trace.Tracer:
    """Our own spans' tracer (a no-op one when tracing is off)."""
    return trace.get_tracer(TRACER_NAME, tracer_provider=provider)


def inject(carrier: MutableMapping[str, str]) -> None:
    """Adds the current context (W3C `traceparent`, and `tracestate` when present)."""
    propagate.inject(carrier)


def extract(carrier: Mapping[str, str] | None) -> Context:
    """The context a carrier (NATS headers, an outbox record) brought; empty when none."""
    return propagate.extract(dict(carrier or {}))


def current_traceparent() -> str | None:
    """The current span's W3C traceparent, for a record that is published later; None when
    no span is recording (tracing off)."""
    carrier: dict[str, str] = {}
    _W3C.inject(carrier)
    return carrier.get(TRACEPARENT)


def context_of_traceparent(traceparent: str | None) -> Context | None:
    """The context a stored traceparent names; None when there is none."""
    return _W3C.extract({TRACEPARENT: traceparent}) if traceparent else None


@contextmanager
def in_stored_trace(traceparent: str | None) -> Iterator[None]:
    """Runs the block in the trace a stored traceparent names (work picked up later, in
    another task: an outbox event, a delivery retry); as it is when there is none."""
    stored = context_of_traceparent(traceparent)
    token = otel_context.attach(stored) if stored is not None else None
    try:
        yield
    finally:
        if token is not None:
            otel_context.detach(token)


def mark_request_id(request_id: str) -> None:
    """Puts the request id on the current span (nothing when no span records)."""
    span = trace.get_current_span()
    if span.is_recording():
        span.set_attribute(REQUEST_ID_ATTRIBUTE, request_id)

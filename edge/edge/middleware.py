"""Per-request work around every answer: request id, trace span, access log, metrics, in-flight
count."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import field
from typing import Any

import falcon
from opentelemetry import trace
from opentelemetry.trace import SpanKind, Tracer
from prometheus_client import Counter, Gauge, Histogram

from storypost_runtime.component import component
from storypost_runtime.context import REQUEST_ID_HEADER, clean_request_id, request_scope
from storypost_runtime.logs import get_logger
from storypost_runtime.metrics import LATENCY_BUCKETS, Metrics, counter, gauge, histogram
from storypost_runtime.tracing import extract, tracer

log = get_logger("edge.access")
REQUEST_ID_ENV = "storypost.request_id"
# Route fields that are credentials: a connect link's token and a temp blob URL's key are
# the whole authorization of their URL, so they never reach a log line or a metric label.
SECRET_ROUTE_FIELDS = frozenset({"{token}", "{key}", "{signature}"})


def loggable_path(req: falcon.Request) -> str:
    """The request path with the segments of secret route fields replaced."""
    template = req.uri_template
    if not template or not SECRET_ROUTE_FIELDS.intersection(template.split("/")):
        return req.path
    shape, path = template.split("/"), req.path.split("/")
    if len(shape) != len(path):
        return template
    return "/".join(
        "[redacted]" if field in SECRET_ROUTE_FIELDS else segment
        for field, segment in zip(shape, path, strict=True)
    )


def _trace_headers(environ: dict[str, Any]) -> dict[str, str]:
    """A caller's W3C trace context, so a traced caller sees our spans under its own."""
    return {
        name: environ[key]
        for name, key in (("traceparent", "HTTP_TRACEPARENT"), ("tracestate", "HTTP_TRACESTATE"))
        if key in environ
    }


@component
class RequestScopeApp:
    """WSGI wrapper: a server span and the request id for the whole call (logs, gRPC
    metadata, the span's attribute). With tracing off the span is a no-op.

    Our own span rather than opentelemetry-instrumentation-falcon, which patches falcon.App
    for the whole process: the access log names the span after the procedure it resolved."""

    app: Callable[..., Iterable[bytes]]
    spans: Tracer | None = None
    # `spans`, or the process's tracer when none is given.
    _tracer: Tracer = field(init=False)

    def __post_init__(self) -> None:
        self._tracer = self.spans or tracer()

    def __call__(
        self, environ: dict[str, Any], start_response: Callable[..., Any]
    ) -> Iterable[bytes]:
        request_id = clean_request_id(environ.get("HTTP_X_REQUEST_ID"))
        environ[REQUEST_ID_ENV] = request_id
        method = str(environ.get("REQUEST_METHOD", "GET"))
        with (
            self._tracer.start_as_current_span(
                method,
                context=extract(_trace_headers(environ)),
                kind=SpanKind.SERVER,
                attributes={"http.request.method": method},
            ),
            request_scope(request_id),
        ):
            # Falcon builds the whole body before returning, so the scope covers all work.
            return list(self.app(environ, start_response))


class EdgeMetrics(Metrics):
    requests: Counter = counter(
        "storypost_edge_requests",
        "HTTP requests answered, by procedure and status",
        "procedure",
        "status",
    )
    latency: Histogram = histogram(
        "storypost_edge_request_seconds",
        "HTTP request latency, by procedure",
        "procedure",
        buckets=LATENCY_BUCKETS,
    )
    in_flight: Gauge = gauge("storypost_edge_requests_in_flight", "requests being served")


def _name_span(req: falcon.Request, label: str, status: int) -> None:
    """The server span is named after the procedure (or route template), as the metrics are."""
    span = trace.get_current_span()
    if not span.is_recording():
        return
    span.update_name(f"{req.method} {label}")
    span.set_attribute("http.response.status_code", status)
    if req.uri_template:
        span.set_attribute("http.route", req.uri_template)
    if req.context.organization_id:
        span.set_attribute("storypost.organization_id", req.context.organization_id)
    if status >= 500:
        span.set_status(trace.StatusCode.ERROR)


@component
class AccessLog:
    """Falcon middleware: X-Request-Id on every answer, one log line and metrics per request."""

    metrics: EdgeMetrics

    def process_request(self, req: falcon.Request, resp: falcon.Response) -> None:
        req.context.started = time.perf_counter()
        req.context.request_id = req.env.get(REQUEST_ID_ENV) or clean_request_id(None)
        req.context.procedure = None
        req.context.organization_id = None
        self.metrics.in_flight.inc()

    def process_response(
        self, req: falcon.Request, resp: falcon.Response, resource: object, req_succeeded: bool
    ) -> None:
        self.metrics.in_flight.dec()
        resp.set_header(REQUEST_ID_HEADER, req.context.request_id)
        elapsed = time.perf_counter() - req.context.started
        status = resp.status_code
        # Unknown paths share one label so scanners cannot blow up the metric's cardinality.
        label = req.context.procedure if resource is not None else "other"
        if req.context.procedure and status == 404:
            label = "unknown"
        # Other routes are labelled by their template: bounded, and free of path secrets.
        label = label or req.uri_template or "other"
        self.metrics.requests.labels(label, str(status)).inc()
        self.metrics.latency.labels(label).observe(elapsed)
        _name_span(req, label, status)
        log.info(
            "request",
            method=req.method,
            path=loggable_path(req),
            status=status,
            duration_ms=round(elapsed * 1000, 2),
            organization_id=req.context.organization_id,
            procedure=req.context.procedure,
        )

"""Traces: off without an OTLP endpoint; context through gRPC, the outbox and NATS headers.

Each test passes its own SDK provider with an in-memory exporter; none sets the global one,
so the rest of the suite keeps running with tracing off.
"""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator, Mapping
from datetime import UTC, datetime
from typing import Any

import aiohttp
import falcon
import falcon.testing
import pytest
from aiohttp import web
from aiohttp.abc import AbstractResolver, ResolveResult
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind
from prometheus_client import CollectorRegistry

from edge.middleware import AccessLog, EdgeMetrics, RequestScopeApp
from storypost.account.v1 import account_pb2 as pb
from storypost.account.v1 import account_pb2_grpc
from storypost_runtime.bus import JetStreamPublisher
from storypost_runtime.clock import FrozenClock
from storypost_runtime.component import component
from storypost_runtime.context import request_scope
from storypost_runtime.grpc_client import aio_channel
from storypost_runtime.logs import add_trace_id
from storypost_runtime.mongo import command_listeners
from storypost_runtime.outbox import Event, OutboxRelay
from storypost_runtime.tracing import (
    REQUEST_ID_ATTRIBUTE,
    TRACEPARENT,
    configure_tracing,
    provider_for,
    tracer,
    tracing_wanted,
)
from tests.support.account_server import SERVICE, account_server
from webhook_svc.sender import Sender

NOW = datetime(2026, 11, 25, 12, 0, tzinfo=UTC)


def hex_trace(span: ReadableSpan) -> str:
    assert span.context is not None
    return format(span.context.trace_id, "032x")


def test_tracing_is_off_without_an_endpoint() -> None:
    assert not tracing_wanted({})
    assert not tracing_wanted({"OTEL_SERVICE_NAME": "x"})
    assert tracing_wanted({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4317"})
    assert tracing_wanted({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://collector:4317"})
    assert not tracing_wanted(
        {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4317", "OTEL_SDK_DISABLED": "true"}
    )
    assert not tracing_wanted(
        {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4317", "OTEL_TRACES_EXPORTER": "none"}
    )
    assert configure_tracing("svc", {}) is None
    # Nothing installed: no provider to instrument with, no Mongo listener, no traceparent.
    assert provider_for() is None
    assert command_listeners() == []
    assert Event.new("post.insights_updated", "org", NOW, {}).traceparent is None


def test_mongo_commands_get_a_listener_when_tracing_is_on(
    traces: tuple[TracerProvider, InMemorySpanExporter],
) -> None:
    provider, _ = traces
    assert len(command_listeners(provider)) == 1


class Echo(account_pb2_grpc.AccountServiceServicer):
    """GetOrganization answers the trace id of the server's current span."""

    async def GetOrganization(self, request: Any, context: Any) -> Any:
        ids = trace.get_current_span().get_span_context()
        return pb.Organization(organization_id=format(ids.trace_id, "032x"))


@pytest.fixture
async def traced_server(
    traces: tuple[TracerProvider, InMemorySpanExporter],
) -> AsyncIterator[str]:
    provider, _ = traces
    server = account_server(Echo(), tracer_provider=provider)  # type: ignore[abstract]
    port = await server.start()
    yield f"127.0.0.1:{port}"
    await server.stop()


async def test_a_grpc_call_continues_the_callers_trace_and_keeps_the_request_id(
    traces: tuple[TracerProvider, InMemorySpanExporter], traced_server: str
) -> None:
    provider, exporter = traces
    with (
        tracer(provider).start_as_current_span("caller") as caller,
        request_scope("req-42"),
    ):
        async with aio_channel(traced_server, 5.0, tracer_provider=provider) as channel:
            answer = await account_pb2_grpc.AccountServiceStub(channel).GetOrganization(
                pb.GetOrganizationRequest(organization_id="o")
            )
    trace_id = format(caller.get_span_context().trace_id, "032x")
    assert answer.organization_id == trace_id
    spans = {(s.name, s.kind): s for s in exporter.get_finished_spans()}
    method = f"/{SERVICE}/GetOrganization"
    client, server = spans[(method, SpanKind.CLIENT)], spans[(method, SpanKind.SERVER)]
    assert {hex_trace(client), hex_trace(server)} == {trace_id}
    assert server.parent is not None and client.context is not None
    assert server.parent.span_id == client.context.span_id
    assert server.attributes is not None
    assert server.attributes[REQUEST_ID_ATTRIBUTE] == "req-42"


class FakeJetStream:
    def __init__(self) -> None:
        self.sent: list[tuple[str, dict[str, str]]] = []

    async def publish(
        self, subject: str, payload: bytes, timeout: float, headers: Mapping[str, str]
    ) -> None:
        self.sent.append((subject, dict(headers)))


@component
class FakeCollection:
    """Just what OutboxRelay reads and writes of one record."""

    name = "posts"
    doc: dict[str, Any]

    def find(self, *_args: Any) -> FakeCollection:
        return self

    def limit(self, _n: int) -> FakeCollection:
        return self

    async def to_list(self, _n: int) -> list[dict[str, Any]]:
        return [self.doc] if self.doc.get("outboxPending") else []

    async def update_one(self, *_args: Any) -> Any:
        self.doc = {"_id": self.doc["_id"], "outbox": []}
        return type("Result", (), {"matched_count": 1})()


async def test_the_relays_publish_joins_the_trace_of_the_change_that_stored_the_event(
    traces: tuple[TracerProvider, InMemorySpanExporter],
) -> None:
    provider, exporter = traces
    with tracer(provider).start_as_current_span("ScheduleStory") as change:
        event = Event.new("photoapp_story_post.status_changed", "org", NOW, {"status": "x"})
    stored = event.to_document()
    assert stored["traceparent"] == event.traceparent
    assert Event.from_document(stored) == event
    old = {k: v for k, v in stored.items() if k != "traceparent"}
    old["id"] = "an-old-record-without-trace"
    js = FakeJetStream()
    relay = OutboxRelay(
        collections=[FakeCollection({"_id": "p", "outbox": [stored, old], "outboxPending": True})],  # type: ignore[list-item]
        publisher=JetStreamPublisher(js=js, tracer=tracer(provider)),  # type: ignore[arg-type]
    )
    # The relay runs later, in another task and outside the change's span.
    assert await relay.relay_once() == 2
    publishes = [s for s in exporter.get_finished_spans() if s.kind == SpanKind.PRODUCER]
    assert [s.name for s in publishes] == ["events.photoapp_story_post.status_changed publish"] * 2
    joined, fresh = publishes
    assert hex_trace(joined) == format(change.get_span_context().trace_id, "032x")
    assert joined.parent is not None
    assert joined.parent.span_id == change.get_span_context().span_id
    assert fresh.parent is None  # a record from before traces relays as a trace of its own
    # The message carries the publish span's context for the consumer.
    headers = js.sent[0][1]
    assert joined.context is not None
    assert headers[TRACEPARENT].split("-")[2] == format(joined.context.span_id, "016x")
    assert headers["Nats-Msg-Id"] == event.id


class Loopback(AbstractResolver):
    """Every host name is 127.0.0.1 (the test's receiver)."""

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        return [
            ResolveResult(
                hostname=host,
                host="127.0.0.1",
                port=port,
                family=socket.AF_INET,
                proto=0,
                flags=socket.AI_NUMERICHOST,
            )
        ]

    async def close(self) -> None:
        return None


async def test_a_webhook_attempt_is_a_client_span_naming_the_host_not_the_url(
    traces: tuple[TracerProvider, InMemorySpanExporter],
) -> None:
    provider, exporter = traces
    seen: list[dict[str, str]] = []

    async def answer(request: web.Request) -> web.Response:
        seen.append(dict(request.headers))
        return web.Response(status=503, body=b"busy")

    receiver = web.Application()
    receiver.router.add_post("/x", answer)
    runner = web.AppRunner(receiver)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    port = runner.addresses[0][1]
    try:
        connector = aiohttp.TCPConnector(resolver=Loopback())
        async with aiohttp.ClientSession(connector=connector) as client:
            sender = Sender(
                client=client, clock=FrozenClock(NOW), timeout_seconds=2.0, spans=tracer(provider)
            )
            with tracer(provider).start_as_current_span("consume") as consume:
                result = await sender.attempt(
                    f"http://hooks.example:{port}/x?key=secret", "d1", "e", "{}", None
                )
    finally:
        await runner.cleanup()
    assert not result.ok
    (span,) = [s for s in exporter.get_finished_spans() if s.name == "webhook delivery"]
    assert span.kind == SpanKind.CLIENT and span.attributes is not None
    assert span.parent is not None
    assert span.parent.span_id == consume.get_span_context().span_id
    assert span.attributes["server.address"] == "hooks.example"
    assert span.attributes["http.response.status_code"] == 503
    assert span.attributes["storypost.delivery_id"] == "d1"
    assert "secret" not in str(dict(span.attributes))
    assert not span.status.is_ok
    # Our trace context stays ours: the tenant's receiver gets no traceparent.
    assert TRACEPARENT.lower() not in {name.lower() for name in seen[0]}


class Procedure:
    def on_post(self, req: falcon.Request, resp: falcon.Response, org: str, name: str) -> None:
        req.context.procedure = name
        resp.media = {"ok": True}


def test_the_edge_span_is_named_after_the_procedure_and_carries_the_request_id(
    traces: tuple[TracerProvider, InMemorySpanExporter],
) -> None:
    provider, exporter = traces
    inner = falcon.App(middleware=[AccessLog(EdgeMetrics.create(CollectorRegistry()))])
    inner.add_route("/o/{org}/api/v1/{name}", Procedure())
    app = RequestScopeApp(inner, tracer(provider))
    caller_trace = "0af7651916cd43dd8448eb211c80319c"
    client = falcon.testing.TestClient(app)
    result = client.simulate_post(
        "/o/org1/api/v1/schedule-photoapp-story",
        headers={
            "X-Request-Id": "req-7",
            "traceparent": f"00-{caller_trace}-b7ad6b7169203331-01",
        },
    )
    assert result.status_code == 200
    (span,) = exporter.get_finished_spans()
    assert span.name == "POST schedule-photoapp-story"
    assert span.kind == SpanKind.SERVER and span.attributes is not None
    assert span.attributes[REQUEST_ID_ATTRIBUTE] == "req-7"
    assert span.attributes["http.response.status_code"] == 200
    # A traced caller sees our spans under its own.
    assert hex_trace(span) == caller_trace


def test_a_log_line_names_the_trace_of_the_recording_span(
    traces: tuple[TracerProvider, InMemorySpanExporter],
) -> None:
    provider, _ = traces
    assert add_trace_id(None, "info", {"message": "m"}) == {"message": "m"}
    with tracer(provider).start_as_current_span("work") as span:
        line = add_trace_id(None, "info", {"message": "m"})
    assert line["trace_id"] == format(span.get_span_context().trace_id, "032x")

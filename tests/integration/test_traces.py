"""One trace from `schedule-photoapp-story` to its webhook delivery, across the real processes.

The stack's processes export over OTLP/gRPC (the standard OTEL_* variables) to a receiver in
this test process, which decodes the ExportTraceServiceRequests (opentelemetry-proto).
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
import httpx
import pytest
from aiohttp import web
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2, trace_service_pb2_grpc
from opentelemetry.proto.common.v1 import common_pb2

from storypost.testing.stack import Organization, StackHandle, running_stack
from storypost.webhook.v1 import webhook_pb2, webhook_pb2_grpc
from tests.integration.publish.conftest import IMAGE_STORY
from tests.support.accounts import connect_account
from tests.support.api import only_in_passes
from tests.support.hook_server import serving_hook

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module", autouse=True)
def process_pass(request: pytest.FixtureRequest) -> None:
    only_in_passes(
        request,
        "processes",
        why="it starts a stack of processes of its own (its exporters aimed at the test's "
        "receiver); the container passes would start the same processes again",
    )


STORY_EVENT = "photoapp_story_post.status_changed"


@dataclass(frozen=True)
class Span:
    service: str
    trace_id: str
    span_id: str
    parent_id: str
    name: str
    attributes: dict[str, Any]


def _value(value: common_pb2.AnyValue) -> Any:
    kind = value.WhichOneof("value")
    return getattr(value, kind) if kind else None


class Collector(trace_service_pb2_grpc.TraceServiceServicer):
    """A minimal OTLP/gRPC trace receiver: keeps every span it is sent."""

    def __init__(self) -> None:
        self.spans: list[Span] = []

    async def Export(
        self,
        request: trace_service_pb2.ExportTraceServiceRequest,
        context: grpc.aio.ServicerContext[Any, Any],
    ) -> trace_service_pb2.ExportTraceServiceResponse:
        for resource_spans in request.resource_spans:
            resource = {a.key: _value(a.value) for a in resource_spans.resource.attributes}
            for scope_spans in resource_spans.scope_spans:
                for span in scope_spans.spans:
                    self.spans.append(
                        Span(
                            service=str(resource.get("service.name", "")),
                            trace_id=span.trace_id.hex(),
                            span_id=span.span_id.hex(),
                            parent_id=span.parent_span_id.hex(),
                            name=span.name,
                            attributes={a.key: _value(a.value) for a in span.attributes},
                        )
                    )
        return trace_service_pb2.ExportTraceServiceResponse()

    def trace(self, trace_id: str) -> list[Span]:
        return [s for s in self.spans if s.trace_id == trace_id]


@pytest.fixture(scope="module")
async def collector() -> AsyncIterator[tuple[Collector, int]]:
    server = grpc.aio.server()
    receiver = Collector()
    # The generated module has no type hints.
    trace_service_pb2_grpc.add_TraceServiceServicer_to_server(receiver, server)  # type: ignore[no-untyped-call]
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    yield receiver, port
    await server.stop(0)


@pytest.fixture(scope="module")
async def hooks() -> AsyncIterator[tuple[list[dict[str, Any]], str]]:
    """A plain-HTTP webhook receiver on loopback: what it accepted, and its URL. It answers
    503 to a delivery's first attempt, so every delivery is retried once by the scheduler."""
    received: list[dict[str, Any]] = []
    refused: set[str] = set()

    async def handle(request: web.Request) -> web.Response:
        delivery = request.headers["X-Service-Delivery"]
        if delivery not in refused:
            refused.add(delivery)
            return web.Response(status=503)
        received.append({"headers": dict(request.headers), "body": await request.json()})
        return web.Response(status=204)

    async with serving_hook(handle) as url:
        yield received, url


@pytest.fixture(scope="module")
async def traced_stack(
    tmp_path_factory: pytest.TempPathFactory, collector: tuple[Collector, int]
) -> AsyncIterator[StackHandle]:
    """A stack of its own whose every process exports its spans to the collector."""
    _, port = collector
    env = {
        "OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{port}",
        "OTEL_EXPORTER_OTLP_INSECURE": "true",
        # Export within 0.1 s instead of 5 s.
        "OTEL_BSP_SCHEDULE_DELAY": "100",
        "STORYPOST_WEBHOOK_ALLOW_HTTP_LOOPBACK": "true",
        # The refused first attempt is retried within about half a second.
        "STORYPOST_WEBHOOK_RETRY_SCHEDULE_SECONDS": "0.3",
        "STORYPOST_WEBHOOK_POLL_SECONDS": "0.2",
    }
    async with running_stack(
        Path(tmp_path_factory.mktemp("traced-stack")), deps="embedded", extra_env=env
    ) as handle:
        yield handle


async def _until[T](probe: Callable[[], T | None], seconds: float) -> T:
    for _ in range(int(seconds / 0.1)):
        found = probe()
        if found is not None:
            return found
        await asyncio.sleep(0.1)
    raise AssertionError(f"not within {seconds} s")


async def _add_webhook(stack: StackHandle, org: Organization, url: str) -> None:
    async with stack.channel("webhook", 10.0) as channel:
        await webhook_pb2_grpc.WebhookServiceStub(channel).AddWebhook(
            webhook_pb2.AddWebhookRequest(organization_id=org.organization_id, url=url)
        )


async def test_one_trace_from_schedule_to_webhook_delivery(
    traced_stack: StackHandle,
    collector: tuple[Collector, int],
    hooks: tuple[list[dict[str, Any]], str],
) -> None:
    spans, _ = collector
    received, hook_url = hooks
    org = await traced_stack.new_organization("traced org")
    user = f"traced{uuid.uuid4().hex[:8]}"
    await connect_account(traced_stack, org.organization_id, "photoapp", user)
    await _add_webhook(traced_stack, org, hook_url)
    story_uuid = str(uuid.uuid4())
    request_id = f"trace-test-{uuid.uuid4().hex[:12]}"
    async with httpx.AsyncClient(timeout=120.0) as http:
        answer = await http.post(
            f"{org.base_url}/schedule-photoapp-story",
            json={"storyPostUuid": story_uuid, "photoappUsername": user, "html": IMAGE_STORY},
            headers={"Authorization": f"Bearer {org.token}", "X-Request-Id": request_id},
        )
    assert answer.status_code == 200, answer.text

    def delivery_of(status: str) -> Callable[[], dict[str, Any] | None]:
        """The receiver's delivery of the story's `status` event, once it has arrived."""
        return lambda: next(
            (
                r
                for r in received
                if r["body"].get("storyPostUuid") == story_uuid
                and r["body"].get("status") == status
            ),
            None,
        )

    delivery = await _until(delivery_of("scheduled"), 30.0)
    delivery_id = delivery["headers"]["X-Service-Delivery"]

    def edge_span() -> Span | None:
        return next(
            (
                s
                for s in spans.spans
                if s.service == "edge" and s.attributes.get("storypost.request_id") == request_id
            ),
            None,
        )

    root = await _until(edge_span, 15.0)
    assert root.name == "POST schedule-photoapp-story"
    assert root.parent_id == ""

    wanted = {
        ("publish-svc", "/storypost.publish.v1.PublishService/ScheduleStory"),
        ("publish-svc", f"events.{STORY_EVENT} publish"),
        ("webhook-svc", f"events.{STORY_EVENT} process"),
        ("webhook-svc", "webhook delivery"),
    }

    def whole_trace() -> list[Span] | None:
        """The trace once its spans came (each process exports on its own, and a parent only
        when it ends): the delivery's chain of parents reaches the edge's span."""
        trace = spans.trace(root.trace_id)
        names = {(s.service, s.name) for s in trace}
        if not wanted <= names or not any(s.attributes.get("db.system") for s in trace):
            return None
        return trace if chain(trace) and len(attempts(trace)) == 2 else None

    def attempts(trace: list[Span]) -> list[Span]:
        return [s for s in trace if s.attributes.get("storypost.delivery_id") == delivery_id]

    def chain(trace: list[Span]) -> list[Span]:
        """The delivery span and its ancestors up to the root; empty while one is missing."""
        by_id = {s.span_id: s for s in trace}
        span = next(
            (s for s in trace if s.attributes.get("storypost.delivery_id") == delivery_id), None
        )
        found: list[Span] = []
        while span is not None:
            found.append(span)
            if span.parent_id == "":
                return found if span is root else []
            span = by_id.get(span.parent_id)
        return []

    try:
        trace = await _until(whole_trace, 15.0)
    except AssertionError:
        got = sorted({(s.service, s.name) for s in spans.trace(root.trace_id)})
        raise AssertionError(f"the trace lacks some of {sorted(wanted)}: {got}") from None
    by_service = {s.service for s in trace}
    assert {"edge", "account-svc", "publish-svc", "render-svc", "webhook-svc"} <= by_service
    assert any(s.attributes.get("db.system") == "mongodb" for s in trace), by_service
    # The request id travels on as an attribute of the services' spans.
    assert any(
        s.service == "publish-svc" and s.attributes.get("storypost.request_id") == request_id
        for s in trace
    )
    # From the delivery back to the call, each span is the child of the one before.
    path = [f"{s.service}: {s.name}" for s in reversed(chain(trace))]
    assert path == [
        "edge: POST schedule-photoapp-story",
        "edge: /storypost.publish.v1.PublishService/ScheduleStory",
        "publish-svc: /storypost.publish.v1.PublishService/ScheduleStory",
        f"publish-svc: events.{STORY_EVENT} publish",
        f"webhook-svc: events.{STORY_EVENT} process",
        "webhook-svc: webhook delivery",
    ], json.dumps(path, indent=1)
    # The scheduler's retry, from the delivery record's stored context, joins the trace too:
    # both attempts are children of the consume span.
    codes = {s.attributes["http.response.status_code"]: s for s in attempts(trace)}
    assert sorted(codes) == [204, 503]
    assert codes[204].parent_id == codes[503].parent_id == chain(trace)[1].span_id

    # The scheduler publishes the story later, in the background: that attempt, its executed
    # event and the event's delivery still join the call's trace (the post keeps its
    # traceparent).
    later_id = (await _until(delivery_of("executed"), 30.0))["headers"]["X-Service-Delivery"]

    def later_spans() -> list[Span] | None:
        trace = spans.trace(root.trace_id)
        attempt = [s for s in trace if (s.service, s.name) == ("publish-svc", "publish post")]
        delivered = [s for s in trace if s.attributes.get("storypost.delivery_id") == later_id]
        return [*attempt, *delivered] if attempt and delivered else None

    try:
        await _until(later_spans, 15.0)
    except AssertionError:
        got = sorted({(s.service, s.name) for s in spans.trace(root.trace_id)})
        raise AssertionError(f"the executed delivery is not in the call's trace: {got}") from None

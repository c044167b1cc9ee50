"""A post processed later by the scheduler joins the trace of the call that scheduled it."""

from __future__ import annotations

from typing import Any

from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind

from publish_svc.model import Kind
from storypost_runtime.bus import JetStreamPublisher
from storypost_runtime.outbox import OutboxRelay
from storypost_runtime.tracing import tracer
from tests.unit.publish.conftest import Core
from tests.unit.runtime.test_tracing import FakeJetStream

UUID = "0b6f5a7e-3c1d-4e2f-8a9b-7c6d5e4f3a21"
OLD_UUID = "0b6f5a7e-3c1d-4e2f-8a9b-7c6d5e4f3a22"


def _trace_id(span: ReadableSpan) -> int:
    assert span.context is not None
    trace_id: int = span.context.trace_id
    return trace_id


async def _outbox(core: Core, record_id: str) -> list[dict[str, Any]]:
    doc = await core.db["posts"].find_one({"_id": record_id})
    assert doc is not None
    return list(doc.get("outbox", []))


async def test_processing_and_its_events_join_the_schedule_call_s_trace(
    core: Core, traces: tuple[TracerProvider, InMemorySpanExporter]
) -> None:
    provider, exporter = traces
    spans = tracer(provider)
    with spans.start_as_current_span("ScheduleStory") as call:
        accepted = await core.intake.story(core.new(Kind.STORY, UUID), "alice")
    call_context = call.get_span_context()
    assert accepted.post.traceparent is not None
    assert accepted.post.traceparent.split("-")[1] == format(call_context.trace_id, "032x")
    # A record from before traceparents were stored: processed as before, in no trace.
    old = await core.intake.story(core.new(Kind.STORY, OLD_UUID), "alice")
    await core.db["posts"].update_one({"_id": old.post.id}, {"$unset": {"traceparent": ""}})

    assert len(await core.run_due(spans=spans)) == 2
    (attempt,) = [s for s in exporter.get_finished_spans() if s.name == "publish post"]
    assert attempt.parent is not None and attempt.parent.span_id == call_context.span_id
    assert attempt.attributes is not None
    assert attempt.attributes["storypost.post_id"] == accepted.post.id
    events = await _outbox(core, accepted.post.id)
    assert [e["data"]["status"] for e in events] == ["scheduled", "executed"]
    assert events[1]["traceparent"].split("-")[1] == format(call_context.trace_id, "032x")
    assert [e.get("traceparent") for e in await _outbox(core, old.post.id)] == [None, None]

    # The relay publishes the executed event, later and elsewhere, in the call's trace.
    relay = OutboxRelay(
        collections=[core.db["posts"]],
        publisher=JetStreamPublisher(js=FakeJetStream(), tracer=spans),  # type: ignore[arg-type]
    )
    assert await relay.relay_once() == 4
    published = [s for s in exporter.get_finished_spans() if s.kind == SpanKind.PRODUCER]
    joined = [s for s in published if _trace_id(s) == call_context.trace_id]
    assert len(joined) == 2  # its scheduled and executed events
    assert attempt.context is not None
    parents = sorted(s.parent.span_id for s in joined if s.parent is not None)
    assert parents == sorted([call_context.span_id, attempt.context.span_id])


async def test_with_tracing_off_a_stored_traceparent_records_nothing(
    core: Core, traces: tuple[TracerProvider, InMemorySpanExporter]
) -> None:
    provider, _ = traces
    with tracer(provider).start_as_current_span("ScheduleStory"):
        accepted = await core.intake.story(core.new(Kind.STORY, UUID), "alice")
    assert accepted.post.traceparent is not None
    # This process traces nothing (the global no-op provider): nothing joins, nothing is kept.
    assert len(await core.run_due()) == 1
    events = await _outbox(core, accepted.post.id)
    assert [e["data"]["status"] for e in events] == ["scheduled", "executed"]
    assert events[1].get("traceparent") is None

"""NATS JetStream: connection with retries, the events stream, publishing with headers."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import KW_ONLY

import nats
from nats.aio.client import Client as NatsClient
from nats.js import JetStreamContext
from nats.js.api import StorageType, StreamConfig
from nats.js.errors import NotFoundError
from opentelemetry.trace import SpanKind, Tracer
from tenacity import (
    AsyncRetrying,
    retry_if_exception_type,
    stop_after_delay,
    stop_never,
    wait_exponential,
)

from storypost_runtime.component import component
from storypost_runtime.logs import get_logger
from storypost_runtime.settings import NatsSettings
from storypost_runtime.tracing import inject, tracer

log = get_logger(__name__)

EVENTS_SUBJECT_PREFIX = "events."
SEVEN_DAYS_SECONDS = 7 * 24 * 3600.0


def event_subject(event_type: str) -> str:
    """An event type travels on `events.<type>`, e.g. `events.social_post.status_changed`."""
    return EVENTS_SUBJECT_PREFIX + event_type


@asynccontextmanager
async def nats_connection(
    settings: NatsSettings, name: str, give_up_after_seconds: float | None = 30.0
) -> AsyncIterator[NatsClient]:
    """Connects (retrying for up to `give_up_after_seconds` at start-up, forever when None),
    reconnects forever, drains on exit."""

    async def on_error(error: Exception) -> None:
        log.warning("nats error", error=str(error))

    async def on_disconnect() -> None:
        log.warning("nats disconnected")

    async def on_reconnect() -> None:
        log.info("nats reconnected")

    client: NatsClient | None = None
    limit = give_up_after_seconds
    give_up = stop_never if limit is None else stop_after_delay(limit)
    async for attempt in AsyncRetrying(
        stop=give_up,
        wait=wait_exponential(multiplier=0.2, max=2),
        retry=retry_if_exception_type((OSError, nats.errors.NoServersError, TimeoutError)),
        reraise=True,
    ):
        with attempt:
            client = await nats.connect(
                servers=[settings.nats_url],
                name=name,
                connect_timeout=2,
                reconnect_time_wait=0.5,
                max_reconnect_attempts=-1,
                error_cb=on_error,
                disconnected_cb=on_disconnect,
                reconnected_cb=on_reconnect,
            )
    assert client is not None
    try:
        yield client
    finally:
        if client.is_connected:
            await client.drain()
        else:
            await client.close()


async def ensure_events_stream(js: JetStreamContext, settings: NatsSettings) -> None:
    """Creates or updates the status-events stream (file storage, 7 days, dedup window,
    `nats_stream_replicas` copies)."""
    config = StreamConfig(
        name=settings.nats_stream,
        subjects=[EVENTS_SUBJECT_PREFIX + ">"],
        storage=StorageType.FILE,
        max_age=SEVEN_DAYS_SECONDS,
        duplicate_window=settings.nats_duplicate_window_seconds,
        num_replicas=settings.nats_stream_replicas,
    )
    try:
        await js.stream_info(settings.nats_stream)
    except NotFoundError:
        await js.add_stream(config)
        return
    await js.update_stream(config)


def publish_span_name(subject: str) -> str:
    return f"{subject} publish"


def process_span_name(subject: str) -> str:
    return f"{subject} process"


@component
class JetStreamPublisher:
    """Publishes one message and waits for JetStream's acknowledgement.

    The publish is a producer span (child of the current context) whose `traceparent` travels
    in the message's headers, so a consumer's span joins the trace. nats-py has no OpenTelemetry
    instrumentation of its own.
    """

    js: JetStreamContext
    timeout_seconds: float = 5.0
    _: KW_ONLY
    tracer: Tracer | None = None

    async def publish(self, subject: str, payload: bytes, headers: Mapping[str, str]) -> None:
        spans = self.tracer or tracer()
        with spans.start_as_current_span(
            publish_span_name(subject),
            kind=SpanKind.PRODUCER,
            attributes={
                "messaging.system": "nats",
                "messaging.operation.type": "send",
                "messaging.destination.name": subject,
            },
        ):
            sent = dict(headers)
            inject(sent)
            await self.js.publish(subject, payload, timeout=self.timeout_seconds, headers=sent)

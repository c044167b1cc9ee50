"""NATS JetStream: connection with retries, the events stream, publishing with headers."""

from __future__ import annotations

import asyncio
import contextlib
import ssl
from collections.abc import AsyncIterator, Coroutine, Mapping
from contextlib import asynccontextmanager
from dataclasses import KW_ONLY
from typing import Any

import nats
from nats.aio.client import Client as NatsClient
from nats.js import JetStreamContext
from nats.js.api import StorageType, StreamConfig
from nats.js.errors import NotFoundError
from opentelemetry.trace import SpanKind, Tracer
from tenacity import AsyncRetrying, retry_if_exception_type, stop_after_delay, stop_never

from storypost_runtime.backoff import BUS_CONNECT
from storypost_runtime.component import component
from storypost_runtime.logs import get_logger
from storypost_runtime.settings import NatsSettings, SettingRefused, env_variable
from storypost_runtime.tracing import inject, tracer

log = get_logger(__name__)

EVENTS_SUBJECT_PREFIX = "events."
SEVEN_DAYS_SECONDS = 7 * 24 * 3600.0


def event_subject(event_type: str) -> str:
    """An event type travels on `events.<type>`, e.g. `events.social_post.status_changed`."""
    return EVENTS_SUBJECT_PREFIX + event_type


class NatsRefused(SettingRefused):
    """NATS refused this component's identity or TLS: retrying cannot help, the setting must
    change. The message names the variables in use (never their values)."""


def connect_options(settings: NatsSettings) -> dict[str, Any]:
    """nats.connect's identity and TLS options from the settings (docs/deploy.md "NATS")."""
    options: dict[str, Any] = {}
    if settings.nats_user:
        options |= {"user": settings.nats_user, "password": settings.nats_password}
    if settings.nats_token:
        options["token"] = settings.nats_token
    if settings.nats_creds_file:
        options["user_credentials"] = settings.nats_creds_file
    if settings.nats_nkey_seed_file:
        options["nkeys_seed"] = settings.nats_nkey_seed_file
    tls_url = settings.nats_url.startswith("tls://")
    if tls_url or settings.nats_tls_ca_file or settings.nats_tls_cert_file:
        context = ssl.create_default_context(cafile=settings.nats_tls_ca_file or None)
        if settings.nats_tls_cert_file:
            context.load_cert_chain(settings.nats_tls_cert_file, settings.nats_tls_key_file)
        options["tls"] = context
    return options


def identity_variables(settings: NatsSettings) -> str:
    """The variables that make up this component's NATS identity and TLS, for messages."""
    named = [
        env_variable(settings, field)
        for field in (
            "nats_url",
            "nats_user",
            "nats_password",
            "nats_token",
            "nats_creds_file",
            "nats_nkey_seed_file",
            "nats_tls_ca_file",
            "nats_tls_cert_file",
            "nats_tls_key_file",
        )
        if field == "nats_url"
        or getattr(settings, field)
        # A `tls://` server whose CA is not the system's needs it named.
        or (field == "nats_tls_ca_file" and settings.nats_url.startswith("tls://"))
    ]
    return ", ".join(named)


def _refusal(error: Exception) -> str | None:
    """What NATS said when it refused the identity or the TLS handshake (None: another
    error, such as a server not up yet, that a retry may cure)."""
    text = str(error) or type(error).__name__
    lowered = text.lower()
    if isinstance(error, (nats.errors.AuthorizationError, ssl.SSLError)) or any(
        word in lowered for word in ("authorization violation", "authentication", "certificate")
    ):
        return text
    return None


@asynccontextmanager
async def nats_connection(
    settings: NatsSettings, name: str, give_up_after_seconds: float | None = 30.0
) -> AsyncIterator[NatsClient]:
    """Connects (retrying for up to `give_up_after_seconds` at start-up, forever when None),
    reconnects forever, drains on exit. A refused identity or TLS handshake raises NatsRefused
    at once, naming the variables to check."""
    refused: asyncio.Future[str] = asyncio.get_running_loop().create_future()

    async def on_error(error: Exception) -> None:
        said = _refusal(error)
        if said is not None and not refused.done():
            refused.set_result(said)
        log.warning("nats error", error=str(error) or type(error).__name__)

    async def on_disconnect() -> None:
        log.warning("nats disconnected")

    async def on_reconnect() -> None:
        log.info("nats reconnected")

    async def connect() -> NatsClient:
        return await nats.connect(
            servers=[settings.nats_url],
            name=name,
            connect_timeout=2,
            reconnect_time_wait=0.5,
            max_reconnect_attempts=-1,
            error_cb=on_error,
            disconnected_cb=on_disconnect,
            reconnected_cb=on_reconnect,
            **connect_options(settings),
        )

    client: NatsClient | None = None
    limit = give_up_after_seconds
    give_up = stop_never if limit is None else stop_after_delay(limit)
    async for attempt in AsyncRetrying(
        stop=give_up,
        wait=BUS_CONNECT,
        retry=retry_if_exception_type((OSError, nats.errors.NoServersError, TimeoutError)),
        reraise=True,
    ):
        with attempt:
            client = await _first_of(connect(), refused, settings)
    assert client is not None
    try:
        yield client
    finally:
        if client.is_connected:
            await client.drain()
        else:
            await client.close()


async def _first_of(
    connecting: Coroutine[Any, Any, NatsClient],
    refused: asyncio.Future[str],
    settings: NatsSettings,
) -> NatsClient:
    """The connection, unless NATS refuses the identity first (nats-py's connect keeps trying
    then, since it reconnects forever)."""
    task = asyncio.ensure_future(connecting)
    waited: set[asyncio.Future[Any]] = {task, refused}
    done, _ = await asyncio.wait(waited, return_when=asyncio.FIRST_COMPLETED)
    if task in done:
        return task.result()
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError, Exception):
        await task
    raise NatsRefused(
        f"NATS refused this component ({refused.result()}): check {identity_variables(settings)}"
    )


# How long a component that serves without NATS waits at start to learn whether NATS refuses
# its identity (a NATS that does not answer by then is left to the background connection).
IDENTITY_PROBE_SECONDS = 3.0


async def refuse_wrong_identity(
    settings: NatsSettings, name: str, within_seconds: float = IDENTITY_PROBE_SECONDS
) -> None:
    """For a component that serves without NATS (account-svc): a NATS that answers and refuses
    this identity or TLS stops the start (NatsRefused, exit 2 naming the variables), as it stops
    every component that needs the bus; one that does not answer within `within_seconds` is
    left to the background connection, which keeps trying."""
    try:
        async with asyncio.timeout(within_seconds):
            async with nats_connection(settings, f"{name} identity check", within_seconds):
                return
    except NatsRefused:
        raise
    except Exception as error:
        log.info("nats not answering at start", error=str(error) or type(error).__name__)


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

    _: KW_ONLY
    js: JetStreamContext
    timeout_seconds: float = 5.0
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

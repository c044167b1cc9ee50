"""One HTTP attempt of a delivery: the POST, its headers, its time limit and its outcome."""

from __future__ import annotations

import asyncio
import ssl
import time
from dataclasses import KW_ONLY, field
from urllib.parse import urlsplit

import certifi
import httpcore
import httpx
from opentelemetry import trace
from opentelemetry.trace import SpanKind, Tracer

from storypost_runtime.clock import Clock
from storypost_runtime.component import component
from storypost_runtime.tracing import tracer
from webhook_svc.deliveries import AttemptResult
from webhook_svc.signing import SIGNATURE_HEADER, signature
from webhook_svc.targets import AddressPolicy, GuardedNetworkBackend, RefusedAddress

USER_AGENT = "storypost-webhooks/1"
# A receiver's answer is read up to this size (so the connection can be reused), then dropped.
MAX_ANSWER_BYTES = 64 * 1024
MAX_ERROR_LENGTH = 500


def ssl_context(ca_file: str | None) -> ssl.SSLContext:
    """Public CAs (certifi), plus the deployment's own CA file when one is configured."""
    context = ssl.create_default_context(cafile=certifi.where())
    if ca_file:
        context.load_verify_locations(cafile=ca_file)
    return context


class GuardedTransport(httpx.AsyncHTTPTransport):
    """httpx's transport over a connection pool whose every connection obeys the policy.

    httpx has no public hook for the network backend, so the pool it built is replaced by an
    identical one with ours (httpx 0.28 keeps it in `_pool`).
    """

    def __init__(self, policy: AddressPolicy, context: ssl.SSLContext, max_connections: int):
        super().__init__(verify=context, trust_env=False)
        self._pool = httpcore.AsyncConnectionPool(
            ssl_context=context,
            max_connections=max_connections,
            max_keepalive_connections=max_connections,
            keepalive_expiry=30.0,
            http1=True,
            http2=False,
            network_backend=GuardedNetworkBackend(policy, httpcore.AnyIOBackend()),
        )


def http_client(
    policy: AddressPolicy, ca_file: str | None, max_connections: int, timeout: float
) -> httpx.AsyncClient:
    """The client every attempt uses: no proxies from the environment, no redirects."""
    return httpx.AsyncClient(
        transport=GuardedTransport(policy, ssl_context(ca_file), max_connections),
        timeout=httpx.Timeout(timeout),
        follow_redirects=False,
        trust_env=False,
    )


def _short(text: str) -> str:
    return text if len(text) <= MAX_ERROR_LENGTH else text[: MAX_ERROR_LENGTH - 1] + "…"


@component
class Sender:
    """POSTs a delivery's body; any 2xx is success, everything else a failed attempt.

    Each attempt is a client span (own code: httpx's instrumentation would also send our
    `traceparent` to the tenant's receiver, which has no use for our trace ids). Its attributes
    name the host, not the URL, whose path or query may hold the receiver's secret.
    """

    _: KW_ONLY
    client: httpx.AsyncClient
    clock: Clock
    timeout_seconds: float
    spans: Tracer | None = None
    _spans: Tracer = field(init=False)

    def __post_init__(self) -> None:
        self._spans = self.spans or tracer()

    async def attempt(
        self, url: str, delivery_id: str, event: str, body: str, secret: str | None
    ) -> AttemptResult:
        with self._spans.start_as_current_span(
            "webhook delivery",
            kind=SpanKind.CLIENT,
            attributes={
                "http.request.method": "POST",
                "server.address": urlsplit(url).hostname or "",
                "storypost.delivery_id": delivery_id,
                "storypost.event": event,
            },
        ) as span:
            result = await self._attempt(url, delivery_id, event, body, secret)
            if span.is_recording():
                if result.status_code:
                    span.set_attribute("http.response.status_code", result.status_code)
                if not result.ok:
                    span.set_status(trace.StatusCode.ERROR, result.error)
            return result

    async def _attempt(
        self, url: str, delivery_id: str, event: str, body: str, secret: str | None
    ) -> AttemptResult:
        started_at = self.clock.now()
        started = time.perf_counter()
        content = body.encode()
        headers = {
            "Content-Type": "application/json",
            "User-Agent": USER_AGENT,
            "X-Service-Event": event,
            "X-Service-Delivery": delivery_id,
        }
        if secret:
            headers[SIGNATURE_HEADER] = signature(secret, int(time.time()), content)
        code = 0
        error = ""
        try:
            async with asyncio.timeout(self.timeout_seconds):
                async with self.client.stream(
                    "POST", url, content=content, headers=headers
                ) as answer:
                    code = answer.status_code
                    read = 0
                    async for chunk in answer.aiter_raw():
                        read += len(chunk)
                        if read > MAX_ANSWER_BYTES:
                            break
        except TimeoutError:
            error = f"timed out after {self.timeout_seconds:g} s"
        except httpx.TimeoutException as failure:
            error = f"timed out ({type(failure).__name__})"
        except httpx.ConnectError as failure:
            cause = failure.__cause__
            refused = isinstance(cause, RefusedAddress)
            error = str(cause) if refused else f"connection failed: {failure}"
        except httpx.HTTPError as failure:
            error = f"{type(failure).__name__}: {failure}"
        latency_ms = int((time.perf_counter() - started) * 1000)
        # The status line is the receiver's answer; a body cut short afterwards changes nothing.
        ok = 200 <= code < 300
        if ok:
            error = ""
        elif not error:
            error = f"HTTP {code}"
        return AttemptResult(ok, code, latency_ms, _short(error), started_at)

"""Every request of a rendered page, answered by render-svc: sandbox rules, blobs, assets.

The browser fetches nothing itself. Each request is routed here and answered with
`route.fulfill` (from our fonts, from S3 for our own temp blob URLs, or through the guarded
fetcher) or refused with `route.abort`. Redirects are followed by the fetcher, never by the
browser, because Chromium follows a fulfilled redirect without routing it again.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import weakref
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from urllib.parse import urljoin

import aiohttp
from playwright.async_api import Error as PlaywrightError
from playwright.async_api import Request, Route, WebSocketRoute

from render_svc.assets import Assets
from render_svc.blob_urls import BlobRef, BlobUrlMatcher
from render_svc.netguard import Blocked, GuardedFetcher, TooLarge, browser_headers, read_body
from storypost_runtime.component import component
from storypost_runtime.logs import get_logger

log = get_logger(__name__)

# A page asking for hundreds of broken things gets a few warnings, not hundreds.
MAX_NETWORK_WARNINGS = 20
# Documents and workers at these addresses have no origin of their own that keeps storage
# (about:blank, srcdoc, data: and blob: of a page that has none).
OPAQUE_DOCUMENT_SCHEMES = ("about:", "data:", "blob:null/")
BlobReader = Callable[[BlobRef, int], Awaitable[tuple[str, bytes] | None]]


def shown(url: str, limit: int = 160) -> str:
    return url if len(url) <= limit else url[: limit - 1] + "\N{HORIZONTAL ELLIPSIS}"


@dataclass(frozen=True)
class NetworkLimits:
    max_resource_bytes: int
    max_page_bytes: int


@dataclass
class RenderSession:
    """Network state of one render: what was blocked, what is loading, what it cost."""

    fetcher: GuardedFetcher
    blobs: BlobUrlMatcher
    read_blob: BlobReader
    assets: Assets
    limits: NetworkLimits
    deadline: float
    warnings: list[str] = field(default_factory=list)
    dropped_warnings: int = 0
    in_flight: int = 0
    loading: set[str] = field(default_factory=set)
    last_change: float = field(default_factory=time.monotonic)
    bytes_loaded: int = 0
    # While the main page loads, its redirects and failures are reported to the capture.
    loading_main: bool = False
    main_redirect: str | None = None
    main_error: str | None = None
    main_status: int | None = None

    def warn(self, message: str) -> None:
        if len(self.warnings) < MAX_NETWORK_WARNINGS:
            self.warnings.append(message)
        else:
            self.dropped_warnings += 1

    def all_warnings(self) -> list[str]:
        extra = [f"{self.dropped_warnings} more network warnings"] if self.dropped_warnings else []
        return [*self.warnings, *extra]

    def take_redirect(self) -> str | None:
        """The main page's pending redirect target, once."""
        target, self.main_redirect = self.main_redirect, None
        return target

    def remaining(self) -> float:
        return max(0.1, self.deadline - time.monotonic())


@component
class SessionHolder:
    """Routes are set on a context before it is handed out; the session arrives at checkout."""

    assets: Assets
    session: RenderSession | None = field(init=False, default=None)
    _routed: weakref.WeakSet[Request] = field(init=False, default_factory=weakref.WeakSet)
    # A document or worker came from an address (http, https): something of an origin
    # that can keep storage ran in this context, so the pool does not reuse its page.
    opened_origin: bool = field(init=False, default=False)

    def note_document(self, url: str) -> None:
        """A frame or worker of this context loaded `url` (see `opened_origin`)."""
        if not url.startswith(OPAQUE_DOCUMENT_SCHEMES):
            self.opened_origin = True

    def on_request_failed(self, request: Request) -> None:
        """Names in the warnings a request Chromium sent by itself, around the routes (a
        beacon, a prefetch): the browser's jail gave it no network (browser/jail.py)."""
        if request in self._routed or self.session is None:
            return  # ours: answered or refused with its own warning
        self.session.warn(
            f"blocked {request.resource_type} request to {shown(request.url)}: "
            "a page has no network of its own"
        )

    async def on_route(self, route: Route) -> None:
        self._routed.add(route.request)
        if route.request.resource_type == "document":
            self.opened_origin = True
        session = self.session
        if session is None:
            # A spare page before its render: only our own files (fonts) are served.
            asset = self.assets.lookup(route.request.url)
            with contextlib.suppress(PlaywrightError):
                if asset is None:
                    await route.abort("blockedbyclient")
                else:
                    await route.fulfill(
                        status=200, headers=_cors({"content-type": asset[0]}), body=asset[1]
                    )
            return
        await _answer(session, route)

    async def on_websocket(self, ws: WebSocketRoute) -> None:
        # Not calling connect_to_server means no connection is ever made.
        if self.session is not None:
            self.session.warn(f"blocked WebSocket to {shown(ws.url)}: WebSockets are not allowed")
        with contextlib.suppress(PlaywrightError):
            await ws.close(code=1008, reason="blocked by the render sandbox")


async def _answer(session: RenderSession, route: Route) -> None:
    request = route.request
    url = request.url
    main = session.loading_main and _is_main_navigation(route)
    session.in_flight += 1
    session.loading.add(url)
    session.last_change = time.monotonic()
    try:
        await _fulfil(session, route, url, main)
    except PlaywrightError:
        # The context closed while we answered: nothing left to do.
        pass
    except Exception:
        log.exception("routing a page request failed", url=shown(url))
        with contextlib.suppress(PlaywrightError):
            await route.abort("failed")
    finally:
        session.in_flight -= 1
        session.loading.discard(url)
        session.last_change = time.monotonic()


def _is_main_navigation(route: Route) -> bool:
    request = route.request
    try:
        return request.is_navigation_request() and request.frame.parent_frame is None
    except PlaywrightError:
        return False


async def _fulfil(session: RenderSession, route: Route, url: str, main: bool) -> None:
    asset = session.assets.lookup(url)
    if asset is not None:
        await route.fulfill(status=200, headers=_cors({"content-type": asset[0]}), body=asset[1])
        return
    ref = session.blobs.match(url)
    if ref is not None:
        # Our own blob URL: read it from S3 directly (the loopback edge is off limits).
        try:
            found = await session.read_blob(ref, session.limits.max_resource_bytes)
        except TooLarge as error:
            session.warn(f"{shown(url)} was not loaded: {error}")
            await route.abort("failed")
            return
        if found is None:
            session.warn(f"temp blob {shown(url)} was not found (unknown, expired or not uploaded)")
            await route.fulfill(status=404, body=b"")
            return
        content_type, body = found
        await route.fulfill(status=200, headers=_cors({"content-type": content_type}), body=body)
        return
    request = route.request
    try:
        budget = min(
            session.limits.max_resource_bytes,
            session.limits.max_page_bytes - session.bytes_loaded,
        )
        if budget <= 0:
            raise TooLarge(f"the page loaded more than {session.limits.max_page_bytes} bytes")
        async with session.fetcher.open(
            request.method,
            url,
            headers=await request.all_headers(),
            body=request.post_data_buffer,
            seconds=session.remaining(),
            follow_redirects=not main,
        ) as response:
            if main and 300 <= response.status < 400 and response.headers.get("Location"):
                session.main_redirect = urljoin(str(response.url), response.headers["Location"])
                await route.abort("aborted")
                return
            body = await read_body(response, budget)
            headers = browser_headers(response.headers)
            if main:
                session.main_status = response.status
        session.bytes_loaded += len(body)
        await route.fulfill(status=response.status, headers=headers, body=body)
    except Blocked as error:
        _refuse(session, url, main, f"blocked request to {shown(url)}: {error}", str(error))
        await route.abort("blockedbyclient")
    except TooLarge as error:
        _refuse(session, url, main, f"{shown(url)} was not loaded: {error}", str(error))
        await route.abort("failed")
    except (aiohttp.ClientError, TimeoutError, OSError, ValueError) as error:
        reason = str(error) or type(error).__name__
        _refuse(session, url, main, f"could not load {shown(url)}: {reason}", reason)
        await route.abort("failed")


def _refuse(session: RenderSession, url: str, main: bool, warning: str, reason: str) -> None:
    if main:
        session.main_error = reason
    else:
        session.warn(warning)


def _cors(headers: dict[str, str]) -> dict[str, str]:
    # Pages have no origin ("null"): fonts and fetches of our own files must still work.
    return {**headers, "access-control-allow-origin": "*"}


async def wait_until_quiet(session: RenderSession, quiet_seconds: float = 0.03) -> bool:
    """True once nothing has been loading for `quiet_seconds`; False at the deadline."""
    while True:
        now = time.monotonic()
        if session.in_flight == 0 and now - session.last_change >= quiet_seconds:
            return True
        if now >= session.deadline:
            return False
        # Wakes at the window's end, not at the next 10-ms step: the page is read and drawn
        # during the window (renderer.py `_load`), so an overshoot would be waited idle.
        left = session.last_change + quiet_seconds - now if session.in_flight == 0 else 0.01
        await asyncio.sleep(min(max(left, 0.001), 0.01))

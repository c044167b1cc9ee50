"""One page in a leased context: load the design, let it settle, run the component script."""

from __future__ import annotations

import asyncio
import base64
import time
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import KW_ONLY, dataclass, field
from typing import Any, Final

from playwright.async_api import CDPSession
from playwright.async_api import Error as PlaywrightError
from playwright.async_api import TimeoutError as PlaywrightTimeout

from render_svc.assets import Assets
from render_svc.blob_urls import BlobUrlMatcher
from render_svc.browser.network import (
    BlobReader,
    NetworkLimits,
    RenderSession,
    shown,
    wait_until_quiet,
)
from render_svc.browser.pool import BrowserPool, Lease
from render_svc.netguard import Blocked, GuardedFetcher
from render_svc.stickers import Box, Plan, RawElement
from storypost_runtime.component import component
from storypost_runtime.errors import InvalidArgument

MAX_PAGE_REDIRECTS = 5
JPEG_QUALITY = 90
# The page's default background while an overlay is captured.
TRANSPARENT: Final = {"color": {"r": 0, "g": 0, "b": 0, "a": 0}}
NAVIGATED = (
    "the page navigated away while it was rendered: a design must not change its location, "
    "refresh itself or submit a form"
)


async def capture_image(devtools: CDPSession) -> bytes:
    """The page's viewport as a JPEG: an image design's capture.

    Asked of Chromium directly, as Playwright's `page.screenshot` does in the end, without
    what it does around it: a script in every frame of the page before and after the capture
    (the design's frames included; they set styles for carets and animations, which draw()
    has settled already) and a round trip for the layout. bench/capture.py: 39 against 45 ms
    of the browser's CPU per capture (0.86x) on a page of one frame, the same pixels.
    """
    shot = await devtools.send(
        "Page.captureScreenshot", {"format": "jpeg", "quality": JPEG_QUALITY}
    )
    return base64.b64decode(shot["data"])


async def capture_overlay(devtools: CDPSession) -> bytes:
    """The page's viewport as a PNG with transparency, encoded for speed: a video design's
    overlay.

    The overlay is an intermediate that ffmpeg composites over the video, so the CPU of
    encoding it matters more than its size. Playwright's `page.screenshot` cannot ask
    Chromium for the fast encoder (`optimizeForSpeed`): bench/capture.py measured 74 ms of
    the browser's CPU per 1080x1920 overlay for Playwright's screenshot (zlib's default
    level) and 46 ms for this one (0.62x), for twice the bytes and the same pixels. The
    same capture otherwise, as `capture_image`, over a transparent default background that
    is put back afterwards, as Playwright does.
    """
    await devtools.send("Emulation.setDefaultBackgroundColorOverride", TRANSPARENT)
    try:
        shot = await devtools.send(
            "Page.captureScreenshot", {"format": "png", "optimizeForSpeed": True}
        )
    finally:
        # The page may serve the next render, which must not start transparent. Should this
        # fail, the error ends the render, and a page whose render failed is closed.
        await devtools.send("Emulation.setDefaultBackgroundColorOverride", {})
    return base64.b64decode(shot["data"])


@dataclass(frozen=True)
class CaptureSettings:
    settle_seconds: float
    limits: NetworkLimits


@dataclass(frozen=True)
class Drawn:
    boxes: dict[int, Box | None]
    # Stickers whose element already had a (closed) shadow root from the page.
    failed: frozenset[int]


@dataclass(frozen=True)
class Confirmed:
    boxes: dict[int, Box | None]
    # The page had scrolled after the stickers were drawn (it is scrolled back).
    scrolled: bool


def _boxes(raw: dict[str, Any] | None) -> dict[int, Box | None]:
    return {
        int(index): Box(float(b["x"]), float(b["y"]), float(b["width"]), float(b["height"]))
        if b
        else None
        for index, b in (raw or {}).items()
    }


@component
class PageSession:
    """Steps of one render on its page; every step is bounded by the render's deadline."""

    _: KW_ONLY
    lease: Lease
    network: RenderSession
    assets: Assets
    settle: float
    _key: str = field(init=False)
    # Where the design is: the lease's render frame (an `html` design) or the page's
    # own main frame (a `url` design, loaded at its address).
    _document: Any = field(init=False)

    def __post_init__(self) -> None:
        self._key = self.lease.key
        self._document = self.lease.document

    @property
    def page(self) -> Any:
        return self.lease.page

    @property
    def page_render(self) -> int:
        """This render's number on its page: 1 on a fresh page, more on a reused one."""
        return self.lease.renders + 1

    async def _bounded[T](self, step: Any, what: str, *, loading: bool = False) -> T:
        """Runs a page step; a crash or running out of time become clear errors.

        Loading steps share the settle deadline; each later step gets the settle time anew.
        `what` completes the message: "the page did not <what> within N s".
        """
        crashed = asyncio.ensure_future(self.lease.crashed.wait())
        work = asyncio.ensure_future(step)
        try:
            done, _ = await asyncio.wait(
                {work, crashed},
                timeout=self.network.remaining() if loading else self.settle,
                return_when=asyncio.FIRST_COMPLETED,
            )
        finally:
            crashed.cancel()
        if work in done:
            try:
                return work.result()  # type: ignore[no-any-return]
            except PlaywrightError as error:
                # A page that navigates itself (location, meta refresh, a form submit)
                # pulls the document out from under the step: the caller's design, so a 400.
                if "Execution context was destroyed" in str(error):
                    raise InvalidArgument(NAVIGATED) from None
                raise
        work.cancel()
        if crashed in done:
            raise InvalidArgument(
                self.lease.stopped
                or "the page crashed the browser tab (it may use too much memory or CPU)"
            )
        raise InvalidArgument(f"the page did not {what} within {self.settle:g} s")

    async def load(self, html: str | None, url: str | None) -> None:
        network = self.network
        network.loading_main = True
        try:
            if html is not None:
                await self._load_html(html)
            else:
                assert url is not None
                await self._load_url(url)
        finally:
            network.loading_main = False

    async def settled(self) -> None:
        """Returns once nothing has been loading for the settle window (docs/render.md
        "Settling"); a page still loading at the deadline is a 400."""
        network = self.network
        quiet = await wait_until_quiet(network)
        if not quiet:
            loading = sorted(network.loading)
            example = f", e.g. {shown(loading[0])}" if loading else ""
            raise InvalidArgument(
                f"the page did not settle within {self.settle:g} s: {len(loading)} "
                f"request(s) still loading{example}"
            )

    async def _until_loaded(self, load: Any) -> None:
        """Waits for a load within the settle deadline; a page slower than that is a 400."""
        try:
            await self._bounded(load, "finish loading", loading=True)
        except PlaywrightTimeout:
            raise InvalidArgument(
                f"the page did not finish loading within {self.settle:g} s"
            ) from None

    async def _load_html(self, html: str) -> None:
        await self._until_loaded(
            self._document.set_content(
                html, wait_until="load", timeout=self.network.remaining() * 1000
            )
        )

    async def _load_url(self, url: str) -> None:
        network = self.network
        try:
            network.fetcher.rules.check_url(url)
        except Blocked as error:
            raise InvalidArgument(f"the page url is not allowed: {error}") from None
        self._document = self.page.main_frame
        for _hop in range(MAX_PAGE_REDIRECTS + 1):
            network.main_redirect = network.main_error = None
            try:
                await self._until_loaded(
                    self.page.goto(url, wait_until="load", timeout=network.remaining() * 1000)
                )
            except PlaywrightError as error:
                redirect = network.take_redirect()
                if redirect:
                    url = redirect
                    continue
                reason = network.main_error or str(error).splitlines()[0]
                raise InvalidArgument(f"the page url could not be loaded: {reason}") from None
            if network.main_error:
                raise InvalidArgument(f"the page url could not be loaded: {network.main_error}")
            status = network.main_status
            if status is not None and status >= 400:
                raise InvalidArgument(f"the page url answered HTTP {status}")
            return
        raise InvalidArgument(f"the page url redirects more than {MAX_PAGE_REDIRECTS} times")

    async def collect(self) -> list[RawElement]:
        """The page's photoapp-* elements (the script is installed again if it went missing)."""
        raw: list[dict[str, Any]] | None = await self._bounded(
            self._document.evaluate(
                "(key) => window[key] ? window[key].collect() : null", self._key
            ),
            "settle",
        )
        if raw is None:
            await self._bounded(
                self._document.evaluate(self.assets.page_script(self._key)), "settle"
            )
            raw = await self._bounded(
                self._document.evaluate("(key) => window[key].collect()", self._key), "settle"
            )
        return [RawElement.from_js(item) for item in raw or []]

    async def draw(
        self,
        plans: Sequence[Plan],
        *,
        video: bool,
        now_ms: int,
        watched: bool,
        settling: bool = False,
    ) -> Drawn | None:
        """Draws the stickers (video: over a transparent page) and measures them.

        `watched`: the elements were collected before the page settled; None (nothing
        drawn) when the page added, removed, moved or changed one since. `settling`: the
        page has not settled yet, `confirm` is to follow.
        """
        result: dict[str, Any] = await self._bounded(
            self._document.evaluate(
                "([key, plans, video, now, watched, settling]) => "
                "window[key].draw(plans, video, now, watched, settling)",
                [self._key, [plan.to_js() for plan in plans], video, now_ms, watched, settling],
            ),
            "settle",
        )
        if result.get("changed"):
            return None
        return Drawn(
            _boxes(result.get("boxes")), frozenset(int(i) for i in result.get("failed") or ())
        )

    async def confirm(self, plans: Sequence[Plan]) -> Confirmed | None:
        """After a `draw(..., settling=True)` and the page settled: the boxes now, or None
        when the page changed its elements meanwhile."""
        result: dict[str, Any] | None = await self._bounded(
            self._document.evaluate(
                "([key, plans]) => window[key].confirm(plans)",
                [self._key, [plan.to_js() for plan in plans]],
            ),
            "settle",
        )
        if result is None:
            return None
        return Confirmed(_boxes(result.get("boxes")), scrolled=bool(result.get("scrolled")))

    async def screenshot(self, *, transparent: bool) -> bytes:
        data: bytes = await self._bounded(self._capture(transparent), "render into an image")
        return data

    async def _capture(self, transparent: bool) -> bytes:
        devtools = await self.lease.devtools()
        return await (capture_overlay(devtools) if transparent else capture_image(devtools))


@component
class PageCapture:
    """Opens a page session: a leased context with this render's network rules."""

    _: KW_ONLY
    pool: BrowserPool
    fetcher: GuardedFetcher
    blobs: BlobUrlMatcher
    read_blob: BlobReader
    assets: Assets
    settings: CaptureSettings

    @asynccontextmanager
    async def open(self, organization_id: str) -> AsyncIterator[PageSession]:
        async with self.pool.lease(organization_id) as lease:
            network = RenderSession(
                fetcher=self.fetcher,
                blobs=self.blobs,
                read_blob=self.read_blob,
                assets=self.assets,
                limits=self.settings.limits,
                deadline=time.monotonic() + self.settings.settle_seconds,
            )
            lease.holder.session = network
            try:
                yield PageSession(
                    lease=lease,
                    network=network,
                    assets=self.assets,
                    settle=self.settings.settle_seconds,
                )
            finally:
                lease.holder.session = None

"""A warm pool of Chromium browsers: a clean page per render, spares prepared ahead.

Each render gets a page whose context holds nothing of any other render or organization:
no cookies, storage or cache, and every request routed to render-svc. Creating a context's
first page starts a renderer process, the slow part, so each browser keeps contexts ready
and reuses a page after an `html` render in which nothing ran at an address of its own
(no origin could keep storage), once it is wiped: cookies cleared, the render's frame
replaced by a new one (a new window: globals, timers and workers of the render end;
browser/frames.py), history reset (docs/render.md "Reuse"). Any other render's context is
closed. A browser is replaced after `max_renders` renders (the new one is launched beside it
while renders go on, then takes over), and relaunched when it crashes.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
import shutil
import time
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from playwright.async_api import (
    Browser,
    BrowserContext,
    CDPSession,
    Frame,
    Page,
    Playwright,
    ViewportSize,
    async_playwright,
)
from playwright.async_api import Error as PlaywrightError

from render_svc.assets import Assets
from render_svc.browser import jail
from render_svc.browser.frames import fresh_frame
from render_svc.browser.network import SessionHolder
from render_svc.browser.priority import at_lower_priority, lower_sessions
from render_svc.fair import FairSlots
from storypost_runtime.component import component
from storypost_runtime.errors import ResourceExhausted, Unavailable
from storypost_runtime.logs import get_logger
from storypost_runtime.tasks import TaskSet

log = get_logger(__name__)

VIEWPORT: ViewportSize = {"width": 1080, "height": 1920}
# Chromium's own sandbox stays on (no --no-sandbox): the jail's user namespace allows it.
BASE_ARGS = (
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--mute-audio",
    # The same glyph shapes on every machine, so reference images compare.
    "--font-render-hinting=none",
    # The jail (browser/jail.py) leaves these nothing to reach; they also keep Chromium
    # from trying: no name is resolved, WebRTC gathers no UDP candidates.
    "--force-webrtc-ip-handling-policy=disable_non_proxied_udp",
    "--dns-prefetch-disable",
    "--host-resolver-rules=MAP * ~NOTFOUND",
    # A page's previous document must not survive in the back/forward cache. A new document
    # in the same frame keeps its frame host (RenderDocument off): a `url` design's
    # navigation costs half the CPU; each document still gets a window of its own. Every
    # context's window would start a renderer process for the omnibox popup's WebUI (two
    # pages, 130 MiB and more each), which a headless browser never shows. A render's
    # sandboxed frame (browser/frames.py) stays in its page's renderer process: in a process
    # of its own, each of a design's frames cost the browser process a cross-process frame
    # (a page opening 800 frames stalled the renders beside it), and the page's top
    # document, the only other one in that process, is ours and holds nothing. The jail
    # merges this list with Playwright's (browser/jail.py).
    "--disable-features=BackForwardCache,RenderDocument,WebUIOmniboxPopup,WebUIOmniboxAimPopup,"
    "IsolateSandboxedIframes",
)
# Frames a design may open (iframes, objects, nested ones included); one more ends the render.
MAX_PAGE_FRAMES = 100
# Seconds a reused page's wipe may take; a page that will not be wiped is closed.
WIPE_SECONDS = 5.0
# Seconds a replaced browser may still serve the renders begun on it (longer than any render
# takes) before it is closed under them.
RETIRE_SECONDS = 600.0
# The only variables the browser sees: none of render-svc's settings (database and S3
# addresses, keys) reaches its environment.
BROWSER_ENVIRONMENT = (
    "PATH",
    "HOME",
    "LANG",
    "LC_ALL",
    "TZ",
    "TMPDIR",
    "FONTCONFIG_PATH",
    "FONTCONFIG_FILE",
    "XDG_CONFIG_HOME",
    "XDG_CACHE_HOME",
)


def browser_environment() -> dict[str, str | float | bool]:
    return {name: os.environ[name] for name in BROWSER_ENVIRONMENT if name in os.environ}


async def probe_jail() -> None:
    """Fails start-up with the reason when the browser's network namespace cannot be made."""
    probe = await asyncio.create_subprocess_exec(
        *jail.command(jail.PROBE),
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
    )
    _, stderr = await probe.communicate()
    if probe.returncode != 0:
        raise RuntimeError(stderr.decode(errors="replace").strip() or "the render jail failed")


def _all_slots_busy() -> ResourceExhausted:
    return ResourceExhausted(
        "every render slot is busy; retry later with the same UUID", retry_after_seconds=5
    )


def _setter(event: asyncio.Event) -> Callable[[object], None]:
    """A listener that sets `event`, whatever the emitter passes."""
    return lambda _emitted: event.set()


async def _close_quietly(browser: Browser) -> None:
    """Closes a browser, waiting at most 10 s; one already gone or wedged is left to exit."""
    with contextlib.suppress(PlaywrightError, TimeoutError):
        async with asyncio.timeout(10):
            await browser.close()


@dataclass(frozen=True)
class PoolSettings:
    chromium_path: str
    browsers: int = 1
    concurrency: int = 4
    spare_pages: int = 1
    max_renders: int = 200
    # Renders one page serves (wiped between them) before its context is closed.
    page_max_renders: int = 50
    queue_seconds: float = 30.0
    # Renders that may wait for a slot at once; one more is refused at once (429) instead of
    # holding its caller's connection for queue_seconds only to be refused then.
    queue_limit: int = 16
    # Of which one organization's at most (its excess is refused, not the others').
    per_org_queue_limit: int = 4
    # Nice value of the browsers (0: the service's own); see browser/priority.py.
    browser_nice: int = 0
    js_heap_mib: int = 512
    # Script installed in every document of a context before the page's own scripts; it gets
    # the context's random key (our component script under window[key]).
    page_script: Callable[[str], str] | None = None
    # Run on a spare page (its render frame, its context's key) before any render leases
    # it, off the render's path: the one-time costs of a new renderer process
    # (browser/warmup.py). The render then gets a new frame.
    warm_up: Callable[[Lease], Awaitable[None]] | None = None
    warm_up_seconds: float = 10.0


@dataclass
class Lease:
    """One render's context and page; `holder` receives the render's network session."""

    context: BrowserContext
    page: Page
    # The frame an `html` design is loaded into: new for every render (browser/frames.py).
    document: Frame
    holder: SessionHolder
    # The name of our component script in this context's pages.
    key: str
    # Set when the page crashed or was stopped (`stop`): the render ends with `stopped`.
    crashed: asyncio.Event = field(default_factory=asyncio.Event)
    stopped: str = ""
    renders: int = 0
    cdp: CDPSession | None = None
    # Frames attached since this render began (not the pool's own render frame).
    frames_attached: int = 0

    async def devtools(self) -> CDPSession:
        """The page's own DevTools session, opened once per page."""
        if self.cdp is None:
            self.cdp = await self.context.new_cdp_session(self.page)
        return self.cdp

    def stop(self, reason: str) -> None:
        """Ends the render on this page at once with `reason` (the page is not reused)."""
        if not self.crashed.is_set():
            self.stopped = reason
            self.crashed.set()

    def on_frame_attached(self, limit: int) -> None:
        # A page opening frames by the hundred keeps the browser process busy for every
        # render beside it (each frame is a navigation there): it is stopped early.
        self.frames_attached += 1
        if self.frames_attached > limit:
            self.stop(f"the page opened more than {limit} frames")


@dataclass
class _Slot:
    number: int
    browser: Browser | None = None
    renders: int = 0
    active: int = 0
    spares: deque[Lease] = field(default_factory=deque)
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    refilling: bool = False
    # A browser past its render limit: its successor is being launched.
    replacing: bool = False
    # Used pages being wiped for the next render.
    wiping: int = 0
    # Renders that found no spare while one was on its way (prepared or wiped): each gets
    # the next that comes, in order.
    waiters: deque[asyncio.Future[Lease]] = field(default_factory=deque)

    def coming(self) -> int:
        """Pages on their way to the spares: being wiped, or one being prepared."""
        return self.wiping + self.refilling


@dataclass(frozen=True)
class PoolStats:
    spares: int
    refilling: int  # browsers preparing a spare now
    contexts: int  # open contexts: renders, spares and spares being prepared


@component
class BrowserPool:
    settings: PoolSettings
    assets: Assets
    _playwright: Playwright | None = field(init=False, default=None)
    _slots: list[_Slot] = field(init=False)
    # Render slots, shared fairly between organizations (render_svc/fair.py).
    _free: FairSlots = field(init=False)
    _tasks: TaskSet = field(init=False, default_factory=TaskSet)
    # The jailed browser's wrapper script, alone in a private directory of its own.
    _executable: Path | None = field(init=False, default=None)
    launches: int = field(init=False, default=0)
    reused: int = field(init=False, default=0)
    # Wiped pages kept ready per browser: as many as can render on it at once.
    _kept: int = field(init=False)

    def __post_init__(self) -> None:
        settings = self.settings
        self._slots = [_Slot(n) for n in range(settings.browsers)]
        self._free = FairSlots(
            slots=settings.concurrency,
            queue_seconds=settings.queue_seconds,
            queue_limit=settings.queue_limit,
            per_org_queue_limit=settings.per_org_queue_limit,
            busy=_all_slots_busy,
        )
        self._kept = max(settings.spare_pages, -(-settings.concurrency // settings.browsers))

    def slot_use(self) -> tuple[int, int]:
        """Render slots in use, and renders waiting for one (the backlog gauges)."""
        return self._free.in_use, self._free.waiting

    def stats(self) -> PoolStats:
        return PoolStats(
            spares=sum(len(slot.spares) for slot in self._slots),
            refilling=sum(slot.refilling for slot in self._slots),
            contexts=sum(
                len(slot.browser.contexts)
                for slot in self._slots
                if slot.browser is not None and slot.browser.is_connected()
            ),
        )

    def _args(self) -> list[str]:
        return [*BASE_ARGS, f"--js-flags=--max-old-space-size={self.settings.js_heap_mib}"]

    async def start(self) -> None:
        await probe_jail()
        self._executable = jail.wrapper(self.settings.chromium_path, jail.private_directory())
        async with at_lower_priority(self.settings.browser_nice):
            self._playwright = await async_playwright().start()
        for slot in self._slots:
            await self._ensure_browser(slot)
            await self._refill(slot)

    async def close(self) -> None:
        await self._tasks.close()
        for slot in self._slots:
            await self._close_browser(slot)
        if self._playwright is not None:
            await self._playwright.stop()
            self._playwright = None
        if self._executable is not None:
            shutil.rmtree(self._executable.parent, ignore_errors=True)
            self._executable = None

    async def _ensure_browser(self, slot: _Slot) -> Browser:
        async with slot.lock:
            if slot.browser is not None and slot.browser.is_connected():
                return slot.browser
            browser = await self._launch(slot)
            slot.browser, slot.renders = browser, 0
            slot.spares.clear()
            return browser

    async def _launch(self, slot: _Slot) -> Browser:
        """A new browser for `slot`, at the lower priority; the caller makes it the slot's."""
        if self._playwright is None or self._executable is None:
            raise Unavailable("the browser pool is not running")
        started = time.perf_counter()
        browser = await self._playwright.chromium.launch(
            executable_path=self._executable,
            args=self._args(),
            headless=True,
            chromium_sandbox=True,
            env=browser_environment(),
        )
        browser.on("disconnected", lambda _b: self._on_disconnect(slot, browser))
        # The browser runs in a session of its own: its scheduling group gets the lower
        # priority too (browser/priority.py).
        lowered = await asyncio.to_thread(lower_sessions, self.settings.browser_nice)
        self.launches += 1
        log.info(
            "browser launched",
            slot=slot.number,
            version=browser.version,
            seconds=round(time.perf_counter() - started, 2),
            sessions_lowered=len(lowered),
        )
        return browser

    async def _replace_browser(self, slot: _Slot) -> None:
        """Replaces a browser past its render limit without a pause: renders keep using it
        while its successor starts (seconds, at the lower priority, on a busy machine), then
        the successor takes over; the old one closes once the renders on it have ended (their
        pages are not reused: `_reusable`)."""
        try:
            successor = await self._launch(slot)
        except (PlaywrightError, Unavailable) as error:
            log.warning("launching a browser's successor failed", error=str(error))
            slot.replacing = False
            return
        async with slot.lock:
            old, slot.browser, slot.renders = slot.browser, successor, 0
            spares, slot.spares = list(slot.spares), deque()
            slot.replacing = False
        log.info("browser reached its render limit; replaced", slot=slot.number)
        self._schedule_refill(slot)
        for spare in spares:
            with contextlib.suppress(PlaywrightError):
                await spare.context.close()
        if old is not None:
            await self._retire(old)

    @staticmethod
    async def _retire(browser: Browser) -> None:
        """Closes a replaced browser once no context is open on it (or it is gone).

        Its contexts are looked at anew after each one closes, not once: a render that took
        the slot's browser just before the replacement may still open a context on it, and
        closing the browser then would end that render under it (a 500 seen under load).
        """
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(RETIRE_SECONDS):
                while browser.is_connected() and browser.contexts:
                    changed = asyncio.Event()
                    for context in browser.contexts:
                        context.once("close", _setter(changed))
                    browser.once("disconnected", _setter(changed))
                    await changed.wait()
        await _close_quietly(browser)

    def _on_disconnect(self, slot: _Slot, browser: Browser) -> None:
        if slot.browser is browser:
            log.warning(
                "browser disconnected; it is relaunched on the next render", slot=slot.number
            )
            slot.browser = None
            slot.spares.clear()

    async def _close_browser(self, slot: _Slot) -> None:
        browser, slot.browser = slot.browser, None
        slot.spares.clear()
        if browser is not None:
            await _close_quietly(browser)

    async def _new_lease(self, browser: Browser) -> Lease:
        context = await browser.new_context(
            viewport=VIEWPORT,
            device_scale_factor=1,
            bypass_csp=True,
            service_workers="block",
            accept_downloads=False,
            locale="en-US",
            timezone_id="UTC",
            color_scheme="light",
        )
        holder = SessionHolder(self.assets)
        key = "__storypost_" + secrets.token_hex(8)
        try:
            if self.settings.page_script is not None:
                await context.add_init_script(self.settings.page_script(key))
            await context.route("**/*", holder.on_route)
            await context.route_web_socket("**/*", holder.on_websocket)
            context.on("requestfailed", holder.on_request_failed)
            page = await context.new_page()
            document = await fresh_frame(page)
        except BaseException:
            with contextlib.suppress(PlaywrightError):
                await context.close()
            raise
        lease = Lease(context, page, document, holder, key)
        page.on("crash", lambda _p: lease.crashed.set())
        page.on("frameattached", lambda _f: lease.on_frame_attached(MAX_PAGE_FRAMES))
        page.on("framenavigated", lambda frame: holder.note_document(frame.url))
        page.on("worker", lambda worker: holder.note_document(worker.url))
        return lease

    async def _warm(self, lease: Lease) -> bool:
        """Warms a spare; False (and the context closed) when the page would not warm up."""
        if self.settings.warm_up is None:
            return True
        try:
            async with asyncio.timeout(self.settings.warm_up_seconds):
                await self.settings.warm_up(lease)
                lease.document = await fresh_frame(lease.page, lease.document)
            warm = not lease.crashed.is_set()
        except (PlaywrightError, TimeoutError) as error:
            log.warning("warming a spare page failed; it is not used", error=str(error))
            warm = False
        if not warm:
            with contextlib.suppress(PlaywrightError):
                await lease.context.close()
        return warm

    def _pick(self) -> _Slot:
        return min(self._slots, key=lambda s: (s.active - len(s.spares), s.number))

    @asynccontextmanager
    async def lease(self, organization_id: str) -> AsyncIterator[Lease]:
        """A clean page for one render of the organization, once a slot is its turn;
        wiped for the next render or closed afterwards."""
        await self._free.acquire(organization_id)
        slot = self._pick()
        slot.active += 1
        lease: Lease | None = None
        completed = False
        try:
            lease = await self._checkout(slot)
            lease.frames_attached = 0
            yield lease
            completed = True
        finally:
            slot.active -= 1
            if lease is None:
                self._free.release(organization_id)
            else:
                lease.renders += 1
                # Counted at once, so that the next render waits for this page.
                reuse = completed and self._reusable(slot, lease)
                slot.wiping += reuse
                # Wiping or closing is off the render's path; its slot frees once done.
                self._spawn(self._release_then_free(slot, lease, reuse, organization_id))

    async def _release_then_free(
        self, slot: _Slot, lease: Lease, reuse: bool, organization_id: str
    ) -> None:
        try:
            await self._release(slot, lease, reuse)
        finally:
            self._free.release(organization_id)

    def _spawn(self, work: Coroutine[Any, Any, None]) -> None:
        self._tasks.spawn(work)

    async def _checkout(self, slot: _Slot) -> Lease:
        for _attempt in range(2):
            browser = await self._ensure_browser(slot)
            # The spare is replaced when this render ends (_release), not now: preparing a
            # context starts a renderer process, which would compete with this render's own
            # for the same cores.
            while slot.spares:
                spare = slot.spares.popleft()
                if not spare.page.is_closed():
                    return spare
            if len(slot.waiters) < slot.coming():
                # A page is on its way: starting another renderer process beside it would
                # slow both down.
                handed = await self._await_spare(slot)
                if handed is not None and not handed.page.is_closed():
                    return handed
            # Waiting for a spare took time: the slot's browser may have been replaced since.
            if slot.browser is not browser:
                continue
            try:
                return await self._new_lease(browser)
            except PlaywrightError as error:
                if slot.browser is not browser:
                    continue  # replaced meanwhile and closed: the next attempt uses its successor
                # The browser died between the check and now: relaunch once.
                log.warning("new context failed; relaunching the browser", error=str(error))
                await self._close_browser(slot)
        raise Unavailable("the browser is not starting; retry later")

    async def _await_spare(self, slot: _Slot) -> Lease | None:
        """The spare being prepared, handed to this render; None when it does not come."""
        waiter: asyncio.Future[Lease] = asyncio.get_running_loop().create_future()
        slot.waiters.append(waiter)
        try:
            async with asyncio.timeout(self.settings.warm_up_seconds):
                await asyncio.wait([waiter])
        except TimeoutError:
            pass
        except BaseException:
            # This render was cancelled: a spare handed over meanwhile goes back.
            if waiter.done() and not waiter.cancelled():
                slot.spares.append(waiter.result())
            raise
        finally:
            with contextlib.suppress(ValueError):
                slot.waiters.remove(waiter)
        if waiter.done() and not waiter.cancelled():
            return waiter.result()
        waiter.cancel()
        return None

    def _hand_over(self, slot: _Slot, lease: Lease) -> None:
        """A prepared spare goes to the render waiting for it, or to the spares."""
        while slot.waiters:
            waiter = slot.waiters.popleft()
            if not waiter.done():
                waiter.set_result(lease)
                return
        slot.spares.append(lease)

    def _settle_waiters(self, slot: _Slot) -> None:
        """Renders waiting for more pages than are coming make their own contexts."""
        while len(slot.waiters) > slot.coming():
            slot.waiters.pop().cancel()

    async def _release(self, slot: _Slot, lease: Lease, reuse: bool) -> None:
        if reuse:
            try:
                reuse = await self._wipe(slot, lease)
            finally:
                slot.wiping -= 1
        if reuse:
            self.reused += 1
            self._hand_over(slot, lease)
        else:
            self._settle_waiters(slot)
            try:
                async with asyncio.timeout(10):
                    await lease.context.close()
            except (PlaywrightError, TimeoutError) as error:
                # A context that will not close means a wedged browser: replace it. Not so
                # when its browser is no longer the slot's (replaced, then closed or retiring):
                # closing the slot's browser would end the renders running on the successor.
                if lease.context.browser is slot.browser:
                    log.warning(
                        "closing a render context failed; restarting the browser",
                        error=str(error),
                    )
                    await self._close_browser(slot)
                    self._schedule_refill(slot)
                    return
        slot.renders += 1
        if slot.renders >= self.settings.max_renders and not slot.replacing:
            slot.replacing = True
            self._spawn(self._replace_browser(slot))
        self._schedule_refill(slot)

    def _reusable(self, slot: _Slot, lease: Lease, *, counted: bool = False) -> bool:
        """Only a page whose every document and worker had no origin of its own is reused:
        such documents cannot keep storage (localStorage, IndexedDB, Cache Storage and
        cookies throw or do nothing without an origin), so what is left to wipe is the
        context's cookies (set by responses), the window and its history. `counted`: this
        page is already among the slot's pages being wiped."""
        return (
            lease.renders < self.settings.page_max_renders
            and len(slot.spares) + slot.wiping - counted < self._kept
            and not lease.holder.opened_origin
            and not lease.crashed.is_set()
            and slot.browser is not None
            and lease.context.browser is slot.browser
            and not lease.page.is_closed()
            and lease.page.url.startswith("about:")
            and lease.context.pages == [lease.page]
        )

    async def _wipe(self, slot: _Slot, lease: Lease) -> bool:
        """Readies a used page for the next render; False when it is not to be reused."""
        page = lease.page
        try:
            async with asyncio.timeout(WIPE_SECONDS):
                await lease.context.clear_cookies()
                # A new frame is a new window (and a new `window.name`): the render's globals,
                # timers, workers and performance entries end with the old frame.
                lease.document = await fresh_frame(page, lease.document)
                # The old frame's navigations stay in the page's joint session history.
                await (await lease.devtools()).send("Page.resetNavigationHistory")
        except (PlaywrightError, TimeoutError) as error:
            log.info("a used page could not be wiped; its context is closed", error=str(error))
            return False
        # Checked again: the old document could still act while it was being replaced.
        return self._reusable(slot, lease, counted=True)

    def _schedule_refill(self, slot: _Slot) -> None:
        if slot.refilling or len(slot.spares) >= self.settings.spare_pages:
            return
        self._spawn(self._refill(slot))

    async def _refill(self, slot: _Slot) -> None:
        if slot.refilling:
            return
        slot.refilling = True
        try:
            while len(slot.spares) < self.settings.spare_pages:
                browser = await self._ensure_browser(slot)
                lease = await self._new_lease(browser)
                # A render already waiting for this spare takes it as it is.
                if not slot.waiters and not await self._warm(lease):
                    if slot.browser is not browser or not browser.is_connected():
                        continue
                    break  # a browser that cannot warm a page: try again on the next lease
                if slot.browser is not browser:
                    with contextlib.suppress(PlaywrightError):
                        await lease.context.close()
                    continue
                self._hand_over(slot, lease)
        except (PlaywrightError, Unavailable) as error:
            log.warning("preparing a spare context failed", error=str(error))
        finally:
            slot.refilling = False
            self._settle_waiters(slot)

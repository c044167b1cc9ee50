"""The browser pool against real Chromium: warmed spares, a page reused only once wiped and
only when nothing ran at an address of its own (issue #21), a fresh context otherwise, and a
render that arrives while a spare is being prepared getting that spare (issue #5)."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from playwright.async_api import Browser

from render_svc.assets import load_assets
from render_svc.browser.capture import capture_image, capture_overlay
from render_svc.browser.frames import fresh_frame
from render_svc.browser.memory import arguments, descendants, is_renderer, processes
from render_svc.browser.pool import BrowserPool, Lease, PoolSettings
from render_svc.browser.warmup import warm_up
from render_svc.config import RenderSettings
from storypost_runtime.errors import ResourceExhausted
from tests.integration.render.support import decode_rgb

pytestmark = pytest.mark.integration
ORG = "pool-org"


class Recorder:
    """Counts warm-ups; `gate` holds a warm-up until the test lets it go."""

    def __init__(self) -> None:
        self.warmed: list[Any] = []
        self.gate: asyncio.Event | None = None
        self.entered = asyncio.Event()

    async def __call__(self, lease: Lease) -> None:
        if self.gate is not None:
            self.entered.set()
            await self.gate.wait()
        await warm_up(lease)
        self.warmed.append(lease.page)


@asynccontextmanager
async def running_pool(**settings: Any) -> AsyncIterator[BrowserPool]:
    assets = load_assets()
    pool = BrowserPool(
        PoolSettings(
            chromium_path=RenderSettings().chromium_path,
            page_script=assets.page_script,
            **settings,
        ),
        assets,
    )
    await pool.start()
    try:
        yield pool
    finally:
        await pool.close()


@pytest.fixture
async def pool_and_warmups() -> AsyncIterator[tuple[BrowserPool, Recorder]]:
    """A pool that reuses no page (one render per page): every render ends its context."""
    recorder = Recorder()
    async with running_pool(
        concurrency=2, spare_pages=1, page_max_renders=1, warm_up=recorder
    ) as pool:
        yield pool, recorder


async def wait_for(condition: Any, seconds: float = 20.0) -> None:
    async with asyncio.timeout(seconds):
        while not condition():
            await asyncio.sleep(0.02)


async def test_spares_are_warmed_and_every_render_gets_a_new_context(
    pool_and_warmups: tuple[BrowserPool, Recorder],
) -> None:
    pool, recorder = pool_and_warmups
    # start() prepared one spare and warmed it with our sample: stickers drawn in it.
    assert len(recorder.warmed) == 1
    contexts = []
    for _ in range(3):
        async with pool.lease(ORG) as lease:
            contexts.append(lease.context)
            # The page comes warmed (our sample drawn in a frame of its own) with a new, empty
            # frame for the render: nothing of the sample is in it, our script is.
            assert recorder.warmed[-1] is lease.page
            drawn = await lease.document.evaluate(
                "() => document.querySelectorAll('photoapp-hashtag').length"
            )
            assert drawn == 0
            assert await lease.document.evaluate("(key) => typeof window[key]", lease.key) == (
                "object"
            )
        # Replaced after the render ends, not during it.
        await wait_for(lambda: len(recorder.warmed) >= len(contexts) + 1)
    assert len({id(c) for c in contexts}) == 3
    # Contexts of past renders are closed.
    assert all(not c.pages for c in contexts)


LEAVE = """() => {
  window.name = "left";
  globalThis.leftBehind = 1;
  history.pushState({}, "", "#left");
}"""
READ = "() => [window.name, typeof globalThis.leftBehind, history.length]"


async def test_a_used_page_is_wiped_and_reused_up_to_its_limit() -> None:
    async with running_pool(concurrency=1, spare_pages=1, page_max_renders=3) as pool:
        pages = []
        for _ in range(4):
            async with pool.lease(ORG) as lease:
                pages.append(lease.page)
                # What every earlier render left is gone: a new window, one history entry.
                assert await lease.document.evaluate(READ) == ["", "undefined", 1]
                await lease.document.set_content("<p>a design</p>")
                await lease.document.evaluate(LEAVE)
                await lease.context.add_cookies(
                    [{"name": "left", "value": "1", "url": "https://example.com/"}]
                )
            await wait_for(lambda: pool.stats().spares == 1)
            if not pages[-1].is_closed():
                # The cookies a response set are gone with the render.
                assert await pages[-1].context.cookies() == []
        # Three renders on the first page, then a new one (itself wiped for a fifth).
        assert pages[0] is pages[1] is pages[2]
        assert pages[3] is not pages[0] and pages[0].is_closed()
        assert pool.reused == 3


async def test_a_video_overlay_leaves_the_reused_page_with_its_white_background() -> None:
    # The overlay is captured over a transparent default background; the next render on the
    # same page must get the white default again (a design without a background of its own
    # would otherwise come out black in its JPEG).
    async with running_pool(concurrency=1, spare_pages=1, page_max_renders=3) as pool:
        async with pool.lease(ORG) as lease:
            first = lease.page
            await lease.document.set_content("<p>an overlay</p>")
            overlay = await capture_overlay(await lease.devtools())
        await wait_for(lambda: pool.stats().spares == 1)
        async with pool.lease(ORG) as lease:
            assert lease.page is first
            await lease.document.set_content("<p>a design without a background</p>")
            image = await capture_image(await lease.devtools())
    # The bottom right corner, far from the text: see-through, then white.
    assert decode_rgb(overlay, 10, 10, "rgba")[-4:] == bytes([0, 0, 0, 0])
    assert min(decode_rgb(image, 10, 10)[-3:]) >= 250


async def test_a_browser_past_its_render_limit_is_replaced_while_renders_go_on() -> None:
    async with running_pool(concurrency=1, spare_pages=1, max_renders=3) as pool:
        browsers: list[Browser] = []
        for _ in range(4):
            async with pool.lease(ORG) as lease:
                assert lease.context.browser is not None
                browsers.append(lease.context.browser)
                await lease.document.set_content("<p>a design</p>")
        # The fourth render began while the successor was starting: on the old browser, at
        # once, instead of waiting for a launch.
        assert browsers[3] is browsers[0] and pool.launches in (1, 2)
        await wait_for(lambda: pool.launches == 2 and not browsers[0].is_connected())
        async with pool.lease(ORG) as lease:
            successor = lease.context.browser
            assert successor is not None and successor is not browsers[0]
            assert successor.is_connected()
            await lease.document.set_content("<p>on the successor</p>")


async def test_a_replaced_browser_stays_open_while_any_context_on_it_is_open() -> None:
    """A render that took the slot's browser just before its replacement may open its context
    after the retirement began: the old browser waits for that context too, not only for
    those it had when it was retired (closing it under that render was a 500 under load)."""
    async with running_pool(concurrency=1, spare_pages=0) as pool:
        async with pool.lease(ORG) as lease:
            browser = lease.context.browser
        assert browser is not None
        # The pool keeps the used page open: closed, only the test's own contexts remain.
        for kept in browser.contexts:
            await kept.close()
        first = await browser.new_context()
        retiring = asyncio.create_task(BrowserPool._retire(browser))
        await asyncio.sleep(0.2)
        late = await browser.new_context()
        page = await late.new_page()
        await first.close()
        await asyncio.sleep(0.5)
        assert browser.is_connected() and not retiring.done()
        await page.set_content("<p>the late render goes on</p>")
        await late.close()
        await asyncio.wait_for(retiring, 20)
        assert not browser.is_connected()


async def test_a_page_where_a_document_came_from_an_address_is_not_reused() -> None:
    async with running_pool(concurrency=1, spare_pages=1) as pool:
        async with pool.lease(ORG) as lease:
            used = lease.page
            # The frame's document is asked for (and refused: no render is running); that it
            # was asked for is enough: an origin could have kept storage in this context.
            await lease.document.set_content("<iframe src='https://example.com/'></iframe>")
            await wait_for(lambda: lease.holder.opened_origin)
        await wait_for(lambda: pool.stats().spares == 1)
        assert used.is_closed() and pool.reused == 0
        async with pool.lease(ORG) as lease:
            assert lease.page is not used


async def test_render_waits_for_the_spare_being_prepared_instead_of_starting_another(
    pool_and_warmups: tuple[BrowserPool, Recorder],
) -> None:
    pool, recorder = pool_and_warmups
    recorder.gate = asyncio.Event()
    async with pool.lease(ORG):
        pass
    # The refill prepares the next spare; the gate holds it in its warm-up.
    await asyncio.wait_for(recorder.entered.wait(), 20)
    contexts_before = pool.stats().contexts

    async def render() -> Any:
        async with pool.lease(ORG) as lease:
            return lease.context

    waiting = asyncio.create_task(render())
    await asyncio.sleep(0.5)
    assert not waiting.done()  # it waits for that spare rather than making its own
    assert pool.stats().contexts == contexts_before
    recorder.gate.set()
    context = await asyncio.wait_for(waiting, 20)
    assert context is recorder.warmed[1].context


async def test_renders_past_the_queue_limit_are_refused_at_once() -> None:
    async with running_pool(concurrency=1, spare_pages=0, queue_seconds=60, queue_limit=1) as pool:
        held = asyncio.Event()
        done = asyncio.Event()

        async def render(hold: bool) -> None:
            async with pool.lease(ORG):
                if hold:
                    held.set()
                    await done.wait()

        first = asyncio.create_task(render(hold=True))
        await asyncio.wait_for(held.wait(), 20)
        second = asyncio.create_task(render(hold=False))  # waits: the queue has room for one
        await asyncio.sleep(0.2)
        assert not second.done()
        started = asyncio.get_running_loop().time()
        with pytest.raises(ResourceExhausted) as refused:
            await render(hold=False)
        assert asyncio.get_running_loop().time() - started < 1  # not after queue_seconds
        assert refused.value.retry_after_seconds == 5
        done.set()
        await asyncio.wait_for(asyncio.gather(first, second), 20)
        # With the queue empty again, a render waits its turn instead of being refused.
        await asyncio.wait_for(render(hold=False), 20)


def _the_pools_browser(earlier: set[int]) -> int:
    """The browser process of the one pool started since `earlier` (this process's
    descendants then): a Chromium process with no `--type`."""
    browsers = [
        pid
        for pid in set(descendants(os.getpid(), processes())) - earlier
        if (argv := arguments(pid))
        and "chrom" in argv[0]
        and not any(a.startswith("--type=") for a in argv)
    ]
    assert len(browsers) == 1, [arguments(pid) for pid in browsers]
    return browsers[0]


async def test_the_browser_gets_every_feature_switch_and_starts_no_browser_ui() -> None:
    """Chromium reads only the last --disable-features: Playwright's list and ours must
    arrive as one. And no context's window starts a renderer for the browser's own UI."""
    earlier = set(descendants(os.getpid(), processes()))  # other tests' render-svc browsers
    async with running_pool(concurrency=2, spare_pages=1) as pool:
        for _ in range(2):
            async with pool.lease(ORG) as lease:
                await lease.document.set_content("<p>a design</p>")
        browser = _the_pools_browser(earlier)
        argvs = [arguments(pid) for pid in descendants(browser, processes())]
        disabled = [a for a in arguments(browser) if a.startswith("--disable-features=")]
    assert len(disabled) == 1, disabled
    features = disabled[0].split("=", 1)[1].split(",")
    # One of Playwright's own (it keeps pages painting at once) and ours.
    assert "PaintHolding" in features and "BackForwardCache" in features, features
    renderers = [argv for argv in argvs if "--type=renderer" in argv]
    assert renderers, "no renderer process"
    assert not [argv for argv in renderers if "--top-chrome-webui" in argv]


async def test_every_fresh_frame_is_the_top_documents_new_and_only_frame() -> None:
    async with running_pool(concurrency=1, spare_pages=1) as pool, pool.lease(ORG) as lease:
        page, seen = lease.page, [lease.document]
        for previous in (seen[-1], None, seen[-1]):
            # Without `previous` the lookup cannot tell the old frame from the new one
            # until the old one is reported detached: it asks the document instead.
            frame = await fresh_frame(page, previous)
            element = await page.query_selector("body > iframe")
            assert element is not None
            assert frame is await element.content_frame()
            assert frame not in seen and all(old.is_detached() for old in seen)
            seen.append(frame)
        assert await page.evaluate("document.querySelectorAll('iframe').length") == 1


def _status(pid: int) -> dict[str, str]:
    lines = (Path("/proc") / str(pid) / "status").read_text().splitlines()
    return {key: value.strip() for key, _, value in (line.partition(":") for line in lines)}


def _namespace(pid: int, kind: str) -> str:
    return str((Path("/proc") / str(pid) / "ns" / kind).readlink())


async def test_renderers_run_in_chromiums_own_sandbox() -> None:
    """docs/render.md "The sandbox": the browser runs in the jail's user and network
    namespaces, and the jail lets Chromium's own namespace sandbox run, so each renderer
    (which runs the pages' scripts) is under a seccomp-bpf filter, in user, PID and network
    namespaces nested below the browser's. Read from /proc, outside the browser."""
    earlier = set(descendants(os.getpid(), processes()))  # other tests' render-svc browsers
    async with running_pool(concurrency=1, spare_pages=1) as pool, pool.lease(ORG) as lease:
        await lease.document.set_content("<p>a design</p>")
        browser = _the_pools_browser(earlier)
        renderers = [pid for pid in descendants(browser, processes()) if is_renderer(pid)]
        assert renderers, "no renderer process"
        for kind in ("user", "net"):
            assert _namespace(browser, kind) != _namespace(os.getpid(), kind), kind
        for pid in renderers:
            status = _status(pid)
            assert status["Seccomp"] == "2", (pid, status["Seccomp"])  # filter mode
            assert status["NoNewPrivs"] == "1", pid
            for kind in ("user", "pid", "net"):
                assert _namespace(pid, kind) != _namespace(browser, kind), (pid, kind)

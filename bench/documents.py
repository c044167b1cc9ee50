"""What a new window per render costs: the ways a design's document can be made, side by
side in one browser (render-svc's executable, jail and flags, its component script as the
context's init script, every request routed as render-svc routes them).

  same document       `page.set_content` into the page's own document, then render-svc's
                      JPEG capture: the bare side of bench/render.py. The document stays,
                      and its resources with it: the background is not fetched or decoded
                      again (its route sees one request in all).
  new background      the same with the background at a new address each time: fetched
                      and decoded anew, as in every render.
  new frame           render-svc's way (browser/frames.py): a new sandboxed frame, the design
                      set as its content, the capture; the frame's document fetches the
                      background anew.
  new frame, srcdoc   the new frame given the design as its `srcdoc` (one round trip fewer).
Interleaved rounds. CPU per render of each kind of process (from /proc; "routes" is this
process, which answers the routes as render-svc does). The last line: each way's CPU per
render and what the frame and the background add. docs/render.md ("Where a render's CPU
goes") explains the figures.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import os
import secrets
import shutil
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path

from playwright.async_api import BrowserContext, Page, Route, async_playwright

from render_svc.assets import load_assets
from render_svc.browser import jail
from render_svc.browser.capture import capture_image
from render_svc.browser.frames import NEW_FRAME, fresh_frame
from render_svc.browser.memory import arguments, descendants, processes
from render_svc.browser.pool import BASE_ARGS, VIEWPORT, browser_environment
from render_svc.config import RenderSettings

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.capture import photo
from bench.render import chromium_type, typical_design

BACKGROUND = "https://photo.storypost.invalid/background.jpg"
# The new frame given the design as its srcdoc; resolves once the frame's load event fired.
SRCDOC = NEW_FRAME.replace("() => {", "(html) => new Promise((loaded) => {", 1).replace(
    "replaceChildren(frame);\n}",
    'replaceChildren(frame);\n  frame.addEventListener("load", loaded, { once: true });\n'
    "  frame.srcdoc = html;\n})",
)
# Built from render-svc's own frame script, so that only the way the design arrives differs.
assert SRCDOC.startswith("(html) =>") and "frame.srcdoc = html" in SRCDOC, "NEW_FRAME changed"
Way = Callable[[Page, str], Awaitable[None]]


def cpu_by_kind() -> dict[str, float]:
    """CPU seconds so far of this process ("routes"), Playwright's driver and each kind of
    Chromium process under it."""
    table = processes()
    me = os.getpid()
    found = {"routes": table[me].cpu_seconds} if me in table else {}
    for pid in descendants(me, table):
        argv = arguments(pid)
        kind = chromium_type(argv) or ("driver" if "node" in " ".join(argv[:1]) else "browser")
        found[kind] = found.get(kind, 0.0) + table[pid].cpu_seconds
    return found


async def same_document(page: Page, html: str) -> None:
    await page.set_content(html, wait_until="load")


async def new_frame(page: Page, html: str) -> None:
    frame = await fresh_frame(page, None)
    await frame.set_content(html, wait_until="load")


async def new_frame_srcdoc(page: Page, html: str) -> None:
    await page.evaluate(SRCDOC, html)


async def context_of(browser_context: BrowserContext, background: bytes) -> Page:
    assets = load_assets()
    await browser_context.add_init_script(assets.page_script("k" + secrets.token_hex(8)))

    async def serve(route: Route) -> None:
        url = route.request.url
        if (found := assets.lookup(url)) is not None:
            await route.fulfill(body=found[1], content_type=found[0])
        elif url.startswith(BACKGROUND):
            await route.fulfill(body=background, content_type="image/jpeg")
        else:
            await route.abort()

    await browser_context.route("**/*", serve)
    return await browser_context.new_page()


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--per-round", type=int, default=30)
    args = parser.parse_args()
    html = typical_design(BACKGROUND)
    fresh = (f"{BACKGROUND}?{n}" for n in itertools.count())
    ways: dict[str, tuple[Way, Callable[[], str]]] = {
        "same document": (same_document, lambda: html),
        "new background": (same_document, lambda: html.replace(BACKGROUND, next(fresh))),
        "new frame": (new_frame, lambda: html),
        "new frame, srcdoc": (new_frame_srcdoc, lambda: html),
    }
    used = {name: dict[str, float]() for name in ways}
    private = jail.private_directory()
    try:
        async with async_playwright() as playwright:
            browser = await playwright.chromium.launch(
                executable_path=str(jail.wrapper(RenderSettings().chromium_path, private)),
                args=list(BASE_ARGS),
                chromium_sandbox=True,
                env=browser_environment(),
            )
            page = await context_of(await browser.new_context(viewport=VIEWPORT), photo())
            devtools = await page.context.new_cdp_session(page)

            async def render(way: Way, design: str) -> None:
                await way(page, design)
                await capture_image(devtools)

            for way, design in ways.values():  # warm: code compiled, fonts loaded
                for _ in range(5):
                    await render(way, design())
            for _ in range(args.rounds):
                for name, (way, design) in ways.items():
                    before = cpu_by_kind()
                    for _ in range(args.per_round):
                        await render(way, design())
                    for kind, seconds in cpu_by_kind().items():
                        spent = (seconds - before.get(kind, 0.0)) * 1000 / args.per_round
                        used[name][kind] = used[name].get(kind, 0.0) + spent / args.rounds
            await browser.close()
    finally:
        shutil.rmtree(private, ignore_errors=True)
    total = {name: sum(kinds.values()) for name, kinds in used.items()}
    for name, kinds in used.items():
        shown = sorted(((ms, k) for k, ms in kinds.items() if ms >= 0.5), reverse=True)
        split = ", ".join(f"{k} {ms:.0f}" for ms, k in shown)
        print(f"{name}: {total[name]:.0f} ms of CPU per render ({split})", flush=True)
    print(
        "RESULT CPU per render: "
        + ", ".join(f"{name} {ms:.0f} ms" for name, ms in total.items())
        + f" | the background adds {total['new background'] - total['same document']:.0f} ms,"
        f" the frame {total['new frame'] - total['new background']:.0f} ms"
    )


if __name__ == "__main__":
    asyncio.run(main())

"""render-svc's captures against Playwright's screenshots, side by side.

One browser (Debian chromium, render-svc's flags and viewport), one page per design kind:
  image    a 1080x1920 photo background, a heading and four sticker pills: render-svc's
           `capture_image` against `page.screenshot(type="jpeg", quality=90)`
  overlay  the same stickers over a transparent page (a video design's overlay):
           render-svc's `capture_overlay` (Chromium's fast PNG encoder) against
           `page.screenshot(type="png", omit_background=True)` (zlib's default level)
Interleaved rounds, so machine noise hits both sides alike. Per capture: the wall time (p50)
and the CPU of the browser (every Chromium process and Playwright's driver, from /proc).
Both sides' decoded pixels are compared first: they must be the same.

The last line: ours against Playwright's for each kind, CPU and p50 ratios (lower is better).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

from playwright.async_api import Browser, Page, Route, async_playwright

from render_svc.browser.capture import JPEG_QUALITY, capture_image, capture_overlay
from render_svc.browser.memory import descendants, processes
from render_svc.browser.pool import BASE_ARGS, VIEWPORT
from render_svc.config import RenderSettings

PHOTO_URL = "https://photo.storypost.invalid/background.jpg"
PILL = (
    "position:absolute;left:{x}px;top:{y}px;padding:20px 48px;border-radius:40px;"
    "background:linear-gradient(90deg,#FF8A00,#E52E71);box-shadow:0 6px 22px rgba(0,0,0,.18);"
    "font:700 60px 'DejaVu Sans',sans-serif;color:#fff"
)
STICKERS = "".join(
    f"<div style='{PILL.format(x=60 + 60 * i, y=360 + 380 * i)}'>#sticker{i}</div>"
    for i in range(4)
)
HEADING = "<h1 style='position:absolute;left:60px;top:80px;font:700 96px sans-serif'>Heading</h1>"
PAGES = {
    "image": (
        "<!doctype html><html><body style='margin:0;width:1080px;height:1920px;"
        f"background:url({PHOTO_URL}) center/cover'>{HEADING}{STICKERS}</body></html>"
    ),
    "overlay": (
        "<!doctype html><html><body style='margin:0;width:1080px;height:1920px;"
        f"background:transparent'>{STICKERS}</body></html>"
    ),
}
Capture = Callable[[], Awaitable[bytes]]


def browser_cpu_seconds(root: int) -> float:
    """CPU of Playwright's driver and its Chromium processes (all of them under `root`)."""
    table = processes()
    return sum(table[pid].cpu_seconds for pid in descendants(root, table) if pid in table)


def pixels(image: bytes) -> bytes:
    return subprocess.run(
        ["ffmpeg", "-v", "error", "-i", "-", "-f", "rawvideo", "-pix_fmt", "rgba", "-"],
        input=image,
        capture_output=True,
        check=True,
        timeout=60,
    ).stdout


def photo() -> bytes:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "photo.jpg"
        subprocess.run(
            ["ffmpeg", "-v", "error", "-f", "lavfi", "-i", "testsrc2=s=1080x1920",
             "-frames:v", "1", "-q:v", "3", str(path)],
            check=True,
            timeout=60,
        )  # fmt: skip
        return path.read_bytes()


async def page_of(browser: Browser, kind: str, background: bytes) -> Page:
    page = await browser.new_page(viewport=VIEWPORT)

    async def serve(route: Route) -> None:
        await route.fulfill(status=200, content_type="image/jpeg", body=background)

    await page.route(PHOTO_URL, serve)
    await page.set_content(PAGES[kind])
    return page


async def sides_of(page: Page, kind: str) -> dict[str, Capture]:
    devtools = await page.context.new_cdp_session(page)
    if kind == "image":
        return {
            "ours": lambda: capture_image(devtools),
            "playwright": lambda: page.screenshot(type="jpeg", quality=JPEG_QUALITY),
        }
    return {
        "ours": lambda: capture_overlay(devtools),
        "playwright": lambda: page.screenshot(type="png", omit_background=True),
    }


async def measure(
    sides: dict[str, Capture], rounds: int, per_round: int
) -> tuple[dict[str, float], dict[str, float], dict[str, int]]:
    """(p50 seconds, CPU seconds per capture, bytes) of each side."""
    root = os.getpid()  # Playwright's driver and its Chromium are this process's descendants
    walls: dict[str, list[float]] = {name: [] for name in sides}
    cpu = dict.fromkeys(sides, 0.0)
    sizes: dict[str, int] = {}
    for _ in range(rounds):
        for name, capture in sides.items():
            for _ in range(per_round):
                before, started = browser_cpu_seconds(root), time.perf_counter()
                sizes[name] = len(await capture())
                walls[name].append(time.perf_counter() - started)
                cpu[name] += browser_cpu_seconds(root) - before
    count = rounds * per_round
    p50 = {name: statistics.median(times) for name, times in walls.items()}
    return p50, {name: total / count for name, total in cpu.items()}, sizes


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--per-round", type=int, default=5)
    args = parser.parse_args()
    background = photo()
    results: list[str] = []
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(
            executable_path=RenderSettings().chromium_path, args=list(BASE_ARGS)
        )
        for kind in PAGES:
            sides = await sides_of(await page_of(browser, kind, background), kind)
            ours, theirs = [pixels(await capture()) for capture in sides.values()]
            assert ours == theirs, f"the two {kind} captures differ"
            p50, cpu, sizes = await measure(sides, args.rounds, args.per_round)
            for name in sides:
                print(
                    f"{kind}, {name}: p50 {p50[name] * 1000:.0f} ms, browser CPU "
                    f"{cpu[name] * 1000:.0f} ms per capture, {sizes[name] // 1024} KiB",
                    flush=True,
                )
            results.append(
                f"{kind}: CPU {cpu['ours'] / cpu['playwright']:.2f}x, "
                f"p50 {p50['ours'] / p50['playwright']:.2f}x, same pixels"
            )
        await browser.close()
    print("RESULT ours vs Playwright's screenshot | " + " | ".join(results))


if __name__ == "__main__":
    asyncio.run(main())

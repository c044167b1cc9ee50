"""A video design's overlay capture: render-svc's against Playwright's, side by side.

One browser (Debian chromium, render-svc's flags and viewport), one page holding a video
design's overlay: stickers drawn over a transparent page. Interleaved rounds, so machine
noise hits both sides alike:
  ours        render_svc.browser.capture.capture_overlay: a PNG from Chromium's fast encoder
  playwright  page.screenshot(type="png", omit_background=True): zlib's default level
Per capture: the wall time (p50) and the CPU of the browser (every Chromium process and
Playwright's driver, from /proc). The
decoded pixels of both are compared too: the encoders are lossless, so they must agree.

The last line: ours against Playwright's, CPU and p50 ratios (lower is better).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import time
from collections.abc import Awaitable, Callable

from playwright.async_api import async_playwright

from render_svc.browser.capture import capture_overlay
from render_svc.browser.memory import descendants, processes
from render_svc.browser.pool import BASE_ARGS, VIEWPORT
from render_svc.config import RenderSettings

PILL = (
    "position:absolute;left:{x}px;top:{y}px;padding:20px 48px;border-radius:40px;"
    "background:linear-gradient(90deg,#FF8A00,#E52E71);box-shadow:0 6px 22px rgba(0,0,0,.18);"
    "font:700 60px 'DejaVu Sans',sans-serif;color:#fff"
)
OVERLAY = (
    "<!doctype html><html><body style='margin:0;width:1080px;height:1920px;"
    "background:transparent'>"
    + "".join(
        f"<div style='{PILL.format(x=60 + 40 * i, y=120 + 210 * i)}'>#sticker{i}</div>"
        for i in range(8)
    )
    + "</body></html>"
)


def browser_cpu_seconds(root: int) -> float:
    """CPU of Playwright's driver and its Chromium processes (all of them under `root`)."""
    table = processes()
    return sum(table[pid].cpu_seconds for pid in descendants(root, table) if pid in table)


def rgba(png: bytes) -> bytes:
    return subprocess.run(
        ["ffmpeg", "-v", "error", "-i", "-", "-f", "rawvideo", "-pix_fmt", "rgba", "-"],
        input=png,
        capture_output=True,
        check=True,
        timeout=60,
    ).stdout


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--per-round", type=int, default=5)
    args = parser.parse_args()
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(
            executable_path=RenderSettings().chromium_path, args=list(BASE_ARGS)
        )
        page = await browser.new_page(viewport=VIEWPORT)
        await page.set_content(OVERLAY)
        devtools = await page.context.new_cdp_session(page)
        driver = os.getpid()  # the driver and its Chromium are this process's descendants

        async def ours() -> bytes:
            return await capture_overlay(devtools)

        async def theirs() -> bytes:
            return await page.screenshot(type="png", omit_background=True)

        sides: dict[str, Callable[[], Awaitable[bytes]]] = {"ours": ours, "playwright": theirs}
        walls: dict[str, list[float]] = {name: [] for name in sides}
        cpu: dict[str, float] = dict.fromkeys(sides, 0.0)
        sizes: dict[str, int] = {}
        pixels = {name: rgba(await capture()) for name, capture in sides.items()}
        assert pixels["ours"] == pixels["playwright"], "the two captures differ"
        for _ in range(args.rounds):
            for name, capture in sides.items():
                for _ in range(args.per_round):
                    before, started = browser_cpu_seconds(driver), time.perf_counter()
                    sizes[name] = len(await capture())
                    walls[name].append(time.perf_counter() - started)
                    cpu[name] += browser_cpu_seconds(driver) - before
        await browser.close()
    count = args.rounds * args.per_round
    for name in sides:
        print(
            f"{name}: p50 {statistics.median(walls[name]) * 1000:.0f} ms, browser CPU "
            f"{cpu[name] / count * 1000:.0f} ms per capture, {sizes[name] // 1024} KiB",
            flush=True,
        )
    print(
        f"RESULT overlay capture, ours vs Playwright's: CPU {cpu['ours'] / cpu['playwright']:.2f}x"
        f" | p50 {statistics.median(walls['ours']) / statistics.median(walls['playwright']):.2f}x"
        " | same pixels"
    )


if __name__ == "__main__":
    asyncio.run(main())

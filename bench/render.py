"""render-svc against bare Playwright and bare ffmpeg, side by side in one run.

Three figures, each measured in interleaved rounds so machine noise hits both sides alike:
  prepare    gRPC Prepare of a typical image design (a background photo from a temp blob, a
             heading, 4 stickers) vs a bare Playwright set_content + JPEG screenshot of the
             same page on one warm page: p50 and p95 ratios, with GAP seconds of idle after
             each pair (the pool's spare is ready: the goal's figure); then the same back
             to back, printed for comparison (each call also pays a renderer process start).
  composite  a 10 s 1080x1920 video design: Finish (composite with the preview, uploads,
             record), called GAP seconds after its Prepare, vs a bare `ffmpeg` overlay of
             the same PNG on the same video.
  memory     render-svc's memory (the service and its Chromium processes, summed PSS; RSS
             summed is printed too) while 4 renders run at once, over many renders: the
             peak, and the growth from the first tenth of the run to the last.
The last line holds the three figures. `--quick` runs fewer rounds (100 renders for memory).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from playwright.async_api import Page, Route, async_playwright

from render_svc.browser.pool import BASE_ARGS
from storypost.render.v1 import render_pb2 as pb
from storypost.render.v1 import render_pb2_grpc
from storypost_cli.stack import EmbeddedStack, StackPorts, health
from storypost_cli.stack.process import ManagedProcess
from storypost_runtime.grpc_client import aio_channel
from storypost_runtime.service_auth import RENDER_SVC, caller_signer

ORG = "bench-org"
# Idle seconds after each (ours, bare) pair in the paced prepare rounds.
GAP = 1.0
PUBLIC_URL = "http://127.0.0.1:9"
CHROMIUM = "/usr/lib/chromium/chromium"
LAYER = (
    "position:absolute;inset:0;display:flex;flex-direction:column;align-items:center;"
    "gap:40px;padding:260px 40px"
)


def typical_design(background: str) -> str:
    return (
        "<!doctype html><html><head><style>"
        "body{margin:0;width:1080px;height:1920px;font-family:sans-serif;color:#fff;"
        f"background:url({background}) center/cover}}"
        "h1{font-size:96px;margin:0;text-shadow:0 4px 16px #000}</style></head><body>"
        f'<photoapp-story><div style="{LAYER}"><h1>Summer sale</h1>'
        '<photoapp-hashtag hashtag="summersale"></photoapp-hashtag>'
        '<photoapp-link url="https://shop.example.com/sale" text="Shop now"></photoapp-link>'
        '<photoapp-countdown title="Sale ends" end-time="2030-07-05T22:00:00Z" color="orange">'
        "</photoapp-countdown>"
        '<photoapp-poll question="Coming?" options=\'["Yes","No"]\' color="purple">'
        "</photoapp-poll></div></photoapp-story></body></html>"
    )


def video_design(src: str) -> str:
    return (
        "<!doctype html><html><body style='margin:0'>"
        f'<photoapp-story src="{src}"><div style="{LAYER}">'
        "<h1 style='font:700 96px sans-serif;color:#fff;margin:0'>Behind the scenes</h1>"
        '<photoapp-hashtag hashtag="bts"></photoapp-hashtag>'
        "</div></photoapp-story></body></html>"
    )


def ffmpeg(*args: str) -> None:
    subprocess.run(["ffmpeg", "-nostdin", "-v", "error", "-y", *args], check=True)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def tree_memory(pid: int) -> tuple[int, int]:
    """(summed PSS, summed RSS) in bytes of a process and all its descendants."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
            children.setdefault(ppid, []).append(int(entry.name))
    pss = rss = 0
    todo = [pid]
    while todo:
        current = todo.pop()
        todo.extend(children.get(current, []))
        try:
            for line in Path(f"/proc/{current}/smaps_rollup").read_text().splitlines():
                if line.startswith("Pss:"):
                    pss += int(line.split()[1]) * 1024
                elif line.startswith("Rss:"):
                    rss += int(line.split()[1]) * 1024
        except OSError:
            continue
    return pss, rss


@dataclass
class Service:
    stub: render_pb2_grpc.RenderServiceAsyncStub
    process: ManagedProcess


async def start_service(stack: EmbeddedStack, work: Path) -> Service:
    port = free_port()
    env = {
        **os.environ,
        **stack.env(),
        "STORYPOST_GRPC_PORT": str(port),
        "STORYPOST_METRICS_PORT": "-1",
        "STORYPOST_PUBLIC_URL": PUBLIC_URL,
        "STORYPOST_RENDER_CONCURRENCY": "4",
        "STORYPOST_SERVICE_KEY": stack.credentials()[RENDER_SVC],
        "STORYPOST_LOG_LEVEL": "info",  # its per-stage timings: stage_medians()
        "PYTHONUNBUFFERED": "1",
    }
    process = ManagedProcess(
        "render-bench", [sys.executable, "-m", "render_svc"], env, work / "render.log"
    )
    await process.start()
    probe = health.grpc_serving(f"127.0.0.1:{port}")
    for _ in range(600):
        if not process.running:
            raise SystemExit(f"render-svc exited:\n{process.log_tail(30)}")
        try:
            await probe()
            break
        except Exception:
            await asyncio.sleep(0.2)
    channel = aio_channel(
        f"127.0.0.1:{port}", 600, caller_signer(stack.env()["STORYPOST_SERVICE_KEY"])
    )
    return Service(render_pb2_grpc.RenderServiceStub(channel), process)


async def upload(service: Service, path: Path, content_type: str) -> str:
    blob = await service.stub.UploadTempBlob(
        pb.UploadTempBlobRequest(
            organization_id=ORG,
            temp_blob_uuid=str(uuid.uuid4()),
            content=await asyncio.to_thread(path.read_bytes),
            content_type=content_type,
            public_app_url=f"{PUBLIC_URL}/o/{ORG}",
        )
    )
    return blob.url


async def prepare(service: Service, html: str) -> pb.Rendering:
    reply = await service.stub.Prepare(
        pb.PrepareRequest(
            organization_id=ORG,
            rendering_id=uuid.uuid4().hex,
            design=pb.Design(html=html),
            purpose=pb.PURPOSE_STORY,
        )
    )
    rendering: pb.Rendering = reply.rendering
    return rendering


async def timed(step: Callable[[], Awaitable[object]]) -> float:
    started = time.perf_counter()
    await step()
    return time.perf_counter() - started


async def bench_prepare(
    service: Service, page: Page, html: str, rounds: int, gap: float
) -> tuple[list[float], list[float]]:
    """`rounds` pairs (ours, then bare), `gap` seconds of idle after each pair."""
    ours: list[float] = []
    bare: list[float] = []

    async def bare_once() -> None:
        await page.set_content(html, wait_until="load")
        await page.screenshot(type="jpeg", quality=90)

    for _ in range(3):  # warm both sides
        await prepare(service, html)
        await bare_once()
        await asyncio.sleep(gap)
    for _ in range(rounds):
        ours.append(await timed(lambda: prepare(service, html)))
        bare.append(await timed(bare_once))
        await asyncio.sleep(gap)
    return ours, bare


def ratios(ours: list[float], bare: list[float]) -> tuple[float, float, str]:
    """p50 and p95 ratios, and a line with the absolute figures."""
    line = (
        f"ours p50 {statistics.median(ours) * 1000:.0f} ms p95 {percentile(ours, 0.95) * 1000:.0f}"
        f" ms; bare p50 {statistics.median(bare) * 1000:.0f} ms p95 "
        f"{percentile(bare, 0.95) * 1000:.0f} ms"
    )
    return (
        statistics.median(ours) / statistics.median(bare),
        percentile(ours, 0.95) / percentile(bare, 0.95),
        line,
    )


def log_entries(log: Path, *messages: str) -> list[dict[str, Any]]:
    """render-svc's JSON log lines with one of these messages."""
    entries = []
    for line in log.read_text(errors="replace").splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if entry.get("message") in messages:
            entries.append(entry)
    return entries


def stage_medians(log: Path) -> str:
    """Median milliseconds of each step of render-svc's "rendered"/"prepared" log lines."""
    stages: dict[str, list[int]] = {}
    for entry in log_entries(log, "rendered", "prepared"):
        if entry.get("media_kind") != "video":
            for name, value in entry.get("milliseconds", {}).items():
                stages.setdefault(name, []).append(int(value))
    return ", ".join(f"{name} {statistics.median(v):.0f}" for name, v in stages.items())


def composite_steps(log: Path) -> str:
    """render-svc's own split of its composites (its "video composited" log lines)."""
    steps: dict[str, list[float]] = {}
    for entry in log_entries(log, "video composited"):
        for name in ("queued_seconds", "composite_seconds", "upload_seconds"):
            steps.setdefault(name.removesuffix("_seconds"), []).append(entry[name])
    return ", ".join(f"{n} {statistics.median(v):.1f} s" for n, v in steps.items())


async def finish(service: Service, rendering: pb.Rendering) -> None:
    request = pb.GetRenderingRequest(organization_id=ORG, rendering_id=rendering.rendering_id)
    current = await service.stub.Finish(
        pb.FinishRequest(organization_id=ORG, rendering_id=rendering.rendering_id)
    )
    while current.state not in (pb.RENDERING_STATE_FINISHED, pb.RENDERING_STATE_FAILED):
        # Polled like a client would (each poll is a gRPC call and a MongoDB read that
        # compete with the composite for the same cores); it rounds ours up by < 0.2 s.
        await asyncio.sleep(0.2)
        current = await service.stub.GetRendering(request)
    if current.state != pb.RENDERING_STATE_FINISHED:
        raise SystemExit(f"composite failed: {current.error_message}")


async def bench_composite(
    service: Service, html: str, source: Path, overlay: Path, work: Path, rounds: int
) -> tuple[list[float], list[float]]:
    ours: list[float] = []
    bare: list[float] = []
    out = work / "bare.mp4"
    argv = [
        "-i", str(source), "-i", str(overlay), "-filter_complex", "[0:v][1:v]overlay=0:0",
        "-c:v", "libx264", "-preset", "veryfast", "-crf", "20", "-c:a", "copy", str(out),
    ]  # fmt: skip
    for _ in range(rounds):
        rendering = await prepare(service, html)
        # Like the bare run, the composite starts on an otherwise idle machine: the pool
        # replaces the Prepare's context first (GAP, as in the paced prepare rounds).
        await asyncio.sleep(GAP)
        started = time.perf_counter()
        await finish(service, rendering)
        ours.append(time.perf_counter() - started)
        bare.append(await timed(lambda: asyncio.to_thread(ffmpeg, *argv)))
    return ours, bare


async def bench_memory(service: Service, html: str, renders: int) -> tuple[int, int, int]:
    """Peak PSS, peak RSS, and PSS growth (last tenth vs first tenth of the run)."""
    pid = service.process.pid
    assert pid is not None
    samples: list[tuple[int, int]] = []
    remaining = renders
    done = asyncio.Event()

    async def worker() -> None:
        nonlocal remaining
        while remaining > 0:
            remaining -= 1
            await prepare(service, html)

    async def sampler() -> None:
        while not done.is_set():
            samples.append(await asyncio.to_thread(tree_memory, pid))
            await asyncio.sleep(0.25)

    sampling = asyncio.create_task(sampler())
    await asyncio.gather(*(worker() for _ in range(4)))
    done.set()
    await sampling
    tenth = max(1, len(samples) // 10)
    first = statistics.median(p for p, _ in samples[:tenth])
    last = statistics.median(p for p, _ in samples[-tenth:])
    return max(p for p, _ in samples), max(r for _, r in samples), int(last - first)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="fewer rounds and renders")
    args = parser.parse_args()
    prepare_rounds, composite_rounds, memory_renders = (20, 1, 100) if args.quick else (60, 3, 500)
    with tempfile.TemporaryDirectory(prefix="render-bench-") as tmp:
        work = Path(tmp)
        photo, video, overlay = work / "photo.jpg", work / "video.mp4", work / "overlay.png"
        ffmpeg(
            "-f", "lavfi", "-i", "testsrc2=s=1080x1920", "-frames:v", "1", "-q:v", "3", str(photo)
        )  # fmt: skip
        ffmpeg(
            "-f", "lavfi", "-i", "testsrc2=s=1080x1920:r=30:d=10",
            "-f", "lavfi", "-i", "sine=f=440:d=10",
            "-c:v", "libx264", "-preset", "ultrafast", "-b:v", "12M", "-pix_fmt", "yuv420p",
            "-c:a", "aac", "-shortest", str(video),
        )  # fmt: skip
        stack = EmbeddedStack(work / "stack", StackPorts.free(), components={"mongo", "nats", "s3"})
        async with stack:
            service = await start_service(stack, work)
            try:
                photo_url = await upload(service, photo, "image/jpeg")
                video_url = await upload(service, video, "video/mp4")
                html = typical_design(photo_url)
                async with async_playwright() as playwright:
                    browser = await playwright.chromium.launch(
                        executable_path=CHROMIUM, args=list(BASE_ARGS)
                    )
                    page = await browser.new_page(viewport={"width": 1080, "height": 1920})
                    photo_bytes = photo.read_bytes()

                    async def serve_photo(route: Route) -> None:
                        await route.fulfill(body=photo_bytes, content_type="image/jpeg")

                    await page.route(photo_url, serve_photo)
                    # Paced: the pool has its spare context ready, as between the calls of a
                    # service that is not saturated (the goal). Back-to-back: every call also
                    # pays the next spare's creation, which competes for the same cores.
                    ours, bare = await bench_prepare(service, page, html, prepare_rounds, GAP)
                    b2b_ours, b2b_bare = await bench_prepare(
                        service, page, html, prepare_rounds, 0.0
                    )
                    await page.set_content(video_design(video_url).replace(video_url, ""))
                    overlay.write_bytes(await page.screenshot(type="png", omit_background=True))
                    await browser.close()
                p50, p95, line = ratios(ours, bare)
                b2b_p50, b2b_p95, b2b_line = ratios(b2b_ours, b2b_bare)
                print(f"prepare, {GAP:g} s between calls: {line}", flush=True)
                print(
                    f"prepare, back to back: {b2b_line} (p50 {b2b_p50:.2f}x, p95 {b2b_p95:.2f}x)",
                    flush=True,
                )
                print(f"prepare stages (median ms): {stage_medians(work / 'render.log')}")
                c_ours, c_bare = await bench_composite(
                    service, video_design(video_url), video, overlay, work, composite_rounds
                )
                composite = statistics.median(c_ours) / statistics.median(c_bare)
                print(
                    f"composite (10 s video): ours {statistics.median(c_ours):.1f} s, bare "
                    f"ffmpeg {statistics.median(c_bare):.1f} s; "
                    f"{composite_steps(work / 'render.log')}",
                    flush=True,
                )
                peak_pss, peak_rss, growth = await bench_memory(service, html, memory_renders)
                mib = 1024 * 1024
                print(
                    f"memory over {memory_renders} renders, 4 at once: peak PSS "
                    f"{peak_pss / mib:.0f} MiB (summed RSS {peak_rss / mib:.0f} MiB), growth "
                    f"{growth / mib:+.0f} MiB",
                    flush=True,
                )
            finally:
                await service.process.stop(20.0)
    print(
        f"RESULT prepare p50 {p50:.2f}x (<= 2) p95 {p95:.2f}x (<= 3) | composite "
        f"{composite:.2f}x (<= 1.3) | render-svc memory peak {peak_pss / mib:.0f} MiB "
        f"(<= 1536) growth {growth / mib:+.0f} MiB over {memory_renders} renders"
    )


if __name__ == "__main__":
    asyncio.run(main())

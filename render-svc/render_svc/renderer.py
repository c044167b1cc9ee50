"""One render: load the page, read its elements, check the video, resolve mentions, capture."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable
from dataclasses import KW_ONLY, dataclass, replace
from pathlib import Path
from typing import Literal

from render_svc.browser.capture import Drawn, PageCapture, PageSession
from render_svc.fair import FairSlots
from render_svc.ffmpeg import MediaToolError, MediaTools
from render_svc.mentions import MentionLookup, resolve_mentions
from render_svc.sources import VideoSources
from render_svc.stickers import PagePlan, Sticker, place_stickers, plan_page
from render_svc.video_rules import DurationBounds, VideoFacts, check
from storypost.render.v1 import render_pb2 as pb
from storypost_runtime.clock import Clock
from storypost_runtime.component import component
from storypost_runtime.errors import InvalidArgument
from storypost_runtime.logs import get_logger

log = get_logger(__name__)

HTML_MAX_CHARS = 10_485_760
URL_MAX_CHARS = 2048
SOURCE_FILE = "source.video"
CHANGED_SRC = (
    "the <photoapp-story> src changed between two loads of the page: a design must name one video"
)
Marks = list[tuple[str, float]]


@dataclass(frozen=True)
class DesignInput:
    """Exactly one of html and url."""

    html: str | None = None
    url: str | None = None

    @classmethod
    def from_proto(cls, design: pb.Design) -> DesignInput:
        which = design.WhichOneof("source")
        if which == "html":
            if not design.html:
                raise InvalidArgument("html must not be empty")
            if len(design.html) > HTML_MAX_CHARS:
                raise InvalidArgument(f"html must be at most {HTML_MAX_CHARS} characters")
            return cls(html=design.html)
        if which == "url":
            url = design.url.strip()
            if not url.lower().startswith(("http://", "https://")) or len(url) > URL_MAX_CHARS:
                raise InvalidArgument(
                    f"url must be an http or https address of at most {URL_MAX_CHARS} characters"
                )
            return cls(url=url)
        raise InvalidArgument("exactly one of url or html must be given")

    def to_proto(self) -> pb.Design:
        return pb.Design(html=self.html) if self.html is not None else pb.Design(url=self.url or "")


@dataclass(frozen=True)
class Capture:
    """What a render produced: the image (JPEG) or the overlay (PNG) and what it found."""

    media_kind: Literal["image", "video"]
    image: bytes
    stickers: list[Sticker]
    warnings: list[str]
    video_src: str | None = None
    video_path: Path | None = None
    duration_seconds: float | None = None


@dataclass(frozen=True)
class _Target:
    """What a load of the page is for: the image of a design without a src, or the
    overlay of a video design with its src."""

    organization_id: str
    now_ms: int
    video: bool
    src: str | None


@dataclass(frozen=True)
class _Drawing:
    """Stickers drawn while the page settled: confirmed when it is captured."""

    drawn: Drawn
    mention_warnings: list[str]


@dataclass(frozen=True)
class _Read:
    """The page's elements as read, whether the page had settled when they were, and the
    stickers when they were drawn while it settled."""

    plan: PagePlan
    settled: bool
    drawing: _Drawing | None = None


async def _both[A, B](first: Awaitable[A], second: Awaitable[B]) -> tuple[A, B]:
    """Both results; when either fails, its error once the other ended too (no step of a
    page is left running under the next one)."""
    a, b = await asyncio.gather(first, second, return_exceptions=True)
    for result in (a, b):
        if isinstance(result, BaseException):
            raise result
    return a, b  # type: ignore[return-value]


@component
class Renderer:
    _: KW_ONLY
    capture: PageCapture
    sources: VideoSources
    tools: MediaTools
    mentions: MentionLookup
    clock: Clock
    source_slots: FairSlots

    async def check_video(self, src: str, bounds: DurationBounds, path: Path) -> VideoFacts:
        """Fetches and probes a source; INVALID_ARGUMENT names every broken rule."""
        await self.sources.fetch(src, path)
        try:
            facts = await self.tools.probe(path)
        except MediaToolError as error:
            raise InvalidArgument(
                f"the <photoapp-story> src is not a video that can be read ({error})"
            ) from None
        check(facts, bounds)
        return facts

    async def render(
        self, organization_id: str, design: DesignInput, bounds: DurationBounds, work: Path
    ) -> Capture:
        now_ms = int(self.clock.now().timestamp() * 1000)
        marks = [("start", time.perf_counter())]
        async with self.capture.open(organization_id) as page:
            marks.append(("lease", time.perf_counter()))
            if bounds.video_required:
                # Nothing is drawn on this lease: the page is read once, when it settled.
                await self._open(page, design, marks)
                read = await self._read_settled(page, marks)
                if not read.plan.video_src:
                    raise InvalidArgument(
                        f"a {bounds.label} needs a video: give <photoapp-story> a src attribute"
                    )
            else:
                # An image design is drawn while it settles: no src, and none needed.
                image = _Target(organization_id, now_ms, video=False, src=None)
                captured = await self._capture_settled(
                    page, image, await self._load(page, design, marks, image), marks
                )
                if isinstance(captured, Capture):
                    return captured
                read = captured
        # A video design: its source is fetched and probed (up to minutes from a slow
        # server) with no browser slot held, then the page is loaded again to be captured.
        # A source slot (the organization's fair share) is held until then: it bounds the
        # sources on disk (deploy/: render-svc's /tmp is sized for as many as render slots).
        src = read.plan.video_src
        assert src is not None  # a settled reading with a src: the only way out to here
        async with self.source_slots.slot(organization_id):
            await asyncio.to_thread(work.mkdir, parents=True, exist_ok=True)
            facts = await self.check_video(src, bounds, work / SOURCE_FILE)
            marks.append(("video", time.perf_counter()))
            async with self.capture.open(organization_id) as page:
                marks.append(("lease", time.perf_counter()))
                overlay = _Target(organization_id, now_ms, video=True, src=src)
                captured = await self._capture_settled(
                    page, overlay, await self._load(page, design, marks, overlay), marks
                )
                if not isinstance(captured, Capture):
                    raise InvalidArgument(CHANGED_SRC)
        return replace(
            captured,
            video_src=src,
            video_path=work / SOURCE_FILE,
            duration_seconds=facts.duration,
        )

    async def _capture_settled(
        self, page: PageSession, target: _Target, read: _Read, marks: Marks
    ) -> Capture | _Read:
        """The page captured for `target` (a reading is taken again on the settled page
        whenever the page changed its elements); or, when the settled page names another
        src than the target's, that reading: the caller decides which way the render goes."""
        while True:
            if read.plan.video_src != target.src and not read.settled:
                # Which way the render goes is decided on the settled page.
                read = await self._read_settled(page, marks)
            if read.plan.video_src != target.src:
                return read
            capture = await self._capture_page(page, target, read, marks)
            if capture is not None:
                return capture
            read = await self._read_settled(page, marks)

    async def _open(self, page: PageSession, design: DesignInput, marks: Marks) -> None:
        await page.load(design.html, design.url)
        marks.append(("load", time.perf_counter()))

    async def _load(
        self, page: PageSession, design: DesignInput, marks: Marks, target: _Target
    ) -> _Read:
        """Loads the page, then reads its elements and draws them (when the page is the
        `target`'s: an image without a src, an overlay with its src) while it settles: the
        settle window (30 ms of no request) would otherwise be waited idle. What was read
        and drawn holds unless the page changes its elements before it settled
        (docs/render.md "Settling")."""
        await self._open(page, design, marks)
        plan = plan_page(await page.collect())
        marks.append(("collect", time.perf_counter()))
        drawing = None
        if plan.video_src == target.src:
            drawing = await self._draw(page, target, plan, watched=True, settling=True)
            marks.append(("draw", time.perf_counter()))
            if drawing is None:
                return await self._read_settled(page, marks)
        await page.settled()
        marks.append(("settle", time.perf_counter()))
        return _Read(plan, settled=False, drawing=drawing)

    async def _read_settled(self, page: PageSession, marks: Marks) -> _Read:
        """The elements of the settled page, as they are now."""
        await page.settled()
        plan = plan_page(await page.collect())
        marks.append(("collect again", time.perf_counter()))
        return _Read(plan, settled=True)

    async def _draw(
        self, page: PageSession, target: _Target, plan: PagePlan, *, watched: bool, settling: bool
    ) -> _Drawing | None:
        """Mentions resolved, stickers drawn and measured; None when the page changed its
        elements since they were read (`watched`)."""
        mention_warnings = await resolve_mentions(
            self.mentions, target.organization_id, plan.mentions
        )
        drawn = await page.draw(
            plan.stickers,
            video=target.video,
            now_ms=target.now_ms,
            watched=watched,
            settling=settling,
        )
        return None if drawn is None else _Drawing(drawn, mention_warnings)

    async def _capture_page(
        self,
        page: PageSession,
        target: _Target,
        read: _Read,
        marks: Marks,
    ) -> Capture | None:
        """The stickers drawn (unless they were while the page settled), the page captured
        (a transparent PNG over a video, else a JPEG); None when the page changed its
        elements since they were read (they are read again)."""
        video = target.video
        plan = read.plan
        if read.drawing is None:
            drawing = await self._draw(page, target, plan, watched=not read.settled, settling=False)
            marks.append(("draw", time.perf_counter()))
            if drawing is None:
                return None
            image = await page.screenshot(transparent=video)
        else:
            # Drawn while the page settled: confirmed (the boxes measured again, now that it
            # settled) beside the capture rather than before it, one round trip less.
            confirmed, image = await _both(
                page.confirm(plan.stickers), page.screenshot(transparent=video)
            )
            if confirmed is None:
                return None
            if confirmed.scrolled:
                image = await page.screenshot(transparent=video)
            drawn = replace(read.drawing.drawn, boxes=confirmed.boxes)
            drawing = replace(read.drawing, drawn=drawn)
        marks.append(("capture", time.perf_counter()))
        drawn, mention_warnings = drawing.drawn, drawing.mention_warnings
        stickers, geometry = place_stickers(plan.stickers, drawn.boxes)
        # A closed shadow root of the page's own is only found when drawing fails.
        kept = [
            f"{p.label} already has a shadow root from the page; it is kept as the page drew it"
            for p in plan.stickers
            if p.index in drawn.failed and not p.page_shadow
        ]
        warnings = [
            *plan.warnings,
            *mention_warnings,
            *kept,
            *geometry,
            *page.network.all_warnings(),
        ]
        log.info(
            "rendered",
            page_render=page.page_render,
            milliseconds={
                name: round((at - marks[i][1]) * 1000) for i, (name, at) in enumerate(marks[1:])
            },
        )
        return Capture("video" if video else "image", image, stickers, warnings)

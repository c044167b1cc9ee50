"""One render: load the page, read its elements, check the video, resolve mentions, capture."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from render_svc.browser.capture import PageCapture
from render_svc.ffmpeg import MediaToolError, MediaTools
from render_svc.mentions import MentionLookup, resolve_mentions
from render_svc.sources import VideoSources
from render_svc.stickers import PagePlan, Sticker, place_stickers, plan_page
from render_svc.video_rules import DurationBounds, VideoFacts, check
from storypost.render.v1 import render_pb2 as pb
from storypost_runtime.clock import Clock
from storypost_runtime.errors import InvalidArgument
from storypost_runtime.logs import get_logger

log = get_logger(__name__)

HTML_MAX_CHARS = 10_485_760
URL_MAX_CHARS = 2048
SOURCE_FILE = "source.video"


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


class Renderer:
    def __init__(
        self,
        capture: PageCapture,
        sources: VideoSources,
        tools: MediaTools,
        mentions: MentionLookup,
        clock: Clock,
    ) -> None:
        self._capture = capture
        self._sources = sources
        self._tools = tools
        self._mentions = mentions
        self._clock = clock

    async def check_video(self, src: str, bounds: DurationBounds, path: Path) -> VideoFacts:
        """Fetches and probes a source; INVALID_ARGUMENT names every broken rule."""
        await self._sources.fetch(src, path)
        try:
            facts = await self._tools.probe(path)
        except MediaToolError as error:
            raise InvalidArgument(
                f"the <photoapp-story> src is not a video that can be read ({error})"
            ) from None
        check(facts, bounds)
        return facts

    async def render(
        self, organization_id: str, design: DesignInput, bounds: DurationBounds, work: Path
    ) -> Capture:
        now_ms = int(self._clock.now().timestamp() * 1000)
        marks = [("start", time.perf_counter())]
        async with self._capture.open() as page:
            marks.append(("lease", time.perf_counter()))
            await page.load(design.html, design.url)
            marks.append(("load", time.perf_counter()))
            plan = plan_page(await page.collect())
            marks.append(("collect", time.perf_counter()))
            if bounds.video_required and not plan.video_src:
                raise InvalidArgument(
                    f"a {bounds.label} needs a video: give <photoapp-story> a src attribute"
                )
            facts, mention_warnings = await self._video_and_mentions(
                organization_id, plan, bounds, work
            )
            video = facts is not None
            marks.append(("video_mentions", time.perf_counter()))
            drawn = await page.draw(plan.stickers, video=video, now_ms=now_ms)
            marks.append(("draw", time.perf_counter()))
            stickers, geometry = place_stickers(plan.stickers, drawn.boxes)
            # A closed shadow root of the page's own is only found when drawing fails.
            kept = [
                f"{p.label} already has a shadow root from the page; it is kept as the page drew it"
                for p in plan.stickers
                if p.index in drawn.failed and not p.page_shadow
            ]
            image = await page.screenshot(transparent=video)
            marks.append(("capture", time.perf_counter()))
            warnings = [
                *plan.warnings,
                *mention_warnings,
                *kept,
                *geometry,
                *page.network.all_warnings(),
            ]
        marks.append(("release", time.perf_counter()))
        log.info(
            "rendered",
            page_render=page.page_render,
            milliseconds={
                name: round((at - marks[i][1]) * 1000) for i, (name, at) in enumerate(marks[1:])
            },
        )
        if facts is None:
            return Capture("image", image, stickers, warnings)
        return Capture(
            "video",
            image,
            stickers,
            warnings,
            video_src=plan.video_src,
            video_path=work / SOURCE_FILE,
            duration_seconds=facts.duration,
        )

    async def _video_and_mentions(
        self, organization_id: str, plan: PagePlan, bounds: DurationBounds, work: Path
    ) -> tuple[VideoFacts | None, list[str]]:
        """The video check and mention resolution run side by side; either may fail the call."""
        try:
            async with asyncio.TaskGroup() as group:
                video = (
                    group.create_task(self.check_video(plan.video_src, bounds, work / SOURCE_FILE))
                    if plan.video_src
                    else None
                )
                mentions = group.create_task(
                    resolve_mentions(self._mentions, organization_id, plan.mentions)
                )
        except BaseExceptionGroup as failed:
            # Callers (and the gRPC layer) expect the domain error itself.
            raise first_error(failed) from None
        return (video.result() if video else None), mentions.result()


def first_error(group: BaseExceptionGroup[BaseException]) -> BaseException:
    error: BaseException = group
    while isinstance(error, BaseExceptionGroup):
        error = error.exceptions[0]
    return error

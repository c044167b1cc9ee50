"""Video sources of `<photoapp-story src>`: copied to a local file under the sandbox rules."""

from __future__ import annotations

import asyncio
from dataclasses import KW_ONLY
from pathlib import Path

import aiohttp

from render_svc.blob_urls import BlobUrlMatcher
from render_svc.blobs import Refused, TempBlobs
from render_svc.netguard import Blocked, GuardedFetcher
from render_svc.sniff import NotAVideo, read_head, video_demuxer
from storypost_runtime.component import component
from storypost_runtime.errors import InvalidArgument

SRC = "the <photoapp-story> src"


@component
class VideoSources:
    """Our own temp blob URLs come from S3; any other URL through the guarded fetcher."""

    _: KW_ONLY
    blobs: TempBlobs
    matcher: BlobUrlMatcher
    fetcher: GuardedFetcher
    max_bytes: int
    timeout_seconds: float

    async def fetch(self, url: str, path: Path) -> str:
        """Writes the source to `path` and returns the one demuxer ffmpeg may read it with;
        INVALID_ARGUMENT says why it could not be had, or why it is no video file (a
        playlist or a list naming other files is refused here, before any tool opens it)."""
        await self._fetch(url, path)
        try:
            return video_demuxer(await asyncio.to_thread(read_head, path))
        except NotAVideo as error:
            raise InvalidArgument(f"{SRC} is not a video that can be read ({error})") from None

    async def _fetch(self, url: str, path: Path) -> None:
        ref = self.matcher.match(url)
        if ref is not None:
            try:
                found = await self.blobs.download_to(ref, path)
            except Refused as error:
                raise InvalidArgument(f"{SRC} cannot be used: {error}") from None
            if not found:
                raise InvalidArgument(
                    f"{SRC} is a temp blob that was not found (unknown, expired or never uploaded)"
                )
            return
        try:
            async with self.fetcher.open("GET", url, seconds=self.timeout_seconds) as response:
                if response.status >= 400:
                    raise InvalidArgument(f"{SRC} answered HTTP {response.status}")
                size = 0
                with path.open("wb") as out:
                    async for chunk in response.content.iter_chunked(1024 * 1024):
                        size += len(chunk)
                        if size > self.max_bytes:
                            raise InvalidArgument(
                                f"{SRC} is larger than {self.max_bytes // (1024 * 1024)} MiB"
                            )
                        out.write(chunk)
        except Blocked as error:
            raise InvalidArgument(f"{SRC} is not allowed: {error}") from None
        except (aiohttp.ClientError, TimeoutError, OSError) as error:
            reason = str(error) or type(error).__name__
            raise InvalidArgument(f"{SRC} could not be fetched: {reason}") from None

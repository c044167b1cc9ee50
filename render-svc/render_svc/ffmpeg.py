"""ffprobe and ffmpeg as async subprocesses: probe a source, composite an overlay, a preview."""

from __future__ import annotations

import asyncio
import contextlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from render_svc.sniff import NotAVideo, read_head, video_demuxer
from render_svc.video_rules import VideoFacts
from storypost_runtime.component import component

PREVIEW_SIZE = "360:640"
# Tenants' files may be playlists or lists naming other files and URLs (HLS, concat, …):
# every input is opened as the local file it is, by the one demuxer its bytes call for.
LOCAL_ONLY = ("-protocol_whitelist", "file")


class MediaToolError(Exception):
    """ffprobe/ffmpeg failed; the message is safe to show (the tool's last error line)."""


@dataclass(frozen=True)
class VideoSettings:
    ffmpeg: str = "ffmpeg"
    ffprobe: str = "ffprobe"
    preset: str = "veryfast"
    crf: int = 20
    max_bitrate: str = "25M"


async def _run(argv: list[str], limit_seconds: float) -> bytes:
    process = await asyncio.create_subprocess_exec(
        *argv,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        async with asyncio.timeout(limit_seconds):
            out, err = await process.communicate()
    except BaseException:
        # Never leave a tool running when its caller gives up (timeout or cancellation).
        with contextlib.suppress(ProcessLookupError):
            process.kill()
        await process.wait()
        raise
    if process.returncode != 0:
        lines = [line for line in err.decode(errors="replace").splitlines() if line.strip()]
        raise MediaToolError(lines[-1] if lines else f"exit code {process.returncode}")
    return out


def _number(value: Any) -> float | None:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if number == number else None


def _rotation(stream: dict[str, Any]) -> int:
    rotate = _number((stream.get("tags") or {}).get("rotate"))
    for side in stream.get("side_data_list") or ():
        if side.get("rotation") is not None:
            rotate = _number(side["rotation"])
    return int(rotate or 0) % 360


def facts_from_probe(probe: dict[str, Any]) -> VideoFacts:
    """The first video stream's codec, display size, bitrate and duration."""
    streams = [s for s in probe.get("streams") or () if s.get("codec_type") == "video"]
    # A cover image attached to an audio file is a "video" stream too; skip those.
    streams = [s for s in streams if not (s.get("disposition") or {}).get("attached_pic")]
    if not streams:
        raise MediaToolError("the source has no video stream")
    video = streams[0]
    fmt = probe.get("format") or {}
    width, height = int(video.get("width") or 0), int(video.get("height") or 0)
    if _rotation(video) in (90, 270):
        width, height = height, width
    bitrate = _number(video.get("bit_rate")) or _number(fmt.get("bit_rate"))
    duration = _number(video.get("duration")) or _number(fmt.get("duration"))
    if bitrate is None and duration and _number(fmt.get("size")):
        bitrate = (_number(fmt.get("size")) or 0) * 8 / duration
    frames, packets = _number(video.get("nb_frames")), _number(video.get("nb_read_packets"))
    return VideoFacts(
        codec=str(video.get("codec_name") or ""),
        width=width,
        height=height,
        bitrate=int(bitrate) if bitrate is not None else None,
        duration=duration,
        frames=int(frames) if frames is not None else None,
        packets=int(packets) if packets is not None else None,
    )


def pinned_input(path: Path, demuxer: str) -> list[str]:
    """`-i path` read only as a local file, only by `demuxer` (and nothing it could name)."""
    return [*LOCAL_ONLY, "-format_whitelist", demuxer, "-f", demuxer, "-i", str(path)]


async def source_demuxer(path: Path) -> str:
    """The demuxer for a video source, from its first bytes; refused before any tool runs."""
    head = await asyncio.to_thread(read_head, path)
    try:
        return video_demuxer(head)
    except NotAVideo as error:
        raise MediaToolError(str(error)) from None


@component
class MediaTools:
    settings: VideoSettings

    async def probe(self, path: Path, limit_seconds: float = 30.0) -> VideoFacts:
        demuxer = await source_demuxer(path)
        out = await _run(
            [
                self.settings.ffprobe,
                "-v", "error",
                "-print_format", "json",
                "-show_format",
                "-show_streams",
                # Reads every packet (no decoding): a file cut short has fewer than announced.
                "-count_packets",
                *pinned_input(path, demuxer),
            ],
            limit_seconds,
        )  # fmt: skip
        try:
            parsed = json.loads(out or b"{}")
        except ValueError as error:
            raise MediaToolError("ffprobe output is not JSON") from error
        return facts_from_probe(parsed)

    def composite_argv(
        self,
        source: Path,
        overlay: Path,
        output: Path,
        preview: Path | None,
        *,
        copy_audio: bool,
        demuxer: str = "mov",
    ) -> list[str]:
        """The overlay over every frame; the preview (first frame, 360x640) in the same pass."""
        # overlay's default yuv420 blending is what a plain overlay does; format=auto would
        # blend in a 4:4:4 format and cost about 40% more.
        graph = "[0:v][1:v]overlay=0:0"
        if preview:
            # trim stops the preview branch after one frame, so it costs one scale only.
            graph += f",split=2[main][first];[first]trim=end_frame=1,scale={PREVIEW_SIZE}[preview]"
        else:
            graph += "[main]"
        argv = [
            self.settings.ffmpeg, "-nostdin", "-y", "-v", "error",
            *pinned_input(source, demuxer),
            # Our own capture: a PNG, read as one.
            *pinned_input(overlay, "png_pipe"),
            "-filter_complex", graph,
            "-map", "[main]", "-map", "0:a?",
            "-c:v", "libx264", "-preset", self.settings.preset, "-crf", str(self.settings.crf),
            "-maxrate", self.settings.max_bitrate, "-bufsize", self.settings.max_bitrate,
            "-profile:v", "high", "-pix_fmt", "yuv420p",
            "-c:a", "copy" if copy_audio else "aac",
            "-movflags", "+faststart",
            str(output),
        ]  # fmt: skip
        if preview:
            argv += ["-map", "[preview]", "-frames:v", "1", "-q:v", "3", str(preview)]
        return argv

    async def has_aac_audio(self, path: Path, demuxer: str) -> bool:
        out = await _run(
            [
                self.settings.ffprobe, "-v", "error", "-select_streams", "a:0",
                "-show_entries", "stream=codec_name", "-of", "csv=p=0",
                *pinned_input(path, demuxer),
            ],
            30.0,
        )  # fmt: skip
        return out.decode().strip() == "aac"

    async def composite(
        self, source: Path, overlay: Path, output: Path, preview: Path, limit_seconds: float
    ) -> None:
        """An h264 MP4 of the source with the transparent overlay on top, plus its preview."""
        demuxer = await source_demuxer(source)
        copy_audio = await self.has_aac_audio(source, demuxer)
        argv = self.composite_argv(
            source, overlay, output, preview, copy_audio=copy_audio, demuxer=demuxer
        )
        await _run(argv, limit_seconds)
        if not await asyncio.to_thread(preview.exists):
            raise MediaToolError("ffmpeg wrote no preview frame")

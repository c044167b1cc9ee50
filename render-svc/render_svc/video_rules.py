"""The spec's video requirements: codec, size, bitrate and the duration bounds per purpose."""

from __future__ import annotations

import math
from dataclasses import dataclass

from storypost.render.v1 import render_pb2 as pb
from storypost_runtime.errors import InvalidArgument

REQUIRED_CODEC = "h264"
REQUIRED_WIDTH = 1080
REQUIRED_HEIGHT = 1920
MAX_BITRATE = 30_000_000


@dataclass(frozen=True)
class DurationBounds:
    """Inclusive bounds in seconds; `label` names the kind of post in messages."""

    minimum: float
    maximum: float | None
    label: str
    # Reels have no image form: a design without a video is refused.
    video_required: bool = False


@dataclass(frozen=True)
class VideoFacts:
    """What ffprobe says about a source (display size: rotation already applied)."""

    codec: str
    width: int
    height: int
    bitrate: int | None
    duration: float | None
    # Frames the container's index announces, and video packets actually in the file (None
    # when unknown): fewer packets than frames is a file cut short.
    frames: int | None = None
    packets: int | None = None


def bounds_for(purpose: int, min_seconds: float = 0.0, max_seconds: float = 0.0) -> DurationBounds:
    """The duration bounds of a purpose; social posts bring their post type's own."""
    if purpose == pb.PURPOSE_STORY:
        return DurationBounds(0.5, 60.0, "story")
    if purpose == pb.PURPOSE_REEL:
        return DurationBounds(0.5, 180.0, "reel", video_required=True)
    if purpose == pb.PURPOSE_DRAFT:
        return DurationBounds(0.0, 60.0, "draft")
    if purpose == pb.PURPOSE_CLIPAPP:
        return DurationBounds(0.0, 600.0, "clipapp post")
    if purpose == pb.PURPOSE_SOCIAL:
        if not (math.isfinite(min_seconds) and math.isfinite(max_seconds)):
            raise InvalidArgument("min_duration_seconds and max_duration_seconds must be finite")
        if min_seconds < 0 or max_seconds < 0:
            raise InvalidArgument("duration bounds must not be negative")
        if max_seconds and max_seconds < min_seconds:
            raise InvalidArgument("max_duration_seconds must not be below min_duration_seconds")
        return DurationBounds(min_seconds, max_seconds or None, "post of this type")
    raise InvalidArgument("purpose must be set (story, reel, draft, clipapp or social)")


def _seconds(value: float) -> str:
    return f"{value:.2f}".rstrip("0").rstrip(".") + " s"


def violations(facts: VideoFacts, bounds: DurationBounds) -> list[str]:
    """Every rule the video breaks, as sentences for the caller (empty when it is fine)."""
    found: list[str] = []
    if facts.codec != REQUIRED_CODEC:
        found.append(f"the video codec must be h264, but this video is {facts.codec or 'unknown'}")
    if (facts.width, facts.height) != (REQUIRED_WIDTH, REQUIRED_HEIGHT):
        found.append(
            f"the video must be {REQUIRED_WIDTH}x{REQUIRED_HEIGHT} pixels (9:16 portrait), "
            f"but this video is {facts.width}x{facts.height}"
        )
    if facts.bitrate is not None and facts.bitrate > MAX_BITRATE:
        found.append(
            f"the video bitrate must be at most 30 Mbps, but this video has "
            f"{facts.bitrate / 1_000_000:.1f} Mbps"
        )
    if facts.frames and facts.packets is not None and facts.packets < facts.frames:
        found.append(
            f"the video file is truncated: it has {facts.packets} of the {facts.frames} "
            "frames its header announces"
        )
    duration = facts.duration
    if duration is None or not math.isfinite(duration):
        found.append("the video duration cannot be read")
    elif bounds.maximum is not None and duration > bounds.maximum:
        found.append(
            f"the video is too long: {_seconds(duration)}; a {bounds.label} video may be at "
            f"most {_seconds(bounds.maximum)}"
        )
    elif duration < bounds.minimum or duration <= 0:
        least = f"at least {_seconds(bounds.minimum)}" if bounds.minimum else "longer than 0 s"
        found.append(
            f"the video is too short: {_seconds(duration)}; a {bounds.label} video must be {least}"
        )
    return found


def check(facts: VideoFacts, bounds: DurationBounds) -> None:
    """Raises INVALID_ARGUMENT naming every broken rule."""
    broken = violations(facts, bounds)
    if broken:
        raise InvalidArgument("video does not meet the requirements: " + "; ".join(broken))

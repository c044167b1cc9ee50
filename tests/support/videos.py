"""Synthetic test videos (ffmpeg's lavfi sources), fast to make."""

from __future__ import annotations

import subprocess
from pathlib import Path


def make_video(
    path: Path,
    *,
    codec: str = "libx264",
    size: str = "1080x1920",
    seconds: float = 2.0,
    fps: int = 30,
    source: str = "testsrc2",
    extra: tuple[str, ...] = (),
    audio: bool = False,
) -> Path:
    """A synthetic test video (ffmpeg's lavfi sources), fast to make."""
    argv = [
        "ffmpeg",
        "-v",
        "error",
        "-y",
        "-f",
        "lavfi",
        "-i",
        f"{source}=s={size}:r={fps}:d={seconds}",
    ]
    if audio:
        argv += ["-f", "lavfi", "-i", f"sine=f=440:d={seconds}", "-c:a", "aac", "-shortest"]
    argv += ["-c:v", codec]
    if codec == "libx264":
        argv += ["-preset", "ultrafast", "-pix_fmt", "yuv420p"]
    argv += [*extra, str(path)]
    subprocess.run(argv, check=True, timeout=120)
    return path

"""Helpers of the render tests: image decoding and comparison (test videos are
tests/support/videos.py, the page server tests/support/pages.py)."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

# Reference images are kept at half size: enough to see every detail of a sticker.
REF_WIDTH, REF_HEIGHT = 540, 960


def probe(data: bytes) -> dict[str, str]:
    """Codec, size and duration of an image or video given as bytes."""
    out = subprocess.run(
        [
            "ffprobe", "-v", "error", "-select_streams", "v:0",
            "-show_entries", "stream=codec_name,width,height:format=duration",
            "-of", "default=noprint_wrappers=1", "-",
        ],
        input=data,
        capture_output=True,
        check=True,
        timeout=60,
    ).stdout.decode()  # fmt: skip
    return dict(line.split("=", 1) for line in out.splitlines() if "=" in line)


def decode_rgb(
    data: bytes, width: int = REF_WIDTH, height: int = REF_HEIGHT, pix_fmt: str = "rgb24"
) -> bytes:
    """An image (JPEG or PNG bytes) as raw RGB (or another `pix_fmt`) at the given size."""
    return subprocess.run(
        [
            "ffmpeg", "-v", "error", "-i", "-", "-vf", f"scale={width}:{height}:flags=area",
            "-f", "rawvideo", "-pix_fmt", pix_fmt, "-",
        ],
        input=data,
        capture_output=True,
        check=True,
        timeout=60,
    ).stdout  # fmt: skip


def write_png(rgb: bytes, path: Path, width: int = REF_WIDTH, height: int = REF_HEIGHT) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [
            "ffmpeg", "-v", "error", "-y", "-f", "rawvideo", "-pix_fmt", "rgb24",
            "-s", f"{width}x{height}", "-i", "-", "-compression_level", "9", str(path),
        ],
        input=rgb,
        check=True,
        timeout=60,
    )  # fmt: skip


@dataclass(frozen=True)
class Difference:
    mean: float  # mean absolute difference per channel value (0-255)
    strong: float  # share of channel values that differ by more than 48

    def __str__(self) -> str:
        return f"mean difference {self.mean:.2f}, strongly different {self.strong:.2%}"


def difference(a: bytes, b: bytes) -> Difference:
    assert len(a) == len(b), "images of different sizes"
    total = 0
    strong = 0
    for x, y in zip(a, b, strict=True):
        d = x - y if x > y else y - x
        total += d
        if d > 48:
            strong += 1
    return Difference(total / len(a), strong / len(a))


def mean_color(rgb: bytes) -> tuple[float, float, float]:
    n = len(rgb) // 3
    return (sum(rgb[0::3]) / n, sum(rgb[1::3]) / n, sum(rgb[2::3]) / n)

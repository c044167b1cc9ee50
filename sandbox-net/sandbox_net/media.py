"""Downloads media URLs like a platform would, measuring size, type and video duration."""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

MAX_BYTES = 300 * 1024 * 1024
CHUNK = 1024 * 1024


@dataclass(frozen=True)
class MediaInfo:
    url: str
    bytes: int = 0
    content_type: str = ""
    duration_seconds: float | None = None
    # Why the download failed; None when it worked.
    error: str | None = None

    def to_json(self) -> dict[str, object]:
        data: dict[str, object] = {
            "url": self.url,
            "bytes": self.bytes,
            "contentType": self.content_type,
        }
        if self.duration_seconds is not None:
            data["durationSeconds"] = self.duration_seconds
        if self.error:
            data["error"] = self.error
        return data


def fetch_media(url: str, *, video: bool, timeout: float = 30.0) -> MediaInfo:
    """GETs the URL (following redirects); for videos also asks ffprobe for the duration."""
    if not url.startswith(("http://", "https://")):
        return MediaInfo(url, error="the media URL must be http or https")
    request = urllib.request.Request(url, headers={"User-Agent": "storypost-sandbox/1"})  # noqa: S310 - http(s) checked above
    with tempfile.TemporaryDirectory(prefix="sandbox-media-") as tmp:
        target = Path(tmp) / "media"
        try:
            # The scheme is checked above: only http(s) is opened.
            opened = urllib.request.urlopen(request, timeout=timeout)  # noqa: S310
            with opened as answer, target.open("wb") as out:
                content_type = answer.headers.get_content_type()
                size = 0
                while chunk := answer.read(CHUNK):
                    size += len(chunk)
                    if size > MAX_BYTES:
                        return MediaInfo(url, size, content_type, error="the media is too large")
                    out.write(chunk)
        except urllib.error.HTTPError as error:
            return MediaInfo(url, error=f"the media URL answered HTTP {error.code}")
        except (urllib.error.URLError, OSError, ValueError) as error:
            return MediaInfo(url, error=f"the media could not be downloaded: {error}")
        if size == 0:
            return MediaInfo(url, 0, content_type, error="the media is empty")
        duration = probe_duration(target) if video else None
        return MediaInfo(url, size, content_type, duration)


def probe_duration(path: Path) -> float | None:
    """Duration in seconds by ffprobe, or None when ffprobe is missing or cannot tell."""
    ffprobe = shutil.which("ffprobe")
    if ffprobe is None:
        return None
    try:
        done = subprocess.run(
            [ffprobe, "-v", "error", "-show_entries", "format=duration", "-of", "json", str(path)],
            capture_output=True,
            timeout=30,
            check=False,
        )
        value = json.loads(done.stdout or b"{}").get("format", {}).get("duration")
        return round(float(value), 3) if value is not None else None
    except (subprocess.SubprocessError, ValueError, OSError):
        return None

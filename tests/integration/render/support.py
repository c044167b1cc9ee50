"""Helpers of the render tests: test videos, image decoding and comparison, a page server."""

from __future__ import annotations

import base64
import contextlib
import http.server
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

# Reference images are kept at half size: enough to see every detail of a sticker.
REF_WIDTH, REF_HEIGHT = 540, 960


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


def decode_rgb(data: bytes, width: int = REF_WIDTH, height: int = REF_HEIGHT) -> bytes:
    """An image (JPEG or PNG bytes) as raw RGB at the given size."""
    return subprocess.run(
        [
            "ffmpeg", "-v", "error", "-i", "-", "-vf", f"scale={width}:{height}:flags=area",
            "-f", "rawvideo", "-pix_fmt", "rgb24", "-",
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


# A 1x1 PNG: what an <img> of a page asks for and keeps in its renderer's memory cache.
PIXEL_PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
)


@dataclass
class PageServer:
    """Serves test pages and files on 127.0.0.1; remembers every path asked for."""

    pages: dict[str, bytes] = field(default_factory=dict)
    files: dict[str, Path] = field(default_factory=dict)
    hits: list[str] = field(default_factory=list)
    stop: threading.Event = field(default_factory=threading.Event)
    port: int = 0

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def count(self, path: str) -> int:
        """How many requests asked for this path (whatever their query)."""
        return sum(1 for hit in list(self.hits) if urlsplit(hit).path == path)

    def page(self, name: str, html: str) -> str:
        self.pages[f"/page/{name}"] = html.encode()
        return self.url(f"/page/{name}")


def _handler(server: PageServer) -> type[http.server.BaseHTTPRequestHandler]:
    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: object) -> None:
            return None

        def _send(self, status: int, body: bytes, content_type: str, **headers: str) -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            for name, value in headers.items():
                self.send_header(name.replace("_", "-"), value)
            self.end_headers()
            # The render may give up on a request (the slow endpoint): that is the point.
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                self.wfile.write(body)

        def do_GET(self) -> None:
            server.hits.append(self.path)
            parts = urlsplit(self.path)
            if parts.path in server.pages:
                self._send(200, server.pages[parts.path], "text/html; charset=utf-8")
            elif parts.path in server.files:
                data = server.files[parts.path].read_bytes()
                self._send(200, data, "video/mp4" if parts.path.endswith(".mp4") else "image/png")
            elif parts.path == "/redirect":
                target = parse_qs(parts.query)["to"][0]
                self._send(302, b"", "text/plain", Location=target)
            elif parts.path == "/slow":
                # Never answers within a render's settle time.
                server.stop.wait(30)
                self._send(200, b"late", "text/plain")
            elif parts.path == "/hold":
                # Holds a page's load event (an <img>) while it works: until the page's next
                # /report arrives (renders run one after another), at most 20 s.
                reported = server.count("/report")
                deadline = time.monotonic() + 20
                while server.count("/report") == reported and time.monotonic() < deadline:
                    if server.stop.wait(0.05):
                        break
                self._send(200, b"held", "text/plain", Access_Control_Allow_Origin="*")
            elif parts.path == "/cacheable":
                image = parts.query == "image"
                self._send(
                    200,
                    PIXEL_PNG if image else b"cacheable",
                    "image/png" if image else "text/plain",
                    Cache_Control="public, max-age=3600, immutable",
                    Access_Control_Allow_Origin="*",
                )
            elif parts.path == "/missing":
                self._send(404, b"not here", "text/plain")
            else:
                self._send(200, b"ok", "text/plain", Access_Control_Allow_Origin="*")

    return Handler


@contextlib.contextmanager
def running_page_server() -> Iterator[PageServer]:
    """A PageServer on a free loopback port, stopped when the block ends."""
    server = PageServer()
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _handler(server))
    httpd.daemon_threads = True
    server.port = httpd.server_address[1]
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        yield server
    finally:
        server.stop.set()
        httpd.shutdown()
        httpd.server_close()


def wait_for(check: Callable[[], bool], seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.1)

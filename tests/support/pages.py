"""A page server on loopback: serves test pages and files (and a few endpoints that redirect,
stall or hold a page's load) and remembers every path asked for. The render tests serve their
pages from it; the canary (tests/conftest.py) is one that no stack may ever reach."""

from __future__ import annotations

import base64
import contextlib
import http.server
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

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
            # The render may give up on a request (a long /wait): that is the point.
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
            elif parts.path == "/wait":
                # Answers after ?ms= milliseconds: keeps a page loading after its load event,
                # or, with 30000, never within a render's settle time.
                server.stop.wait(int(parse_qs(parts.query)["ms"][0]) / 1000)
                self._send(200, b"waited", "text/plain", Access_Control_Allow_Origin="*")
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

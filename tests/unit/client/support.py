"""A scripted HTTP server on loopback for the SDK and CLI tests (no test cases of its own).

It answers each request with the next scripted `Reply` (or what a function returns) and
records every request with its arrival time, so tests check attempts, delays and bodies.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

ORG_PATH = "/o/org-1/api/v1"


@dataclass(frozen=True)
class Reply:
    status: int = 200
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    # Seconds to wait before answering (to make the client's read timeout expire).
    delay: float = 0.0
    # Sent as is instead of JSON `body` when set.
    raw: bytes | None = None


@dataclass(frozen=True)
class Seen:
    at: float
    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


Script = list[Reply] | Callable[[Seen], Reply]


class ScriptedServer:
    """Answers from a script; `seen` lists every request in arrival order."""

    def __init__(self, script: Script) -> None:
        self.seen: list[Seen] = []
        self._script = script
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    @property
    def base_url(self) -> str:
        return self.url + ORG_PATH

    def paths(self) -> list[str]:
        return [seen.path for seen in self.seen]

    def gaps(self) -> list[float]:
        """Seconds between consecutive requests."""
        return [b.at - a.at for a, b in zip(self.seen, self.seen[1:], strict=False)]

    def _next(self, seen: Seen) -> Reply:
        with self._lock:
            self.seen.append(seen)
            if callable(self._script):
                return self._script(seen)
            if not self._script:
                return Reply(500, {"errorMessage": "the test script ran out of replies"})
            return self._script.pop(0)

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _answer(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                seen = Seen(
                    time.monotonic(), self.command, self.path, dict(self.headers.items()), body
                )
                reply = server._next(seen)
                if reply.delay:
                    time.sleep(reply.delay)
                payload = reply.raw if reply.raw is not None else json.dumps(reply.body).encode()
                try:
                    self.send_response(reply.status)
                    content_type = "text/html" if reply.raw is not None else "application/json"
                    self.send_header("Content-Type", content_type)
                    self.send_header("Content-Length", str(len(payload)))
                    for name, value in reply.headers.items():
                        self.send_header(name, value)
                    self.end_headers()
                    self.wfile.write(payload)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (a read timeout test)

            do_POST = do_PUT = do_GET = _answer

            def log_message(self, format: str, *args: Any) -> None:
                pass

        return Handler

    def __enter__(self) -> ScriptedServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(5)


@contextmanager
def scripted(script: Script) -> Iterator[ScriptedServer]:
    with ScriptedServer(script) as server:
        yield server


def closed_port_url() -> str:
    """A loopback URL nothing listens on (connection refused at once)."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), BaseHTTPRequestHandler)
    host, port = server.server_address[:2]
    server.server_close()
    return f"http://{host!s}:{port}"


# The token every CLI test logs in with.
TOKEN = "sp_cli-test-token"


def logged_in(config: Path, server: ScriptedServer) -> None:
    """A login of `server` in the CLI's config file (as `storypost login` writes it)."""
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(json.dumps({"baseUrl": server.base_url, "token": TOKEN}))
    config.chmod(0o600)

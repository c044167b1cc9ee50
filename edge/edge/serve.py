"""Serves the edge with cheroot and stops it gracefully on SIGTERM.

SIGTERM: /readyz turns 503 at once (load balancers stop sending); after the drain time the
listener closes and idle keep-alive connections are closed; requests in flight get the grace
time to finish (also those whose body is still arriving, and answers still being sent); then
the process exits 0. A request still inside the app past the grace time (waiting on a gRPC
call) is waited for until that call returns: the calls' deadlines bound it (the render
procedures' 110 s), which Kubernetes' grace period covers (deploy/k8s/base/edge.yaml).

Why cheroot and not waitress: waitress's loop looks at every open connection on each event
(`poll()` over all of them, and `readable()`/`writable()` asked of each channel in Python), so
its CPU per request grows with the idle keep-alive connections a client pool or an ingress
holds: 0.75 ms a request with 10 open connections, 2.0 ms with 400, for the same bare route
(docs/edge.md). Under load that is a spiral: slower answers make clients open more
connections, which make every answer slower. cheroot keeps idle connections in an epoll
selector and hands a connection to a worker thread only when it has bytes to read: its cost
per request stays flat (0.78 ms at 10 and at 400).

What that changes: a worker thread reads the request (headers and body) itself, so a client
sending slowly holds a thread until `_IDLE_SECONDS` pass without a byte. In production the
ingress buffers whole request bodies before passing them on (deploy/k8s/examples/ingress.yaml),
so the edge's threads only ever read from the ingress.
"""

from __future__ import annotations

import logging
import select
import signal
import tempfile
import threading
import time
from types import FrameType
from typing import Any

from cheroot import wsgi
from cheroot.errors import MaxSizeExceeded
from waitress.proxy_headers import proxy_headers_middleware

from edge.config import EdgeSettings
from storypost_runtime.logs import get_logger

log = get_logger(__name__)
# How long a connection may stay silent: idle between keep-alive requests, or in the middle
# of a request's headers or body.
_IDLE_SECONDS = 180
# Connections the kernel queues before the edge accepts them.
_LISTEN_BACKLOG = 1024
# A chunked body past this size is spooled to a temporary file instead of memory.
_SPOOL_BYTES = 1 << 20
_READ_BYTES = 1 << 16


def whole_bodies(app: Any, max_bytes: int) -> Any:
    """The app, given every chunked body whole, with its CONTENT_LENGTH.

    The edge's readers (Falcon's `bounded_stream`) read a body by its length, as waitress
    (which de-chunked every body before the app saw it) always gave one; cheroot passes a
    chunked body as a stream without a length. It is read here first, at most `max_bytes` + 1
    bytes: a longer body reaches the app with that length, which the app refuses with the
    spec's 413."""

    def wsgi(environ: dict[str, Any], start_response: Any) -> Any:
        chunked = "chunked" in environ.get("HTTP_TRANSFER_ENCODING", "").lower()
        if not chunked or environ.get("CONTENT_LENGTH"):
            return app(environ, start_response)
        body = tempfile.SpooledTemporaryFile(max_size=_SPOOL_BYTES)  # noqa: SIM115 (closed below)
        try:
            stream, left = environ["wsgi.input"], max_bytes + 1
            try:
                while left > 0 and (part := stream.read(min(left, _READ_BYTES))):
                    body.write(part)
                    left -= len(part)
                length = body.tell()
            except (OSError, MaxSizeExceeded):
                # cheroot refuses a chunk that would cross its own limit (limit + 1) before
                # reading it: the body is longer than the app takes, and the app says so.
                length = max_bytes + 1
            environ["CONTENT_LENGTH"] = str(length)
            body.seek(0)
            environ["wsgi.input"] = body
            # The app has read what it wanted once it returns: the answer is built.
            return app(environ, start_response)
        finally:
            body.close()

    return wsgi


def behind_proxy(app: Any, settings: EdgeSettings) -> Any:
    """The app, with X-Forwarded-For/-Proto believed only from the trusted proxy (the ingress):
    from anyone else they are dropped, so a caller cannot choose the address its sign-in
    limit sees. waitress's middleware, the same rules the edge had when waitress served it."""
    return proxy_headers_middleware(
        app,
        trusted_proxy=settings.edge_trusted_proxy or None,
        trusted_proxy_count=settings.edge_trusted_proxy_count,
        trusted_proxy_headers={"x-forwarded-for", "x-forwarded-proto"},
        clear_untrusted=True,
    )


class _Server(wsgi.Server):
    def process_conn(self, conn: Any) -> None:
        """cheroot hands a new connection to a worker thread at once, and the thread then waits
        for its first request: a few dozen connections that send nothing would hold every
        thread. One with nothing to read yet waits in the selector instead, as idle
        keep-alive connections do, and reaches a thread once its bytes arrive."""
        if conn.rfile.has_data() or _readable(conn.socket):
            super().process_conn(conn)
        else:
            self.put_conn(conn)


def _readable(sock: Any) -> bool:
    poller = select.poll()  # not select(): it cannot watch descriptors above 1023
    poller.register(sock.fileno(), select.POLLIN)
    return bool(poller.poll(0))


def create_server(app: Any, settings: EdgeSettings) -> wsgi.Server:
    """The edge's server, bound to its port (`bind_addr` holds the real one) but not serving
    yet: `serve()` runs it, `stop()` stops it gracefully."""
    server = _Server(
        (settings.edge_host, settings.edge_port),
        behind_proxy(whole_bodies(app, settings.max_body_bytes), settings),
        numthreads=settings.edge_threads,
        max=settings.edge_threads,
        request_queue_size=_LISTEN_BACKLOG,
        timeout=_IDLE_SECONDS,
    )
    # After stop(): how long the worker threads get to finish the requests they hold.
    server.shutdown_timeout = settings.shutdown_grace_seconds
    # Past this cheroot refuses a body itself (its own 413, no JSON). One byte over the app's
    # limit, so that the app sees a body of limit + 1 and answers the spec's 413 for it.
    server.max_request_body_size = settings.max_body_bytes + 1
    # Idle keep-alive connections kept open (past it an answer closes its connection).
    server.keep_alive_conn_limit = settings.edge_connection_limit
    server.version = "storypost"
    server.error_log = _error_log  # type: ignore[method-assign]
    server.prepare()
    return server


def _error_log(msg: str = "", level: int = logging.INFO, traceback: bool = False) -> None:
    """cheroot's messages (a malformed request, a socket error) as the edge's JSON log lines."""
    log.log(level, "http server", detail=msg, exc_info=traceback)


def serve(app: Any, settings: EdgeSettings, draining: threading.Event) -> None:
    server = create_server(app, settings)

    def shut_down() -> None:
        time.sleep(settings.shutdown_drain_seconds)
        # Closes the listener and the idle connections, then gives the worker threads the
        # grace time to finish the requests they hold. A thread still reading or writing
        # after it has its socket shut (its read fails at once); one still inside the app
        # (a gRPC call) is waited for until the call returns, within the call's own deadline.
        server.stop()
        log.info("drained")

    stopper = threading.Thread(target=shut_down, name="edge-shutdown", daemon=True)

    def on_signal(signum: int, _frame: FrameType | None) -> None:
        if draining.is_set():
            return
        draining.set()
        log.info("stopping", signal=signum)
        stopper.start()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    log.info("serving", host=settings.edge_host, port=server.bind_addr[1])
    server.serve()
    # serve() returns as soon as stop() begins; the requests in flight end in stop().
    if stopper.is_alive():
        stopper.join()
    log.info("stopped")

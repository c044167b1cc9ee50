"""Serves the edge with waitress and stops it gracefully on SIGTERM.

SIGTERM: /readyz turns 503 at once (load balancers stop sending); after the drain time the
listener closes and idle keep-alive connections are closed as they become idle; requests in
flight get the grace time to finish (also those whose body is still arriving, and answers
still being sent); then the process exits 0.

Sockets are closed only in the loop's own thread (through waitress's trigger): closing one
from another thread while the loop sits in select() on it fails with EBADF.
"""

from __future__ import annotations

import contextlib
import signal
import threading
import time
from types import FrameType
from typing import Any

import waitress
from waitress import wasyncore

from edge.config import EdgeSettings
from edge.middleware import InFlight
from storypost_runtime.logs import get_logger

log = get_logger(__name__)
_POLL_SECONDS = 0.05


def _busy(channel: Any) -> bool:
    """A connection with a request being received, being answered or an answer unsent."""
    return bool(channel.request is not None or channel.requests or channel.total_outbufs_len)


def create_server(app: Any, settings: EdgeSettings) -> Any:
    """The waitress server of the edge (not yet running)."""
    return waitress.create_server(  # type: ignore[attr-defined]
        app,
        host=settings.edge_host,
        port=settings.edge_port,
        threads=settings.edge_threads,
        # waitress's default of 100 counts idle keep-alive connections: a client pool holding
        # 100 of them left every new connection waiting in the kernel until an idle one timed
        # out (channel_timeout), which callers saw as 130 s timeouts under load.
        connection_limit=settings.edge_connection_limit,
        # poll(), not select(): select() cannot watch file descriptors above 1023.
        asyncore_use_poll=True,
        # Large enough for upload-temp-blob's 30 MB inline body.
        max_request_body_size=settings.max_body_bytes,
        channel_timeout=180,
        # Forwarded headers count only from the trusted proxy (the ingress); from anyone else
        # they are dropped, so a caller cannot choose the address its sign-in limit sees.
        clear_untrusted_proxy_headers=True,
        **_proxy_settings(settings),
        ident="storypost",
    )


def _proxy_settings(settings: EdgeSettings) -> dict[str, Any]:
    if not settings.edge_trusted_proxy:
        return {}
    return {
        "trusted_proxy": settings.edge_trusted_proxy,
        "trusted_proxy_count": settings.edge_trusted_proxy_count,
        "trusted_proxy_headers": {"x-forwarded-for", "x-forwarded-proto"},
    }


def serve(app: Any, settings: EdgeSettings, draining: threading.Event, in_flight: InFlight) -> None:
    server = create_server(app, settings)

    def in_loop(action: Any) -> None:
        """Runs `action` in the thread of server.run() (the trigger wakes its select)."""
        with contextlib.suppress(OSError):
            server.trigger.pull_trigger(action)

    def idle() -> bool:
        """Nothing in flight; idle keep-alive connections are told to close (a client that
        would reuse one reconnects, to another replica)."""
        busy = False
        for channel in list(server.active_channels.values()):
            if _busy(channel):
                busy = True
            elif not channel.will_close:
                channel.will_close = True
                with contextlib.suppress(OSError):
                    server.pull_trigger()
        return in_flight.wait_idle(0) and not busy

    def shut_down() -> None:
        time.sleep(settings.shutdown_drain_seconds)
        # The listening socket only: waitress's trigger must keep waking the loop.
        in_loop(lambda: wasyncore.dispatcher.close(server))
        deadline = time.monotonic() + settings.shutdown_grace_seconds
        while not idle() and time.monotonic() < deadline:
            time.sleep(_POLL_SECONDS)
        log.info("drained", idle=idle())
        # Let the last answers flush, then close every socket: server.run() returns once
        # its map is empty.
        time.sleep(0.2)
        in_loop(lambda: wasyncore.close_all(server._map))

    def on_signal(signum: int, _frame: FrameType | None) -> None:
        if draining.is_set():
            return
        draining.set()
        log.info("stopping", signal=signum)
        threading.Thread(target=shut_down, name="edge-shutdown", daemon=True).start()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    log.info("serving", host=settings.edge_host, port=server.effective_port)
    server.run()
    server.task_dispatcher.shutdown()
    log.info("stopped")

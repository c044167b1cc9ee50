"""Starts the sandbox network: `python -m sandbox_net` (waitress; SIGTERM stops it cleanly)."""

from __future__ import annotations

import contextlib
import signal
import threading
from types import FrameType
from typing import Any

import waitress
from prometheus_client import CollectorRegistry

from sandbox_net.app import create_sandbox
from sandbox_net.config import SandboxProcessSettings, SandboxSettings
from storypost_runtime.logs import configure_logging, get_logger
from storypost_runtime.metrics import serve_metrics
from storypost_runtime.settings import load_settings

log = get_logger("sandbox_net")


class _Stop(Exception):
    """Raised by the SIGTERM/SIGINT handler to leave the server loop."""


def main() -> None:
    settings = load_settings(SandboxSettings)
    process = load_settings(SandboxProcessSettings)
    configure_logging("sandbox-net", process.log_level)
    registry = CollectorRegistry()
    sandbox = create_sandbox(settings, registry)
    serve_metrics(registry, process.metrics_host, process.metrics_port)
    server: Any = waitress.create_server(  # type: ignore[attr-defined]
        sandbox.app,
        host=settings.host,
        port=settings.port,
        threads=settings.threads,
        ident="sandbox",
    )
    stopping = threading.Event()
    saver = threading.Thread(
        target=sandbox.store.run_saver, args=(stopping,), name="state-saver", daemon=True
    )
    saver.start()

    def on_signal(signum: int, _frame: FrameType | None) -> None:
        # Runs in the main thread between two steps of the server loop: leaving the loop
        # here and closing the server below never races with the loop's select().
        if not stopping.is_set():
            stopping.set()
            log.info("stopping", signal=signum)
            raise _Stop

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    log.info(
        "serving", host=settings.host, port=server.effective_port, data_dir=str(settings.data_dir)
    )
    with contextlib.suppress(_Stop):
        server.run()
    server.close()
    sandbox.processor.close()
    sandbox.store.save()
    log.info("stopped")


if __name__ == "__main__":
    main()

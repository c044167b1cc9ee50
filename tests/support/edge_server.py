"""The edge's HTTP server (edge/serve.py) serving a test's own Falcon app on a free port."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import falcon

from edge.config import EdgeSettings
from edge.serve import create_server


def serving(app: falcon.App, settings: EdgeSettings) -> Iterator[str]:
    """Yields the server's base URL (`http://127.0.0.1:PORT`) while it serves; stops it after."""
    server = create_server(app, settings)
    thread = threading.Thread(target=server.serve, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.bind_addr[1]}"
    finally:
        server.stop()
        thread.join(5)

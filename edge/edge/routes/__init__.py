"""Routes beyond the procedures (app pages, connect links, temp blob downloads)."""

from __future__ import annotations

import falcon

from edge import web
from edge.backends import Backends
from edge.config import EdgeSettings
from edge.routes import blobs, connect


def add_routes(app: falcon.App, backends: Backends, settings: EdgeSettings) -> None:
    # Each area adds its routes here as its issue lands.
    connect.add_routes(app, backends, settings)
    blobs.add_routes(app, backends, settings)
    web.add_routes(app, backends, settings)

"""Routes beyond the procedures: connect links and temp blob downloads (the app's pages are
a package of their own, `edge.web`, mounted by `python -m edge`)."""

from __future__ import annotations

import falcon

from edge.backends import Backends
from edge.config import EdgeSettings
from edge.routes import blobs, connect


def add_routes(app: falcon.App, backends: Backends, settings: EdgeSettings) -> None:
    connect.add_routes(app, backends, settings)
    blobs.add_routes(app, backends, settings)

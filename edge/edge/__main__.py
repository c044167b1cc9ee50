"""Starts the edge: `python -m edge`."""

from __future__ import annotations

import threading

from prometheus_client import CollectorRegistry

from edge import web
from edge.app import EdgeDependencies, create_app
from edge.auth import Authenticator, revocation_feed
from edge.backends import Backends
from edge.catalog import build_catalog
from edge.config import EdgeSettings
from edge.procedures import all_handlers
from edge.serve import serve
from storypost_runtime.logs import configure_logging
from storypost_runtime.metrics import serve_metrics
from storypost_runtime.settings import load_settings
from storypost_runtime.tracing import configure_tracing


def main() -> None:
    settings = load_settings(EdgeSettings)
    configure_logging("edge", settings.log_level)
    # Before the channels are made: they are instrumented only when tracing is on.
    traces = configure_tracing("edge")
    registry = CollectorRegistry()
    catalog = build_catalog()
    backends = Backends.connect(settings)
    authenticator = Authenticator(
        accounts=backends.account_stub, cache_seconds=settings.auth_cache_seconds
    )
    deps = EdgeDependencies(
        backends=backends,
        authenticator=authenticator,
        catalog=catalog,
        handlers=all_handlers(catalog.names(), backends, settings),
        registry=registry,
        draining=threading.Event(),
        mounts=(web.add_routes,),
    )
    serve_metrics(registry, settings.metrics_host, settings.metrics_port)
    feed = revocation_feed(authenticator)
    if feed is not None:
        feed.start()
    serve(create_app(settings, deps), settings, deps.draining)
    if feed is not None:
        feed.stop()
    backends.close()
    if traces is not None:
        traces.shutdown()  # exports the spans still batched


if __name__ == "__main__":
    main()

"""The edge's Falcon application: routes, error answers, middleware."""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import falcon
from prometheus_client import CollectorRegistry

from edge.auth import Authenticator
from edge.backends import Backends
from edge.catalog import Catalog
from edge.config import EdgeSettings
from edge.errors import INTERNAL_ERROR, ApiError
from edge.mcp import mcp_resource
from edge.middleware import AccessLog, EdgeMetrics, RequestScopeApp
from edge.procedures.base import Handler
from edge.rate_limit import RateLimitGate
from edge.resources import (
    CatalogResource,
    Liveness,
    OpenApiResource,
    ProcedureResource,
    Readiness,
)
from edge.routes import add_routes
from storypost_runtime.logs import get_logger

log = get_logger(__name__)


# What mounts more pages on the edge: the app (`edge.web.add_routes`), which the API edge
# does not import; `python -m edge` mounts it.
Mount = Callable[[falcon.App, Backends, EdgeSettings], None]


@dataclass(frozen=True)
class EdgeDependencies:
    backends: Backends
    authenticator: Authenticator
    catalog: Catalog
    handlers: Mapping[str, Handler]
    registry: CollectorRegistry
    draining: threading.Event
    mounts: Sequence[Mount] = ()


def _api_error(req: falcon.Request, resp: falcon.Response, error: ApiError, _params: Any) -> None:
    resp.status = error.status
    resp.set_headers(error.headers)
    resp.media = error.body


def _http_error(
    req: falcon.Request, resp: falcon.Response, error: falcon.HTTPError, _p: Any
) -> None:
    """Falcon's own errors (no route, wrong method) as JSON with errorMessage."""
    resp.status = error.status
    if error.headers:
        resp.set_headers(error.headers)
    if error.status_code == 404:
        message = f"no such endpoint: {req.method} {req.path}"
    elif error.status_code == 405:
        message = f"method {req.method} not allowed; procedures are called with POST"
    else:
        message = error.title or "bad request"
        if error.description:
            message = f"{message}: {error.description}"
    resp.media = {"errorMessage": message}


def _unexpected(req: falcon.Request, resp: falcon.Response, error: Exception, _p: Any) -> None:
    """No stack trace ever reaches a caller: it goes to the log with the request id."""
    log.exception("unhandled error", path=req.path)
    resp.status = 500
    resp.media = {"errorMessage": INTERNAL_ERROR}


def create_app(settings: EdgeSettings, deps: EdgeDependencies) -> RequestScopeApp:
    accounts = deps.backends.account_stub
    app = falcon.App(middleware=[AccessLog(EdgeMetrics.create(deps.registry))], cors_enable=False)
    app.req_options.strip_url_path_trailing_slash = True
    app.add_error_handler(Exception, _unexpected)
    app.add_error_handler(falcon.HTTPError, _http_error)
    app.add_error_handler(ApiError, _api_error)
    procedures = ProcedureResource(
        settings=settings,
        catalog=deps.catalog,
        handlers=deps.handlers,
        authenticator=deps.authenticator,
        rate_limit=RateLimitGate(accounts),
    )
    app.add_route("/o/{organization_id}/api/v1/{procedure}", procedures)
    # The MCP server (docs/mcp.md): a tool per procedure, each call on the API's path.
    app.add_route(
        "/o/{organization_id}/mcp", mcp_resource(procedures, deps.catalog.to_catalog_json())
    )
    app.add_route("/api/v1/catalog.json", CatalogResource(deps.catalog))
    app.add_route("/api/v1/openapi.json", OpenApiResource(deps.catalog, settings.public_url))
    app.add_route("/healthz", Liveness())
    app.add_route("/readyz", Readiness(deps.draining))
    add_routes(app, deps.backends, settings)
    for mount in deps.mounts:
        mount(app, deps.backends, settings)
    return RequestScopeApp(app)

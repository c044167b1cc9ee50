"""Builds the sandbox network's Falcon app: every platform, the admin endpoints, metrics."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import falcon
from prometheus_client import CollectorRegistry, Counter

from sandbox_net import admin, clipapp, insights, oauth, photoapp, social
from sandbox_net.config import SandboxSettings
from sandbox_net.errors import PlatformHttpError, handle_platform_error
from sandbox_net.gate import Gate, LateAnswers
from sandbox_net.holds import Holds
from sandbox_net.identity import PLATFORMS
from sandbox_net.processing import Processor
from sandbox_net.state import RuntimeConfig, Store
from sandbox_net.tokens import TokenSigner
from storypost_runtime.component import component
from storypost_runtime.logs import get_logger

log = get_logger(__name__)


@component
class RequestMetrics:
    """Counts answers by platform (first path segment) and status."""

    registry: CollectorRegistry
    _requests: Counter = field(init=False)

    def __post_init__(self) -> None:
        self._requests = Counter(
            "storypost_sandbox_requests",
            "Sandbox network requests, by platform and HTTP status",
            ["platform", "status"],
            registry=self.registry,
        )

    def process_response(
        self, req: falcon.Request, resp: falcon.Response, resource: Any, succeeded: bool
    ) -> None:
        segment = req.path.strip("/").split("/", 1)[0]
        platform = segment if segment in PLATFORMS else "_sandbox"
        self._requests.labels(platform, str(resp.status_code)).inc()


def _unexpected(req: falcon.Request, resp: falcon.Response, error: Exception, _p: Any) -> None:
    log.exception("unhandled error", path=req.path)
    resp.status = 500
    resp.media = {"error": {"code": "internal_error", "message": "internal error"}}


def _http_error(
    req: falcon.Request, resp: falcon.Response, error: falcon.HTTPError, _p: Any
) -> None:
    code = "not_found" if error.status_code == 404 else "invalid_request"
    message = (
        f"no such endpoint: {req.method} {req.path}"
        if error.status_code in (404, 405)
        else (error.title or "bad request")
    )
    resp.status = error.status
    if error.headers:
        resp.set_headers(error.headers)
    resp.media = {"error": {"code": code, "message": message}}


@dataclass(frozen=True)
class Sandbox:
    app: falcon.App
    store: Store
    processor: Processor
    holds: Holds


def create_sandbox(settings: SandboxSettings, registry: CollectorRegistry | None = None) -> Sandbox:
    store = Store(RuntimeConfig.from_settings(settings), settings.data_dir)
    store.load()
    gate = Gate(store=store, signer=TokenSigner(settings.secret.get_secret_value()))
    processor = Processor(store)
    holds = Holds()
    middleware: list[Any] = [LateAnswers(holds)]
    if registry is not None:
        middleware.append(RequestMetrics(registry))
    app = falcon.App(middleware=middleware, cors_enable=False)
    app.req_options.strip_url_path_trailing_slash = True
    app.add_error_handler(Exception, _unexpected)
    app.add_error_handler(falcon.HTTPError, _http_error)
    app.add_error_handler(PlatformHttpError, handle_platform_error)
    for platform in PLATFORMS:
        app.add_route(f"/{platform}/oauth/authorize", oauth.Authorize(gate, platform))
        app.add_route(f"/{platform}/oauth/token", oauth.Token(gate, platform))
    photoapp.add_routes(app, gate, processor)
    clipapp.add_routes(app, gate, processor)
    social.add_routes(app, gate)
    insights.add_routes(app, gate)
    admin.add_routes(app, store, holds)
    return Sandbox(app, store, processor, holds)

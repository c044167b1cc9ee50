"""Falcon resources: the procedure endpoint, the catalog documents and health."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import KW_ONLY
from typing import Any

import falcon
import grpc

from edge.auth import Authenticator, Caller
from edge.body import read_json_object
from edge.catalog import Catalog, Procedure
from edge.config import EdgeSettings
from edge.errors import ApiError, api_error_from_rpc
from edge.procedures.base import CallContext, Handler
from edge.rate_limit import RateLimitGate
from edge.validation import validate_params, validation_body
from storypost_runtime.component import component


def check_render_input(params: Mapping[str, Any]) -> None:
    given = [key for key in ("url", "html") if key in params]
    if len(given) != 1:
        raise ApiError(
            400,
            "exactly one of url or html must be given"
            + (" (both were)" if len(given) == 2 else " (neither was)"),
        )


@component
class ProcedureResource:
    """POST /o/{organization_id}/api/v1/{procedure}: auth, rate limit, validation, handler."""

    _: KW_ONLY
    settings: EdgeSettings
    catalog: Catalog
    handlers: Mapping[str, Handler]
    authenticator: Authenticator
    rate_limit: RateLimitGate

    def on_post(
        self, req: falcon.Request, resp: falcon.Response, organization_id: str, procedure: str
    ) -> None:
        req.context.procedure = procedure
        caller = self.admit(req, resp, organization_id)
        proc = self.procedure(procedure)
        params = read_json_object(req, self.settings.max_body_bytes)
        resp.media = self.dispatch(proc, self.call_context(req, organization_id, caller), params)

    def admit(self, req: falcon.Request, resp: falcon.Response, organization_id: str) -> Caller:
        """The request's caller (401 unless its bearer token is of `organization_id`), and
        one request taken from the organization's bucket: its RateLimit-* headers go on the
        answer (429 when it is empty). Every route of the API admits its requests here."""
        caller = self.authenticator.authenticate(req.get_header("Authorization"), organization_id)
        req.context.organization_id = organization_id
        resp.set_headers(self.rate_limit.consume(organization_id))
        return caller

    def procedure(self, name: str) -> Procedure:
        proc = self.catalog.get(name)
        if proc is None:
            raise ApiError(404, f"unknown procedure: {name}")
        return proc

    def call_context(
        self, req: falcon.Request, organization_id: str, caller: Caller
    ) -> CallContext:
        return CallContext(
            organization_id=organization_id,
            credential_id=caller.credential_id,
            request_id=req.context.request_id,
            base_url=self.settings.base_url(organization_id),
            app_url=self.settings.app_url(organization_id),
        )

    def dispatch(self, proc: Procedure, ctx: CallContext, params: Mapping[str, Any]) -> Any:
        """An admitted call of `proc`: JSON Schema validation, then its handler. Raises the
        ApiError of an error answer."""
        explanation = validate_params(proc, params)
        if explanation is not None:
            raise ApiError(400, "invalid params", body=validation_body(proc, explanation))
        if proc.render_input:
            check_render_input(params)
        return self._call(proc, ctx, params)

    def _call(self, proc: Procedure, ctx: CallContext, params: Mapping[str, Any]) -> Any:
        try:
            return self.handlers[proc.name](ctx, params)
        except grpc.RpcError as error:
            raise api_error_from_rpc(
                error, validation_body=lambda explanation: validation_body(proc, explanation)
            ) from None


class CatalogResource:
    def __init__(self, catalog: Catalog) -> None:
        self._document = catalog.to_catalog_json()

    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        resp.media = self._document


class OpenApiResource:
    def __init__(self, catalog: Catalog, public_url: str) -> None:
        self._document = catalog.to_openapi(public_url)

    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        resp.media = self._document


class Liveness:
    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        resp.media = {"status": "ok"}


@component
class Readiness:
    """Ready until SIGTERM starts the drain: the edge's own state only.

    A backend that is down does not make the edge unready: every edge pod would leave its
    Service at once and callers would get connection errors instead of the per-call 503 with
    Retry-After that the spec promises (and that the backend's own alerts report).
    """

    draining: threading.Event

    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        if self.draining.is_set():
            raise ApiError(503, "shutting down")
        resp.media = {"status": "ready"}

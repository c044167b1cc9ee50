"""Platform-style error answers: one exception, three body shapes (see docs/sandbox-net.md)."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

import falcon


class PlatformHttpError(Exception):
    """An error answer of a sandbox platform: HTTP status, a string code and a message."""

    def __init__(
        self,
        status: int,
        code: str,
        message: str,
        *,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.headers = dict(headers or {})


def error_body(path: str, error: PlatformHttpError) -> dict[str, Any]:
    """OAuth token endpoint: RFC 6749; clipapp: its `{data, error}` envelope; else `{error}`."""
    if path.endswith("/oauth/token"):
        return {"error": error.code, "error_description": error.message}
    if path.startswith("/clipapp/"):
        return {
            "data": {},
            "error": {"code": error.code, "message": error.message, "log_id": uuid.uuid4().hex},
        }
    return {
        "error": {
            "code": error.code,
            "message": error.message,
            "is_transient": error.status in (429, 503),
        }
    }


def handle_platform_error(
    req: falcon.Request, resp: falcon.Response, error: PlatformHttpError, _params: Any
) -> None:
    resp.status = error.status
    resp.set_headers(error.headers)
    resp.media = error_body(req.path, error)


def bad_request(message: str) -> PlatformHttpError:
    return PlatformHttpError(400, "invalid_request", message)


def not_found(message: str) -> PlatformHttpError:
    return PlatformHttpError(404, "not_found", message)

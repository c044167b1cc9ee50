"""HTTP errors of the API: one exception, one gRPC-to-HTTP table, JSON bodies always."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import grpc

from storypost_runtime.status import ErrorDetails, details_from, retry_after_header

# The one table from gRPC status to HTTP status (../shared/DESIGN.md "Errors").
HTTP_STATUS_FOR_CODE: Mapping[grpc.StatusCode, int] = {
    grpc.StatusCode.INVALID_ARGUMENT: 400,
    grpc.StatusCode.FAILED_PRECONDITION: 400,
    grpc.StatusCode.NOT_FOUND: 400,
    grpc.StatusCode.ALREADY_EXISTS: 400,
    grpc.StatusCode.OUT_OF_RANGE: 400,
    grpc.StatusCode.UNAUTHENTICATED: 401,
    grpc.StatusCode.PERMISSION_DENIED: 401,
    grpc.StatusCode.RESOURCE_EXHAUSTED: 429,
    grpc.StatusCode.UNAVAILABLE: 503,
    # Our own call ran past its deadline: the dependency is slow or down.
    grpc.StatusCode.DEADLINE_EXCEEDED: 503,
}
NOT_AUTHENTICATED = "not authenticated"
SERVICE_UNAVAILABLE = "a service is temporarily unavailable; retry with the same request"
INTERNAL_ERROR = "internal server error"


class ApiError(Exception):
    """An answer other than success: status, JSON body (always with errorMessage), headers."""

    def __init__(
        self,
        status: int,
        message: str,
        *,
        body: Mapping[str, Any] | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.body: dict[str, Any] = dict(body) if body is not None else {"errorMessage": message}
        self.headers = dict(headers or {})


def unauthenticated() -> ApiError:
    return ApiError(401, NOT_AUTHENTICATED)


def unavailable() -> ApiError:
    return ApiError(503, SERVICE_UNAVAILABLE, headers={"Retry-After": "2"})


def api_error_from_rpc(error: grpc.RpcError, *, validation_body: Any = None) -> ApiError:
    """Maps a failed backend call; `validation_body(explanation)` builds the spec's 400 body."""
    details = details_from(error)
    status = HTTP_STATUS_FOR_CODE.get(details.code, 500)
    if status == 401:
        return unauthenticated()
    if status == 503:
        return unavailable()
    if status == 500:
        return ApiError(500, INTERNAL_ERROR)
    headers: dict[str, str] = {}
    retry_after = retry_after_header(details.retry_after_seconds)
    if retry_after:
        headers["Retry-After"] = retry_after
    if details.field_violations and validation_body is not None:
        return ApiError(400, details.message, body=validation_body(details.field_violations))
    return ApiError(status, details.message, body=_body(details), headers=headers)


def _body(details: ErrorDetails) -> dict[str, Any]:
    body: dict[str, Any] = {"errorMessage": details.message or INTERNAL_ERROR}
    if details.reason:
        body["errorCode"] = details.reason
    return body

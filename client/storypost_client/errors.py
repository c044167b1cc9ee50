"""The exceptions of the SDK: one per kind of failure a caller handles differently."""

from __future__ import annotations

import email.utils
from collections.abc import Mapping
from datetime import datetime, timezone
from typing import Any


class StorypostError(Exception):
    """Base class of every error the SDK raises."""


class ApiError(StorypostError):
    """The API answered with an error status; `error_message` is its `errorMessage`."""

    def __init__(
        self,
        *,
        procedure: str,
        status: int,
        body: Mapping[str, Any],
        headers: Mapping[str, str] | None = None,
        attempts: int = 1,
    ) -> None:
        self.procedure = procedure
        self.status = status
        self.body: dict[str, Any] = dict(body)
        message = body.get("errorMessage")
        self.error_message: str = message if isinstance(message, str) else f"HTTP {status}"
        code = body.get("errorCode")
        # Machine-readable reason (`RATE_LIMITED`, `QUOTA_EXCEEDED`, …) when the API sent one.
        self.error_code: str | None = code if isinstance(code, str) else None
        self.headers: dict[str, str] = dict(headers or {})
        self.request_id: str | None = _header(self.headers, "x-request-id")
        self.retry_after: float | None = parse_retry_after(_header(self.headers, "retry-after"))
        # How many HTTP requests were made before giving up (retries included).
        self.attempts = attempts
        super().__init__(f"{procedure}: {self.error_message} (HTTP {status})")


class BadRequestError(ApiError):
    """HTTP 400: invalid params or an expected error; the request must change before a retry."""

    @property
    def validation_error_explanation(self) -> dict[str, list[str]] | None:
        """Offending key → explanations, for the spec's validation error body; else None."""
        explanation = self.body.get("validationErrorExplanation")
        if not isinstance(explanation, dict):
            return None
        return {str(key): [str(item) for item in value] for key, value in explanation.items()}

    @property
    def params_json_schema(self) -> dict[str, Any] | None:
        """The procedure's input schema, sent with validation errors."""
        schema = self.body.get("paramsJsonSchema")
        return schema if isinstance(schema, dict) else None


class AuthenticationError(ApiError):
    """HTTP 401: the token is missing, wrong, revoked or of another organization."""


class NotFoundError(ApiError):
    """HTTP 404: the base URL or the procedure name is wrong."""


class PayloadTooLargeError(ApiError):
    """HTTP 413: the request body is too large."""


class RateLimitedError(ApiError):
    """HTTP 429: rate limit, busy servers or busy accounts; `retry_after` says when to retry."""


class ServerError(ApiError):
    """HTTP 500, 501 or another unexpected 5xx answer."""


class UnavailableError(ApiError):
    """HTTP 502, 503 or 504: a service is temporarily unavailable (a deploy, an outage)."""


class ApiConnectionError(StorypostError):
    """No HTTP answer: the connection failed or broke (after the retries the policy allows)."""

    def __init__(self, procedure: str, message: str, *, attempts: int = 1) -> None:
        self.procedure = procedure
        self.attempts = attempts
        super().__init__(f"{procedure}: {message}")


class ApiTimeoutError(ApiConnectionError):
    """No answer within the read timeout; retrying with the same UUID is safe."""


class WaitTimeoutError(StorypostError):
    """A `wait_for_*` helper gave up before the resource reached a final state."""

    def __init__(
        self, kind: str, uuid: str, last: Mapping[str, Any] | None, seconds: float
    ) -> None:
        self.kind = kind
        self.uuid = uuid
        # The last status answer seen, if any.
        self.last: dict[str, Any] | None = dict(last) if last is not None else None
        status = self.last.get("status") if self.last else None
        super().__init__(
            f"{kind} {uuid} is still {status or 'unknown'} after {seconds:g} s of waiting"
        )


class UploadError(StorypostError):
    """The media store refused the upload of a temp blob (or the file changed meanwhile)."""

    def __init__(self, message: str, *, status: int | None = None) -> None:
        self.status = status
        super().__init__(message)


_ERROR_FOR_STATUS: dict[int, type[ApiError]] = {
    400: BadRequestError,
    401: AuthenticationError,
    404: NotFoundError,
    413: PayloadTooLargeError,
    429: RateLimitedError,
    502: UnavailableError,
    503: UnavailableError,
    504: UnavailableError,
}


def error_for_status(status: int) -> type[ApiError]:
    """The exception class of an error answer with this HTTP status."""
    if status in _ERROR_FOR_STATUS:
        return _ERROR_FOR_STATUS[status]
    if status >= 500:
        return ServerError
    # Another 4xx (405, 415, …): a request the caller has to change, like a 400.
    return BadRequestError


def parse_retry_after(value: str | None) -> float | None:
    """Seconds from a `Retry-After` header (delta-seconds or an HTTP date); None if absent."""
    if value is None:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return max(0.0, (when - datetime.now(timezone.utc)).total_seconds())


def _header(headers: Mapping[str, str], name: str) -> str | None:
    for key, value in headers.items():
        if key.lower() == name:
            return value
    return None

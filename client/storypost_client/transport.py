"""What the sync and async clients share: request building, answer decoding, retry decisions."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

import httpx

from storypost_client.errors import (
    ApiConnectionError,
    ApiError,
    ApiTimeoutError,
    ServerError,
    StorypostError,
    UploadError,
    error_for_status,
)
from storypost_client.generated.procedures import PROCEDURES
from storypost_client.procedure import ProcedureInfo, unknown_procedure
from storypost_client.retry import RetryPolicy
from storypost_client.version import __version__

USER_AGENT = f"storypost-client-python/{__version__}"
DEFAULT_CONNECT_TIMEOUT = 10.0

# Called before each retry with the attempt that failed (1-based), the wait in seconds and
# the error; the CLI uses it to say what it is doing.
RetryHook = Callable[[int, float, StorypostError], None]

# Transport failures that got no answer and are worth another attempt. Local protocol errors
# and bad URLs are the caller's bugs: retrying cannot help.
TRANSIENT_TRANSPORT_ERRORS: tuple[type[Exception], ...] = (
    httpx.TimeoutException,
    httpx.NetworkError,
    httpx.RemoteProtocolError,
)
# What one attempt of a call may raise that the retry policy decides on: an error answer
# (decoded into a StorypostError) or a transient transport failure.
ATTEMPT_ERRORS: tuple[type[Exception], ...] = (StorypostError, *TRANSIENT_TRANSPORT_ERRORS)


def new_uuid() -> str:
    """A client-chosen identifier: a random (version 4) UUID, lowercase."""
    return str(uuid.uuid4())


def iso_date(value: str | datetime) -> str:
    """A `date` for the API: strings pass as they are; datetimes must be timezone-aware."""
    if isinstance(value, str):
        return value
    if value.tzinfo is None or value.utcoffset() is None:
        raise ValueError("a date needs a timezone, e.g. datetime.now(timezone.utc)")
    text = value.astimezone(timezone.utc).isoformat(
        timespec="milliseconds" if value.microsecond else "seconds"
    )
    return text.replace("+00:00", "Z")


def body_of(**fields: Any) -> dict[str, Any]:
    """A request body from keyword arguments; None means "not given" and is left out."""
    return {key: value for key, value in fields.items() if value is not None}


def procedure_info(name: str) -> ProcedureInfo:
    return PROCEDURES.get(name) or unknown_procedure(name)


@dataclass(frozen=True)
class Request:
    """One call of a procedure, built once: every attempt sends exactly the same request."""

    procedure: str
    info: ProcedureInfo
    url: str
    content: bytes
    headers: dict[str, str]
    timeout: httpx.Timeout


@dataclass(frozen=True)
class Endpoint:
    """Where and as whom the client calls."""

    base_url: str
    # Kept out of repr(): a logged client must not leak its token.
    token: str = field(repr=False)
    connect_timeout: float = DEFAULT_CONNECT_TIMEOUT
    user_agent: str = USER_AGENT

    def __post_init__(self) -> None:
        if not self.base_url.startswith(("http://", "https://")):
            raise ValueError("base_url must be an http:// or https:// URL ending in /api/v1")
        if not self.token:
            raise ValueError("an API token is required")
        object.__setattr__(self, "base_url", self.base_url.rstrip("/"))

    def url(self, procedure: str) -> str:
        return f"{self.base_url}/{procedure}"

    def headers(self, request_id: str | None = None) -> dict[str, str]:
        headers = {
            "Authorization": f"Bearer {self.token}",
            "Content-Type": "application/json",
            "Accept": "application/json",
            "User-Agent": self.user_agent,
        }
        if request_id:
            headers["X-Request-Id"] = request_id
        return headers

    def timeout(self, info: ProcedureInfo, override: float | None) -> httpx.Timeout:
        seconds = override if override is not None else info.client_timeout_seconds
        return httpx.Timeout(seconds, connect=min(self.connect_timeout, seconds))

    def request(self, procedure: str, body: Mapping[str, Any], timeout: float | None) -> Request:
        """The call of `procedure` with `body`; `timeout` overrides the procedure's."""
        info = procedure_info(procedure)
        return Request(
            procedure=procedure,
            info=info,
            url=self.url(procedure),
            content=encode_body(body),
            headers=self.headers(),
            timeout=self.timeout(info, timeout),
        )


def encode_body(body: Mapping[str, Any]) -> bytes:
    """The JSON body, encoded once so every attempt sends exactly the same bytes."""
    return json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode()


def decode_answer(procedure: str, response: httpx.Response, attempts: int) -> dict[str, Any]:
    """The success body, or the ApiError the answer stands for."""
    body = _json_object(response)
    if 200 <= response.status_code < 300:
        if body is None:
            raise ServerError(
                procedure=procedure,
                status=response.status_code,
                body={"errorMessage": "the answer is not a JSON object"},
                headers=dict(response.headers),
                attempts=attempts,
            )
        return body
    if body is None or not isinstance(body.get("errorMessage"), str):
        # A proxy's HTML page or an empty body: keep a short excerpt as the message.
        excerpt = response.text.strip()[:200] if response.content else ""
        body = {**(body or {}), "errorMessage": excerpt or f"HTTP {response.status_code}"}
    raise error_for_status(response.status_code)(
        procedure=procedure,
        status=response.status_code,
        body=body,
        headers=dict(response.headers),
        attempts=attempts,
    )


def connection_error(procedure: str, error: Exception, attempts: int) -> ApiConnectionError:
    if isinstance(error, httpx.TimeoutException):
        return ApiTimeoutError(procedure, f"no answer in time ({error!r})", attempts=attempts)
    return ApiConnectionError(procedure, f"connection failed ({error!r})", attempts=attempts)


def retry_delay(
    policy: RetryPolicy, info: ProcedureInfo, attempt: int, error: StorypostError
) -> float | None:
    """Seconds to wait before attempt `attempt + 1`, or None when `error` is final."""
    if not info.idempotent or attempt >= policy.max_attempts:
        return None
    if isinstance(error, ApiError):
        if error.status not in policy.statuses:
            return None
        return policy.delay(attempt, error.retry_after)
    if isinstance(error, ApiConnectionError) and policy.retry_connection_errors:
        return policy.delay(attempt)
    return None


def upload_refused(response: httpx.Response) -> UploadError:
    """The error for a presigned PUT the media store answered with an error status."""
    excerpt = response.text.strip()[:300]
    detail = f": {excerpt}" if excerpt else ""
    return UploadError(
        f"the media store refused the upload: HTTP {response.status_code}{detail}",
        status=response.status_code,
    )


def env_credentials(env: Mapping[str, str]) -> tuple[str, str]:
    """Base URL and token from STORYPOST_BASE_URL and STORYPOST_API_TOKEN."""
    base_url, token = env.get("STORYPOST_BASE_URL"), env.get("STORYPOST_API_TOKEN")
    if not base_url or not token:
        raise ValueError("set STORYPOST_BASE_URL and STORYPOST_API_TOKEN")
    return base_url, token


def _json_object(response: httpx.Response) -> dict[str, Any] | None:
    try:
        value = response.json()
    except ValueError:
        return None
    return value if isinstance(value, dict) else None

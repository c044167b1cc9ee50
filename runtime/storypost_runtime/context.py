"""The request id: made at the edge, carried in gRPC metadata and NATS headers, bound into logs."""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar

import structlog

from storypost_runtime.tracing import mark_request_id

REQUEST_ID_HEADER = "X-Request-Id"
# gRPC metadata keys must be lower-case.
REQUEST_ID_METADATA_KEY = "x-request-id"
_VALID = re.compile(r"^[A-Za-z0-9._:-]{1,128}$")

_request_id: ContextVar[str | None] = ContextVar("storypost_request_id", default=None)


def new_request_id() -> str:
    return uuid.uuid4().hex


def clean_request_id(value: str | None) -> str:
    """Keeps a caller's request id when it is short and plain, else makes a new one."""
    if value and _VALID.match(value):
        return value
    return new_request_id()


def current_request_id() -> str | None:
    return _request_id.get()


@contextmanager
def request_scope(request_id: str) -> Iterator[str]:
    """Binds the request id for logs and outgoing calls for the duration of the block, and
    puts it on the current span (the trace id does not replace it: logs are searched by it)."""
    token = _request_id.set(request_id)
    mark_request_id(request_id)
    structlog.contextvars.bind_contextvars(request_id=request_id)
    try:
        yield request_id
    finally:
        structlog.contextvars.unbind_contextvars("request_id")
        _request_id.reset(token)


def request_id_from_metadata(metadata: Mapping[str, str | bytes] | None) -> str:
    value = (metadata or {}).get(REQUEST_ID_METADATA_KEY)
    if isinstance(value, bytes):
        value = value.decode("ascii", "replace")
    return clean_request_id(value)

"""structlog JSON logging for every process; secrets are dropped before anything is written."""

from __future__ import annotations

import logging
import sys
from collections.abc import MutableMapping
from typing import Any

import structlog
from opentelemetry import trace

# Keys whose values must never reach a log line, whatever logs them.
SECRET_KEYS = frozenset(
    {
        "token",
        "api_token",
        "apitoken",
        "access_token",
        "refresh_token",
        "password",
        "secret",
        "authorization",
        "signing_secret",
        "s3_secret_key",
        "content_base64",
        "contentbase64",
    }
)


def redact_secrets(
    _logger: object, _method: str, event: MutableMapping[str, Any]
) -> MutableMapping[str, Any]:
    for key in list(event):
        if key.lower().replace("-", "_") in SECRET_KEYS:
            event[key] = "[redacted]"
    return event


def add_trace_id(
    _logger: object, _method: str, event: MutableMapping[str, Any]
) -> MutableMapping[str, Any]:
    """The trace id of the span current when the line is written (only when one records), so
    a log line leads to its trace; the request id stays the key to search logs by."""
    span = trace.get_current_span()
    if span.is_recording():
        event["trace_id"] = format(span.get_span_context().trace_id, "032x")
    return event


def configure_logging(service: str, level: str = "info") -> None:
    """JSON lines on stdout with service, level, ISO time, the bound request id and, while a
    span records, its trace id."""
    numeric = logging.getLevelNamesMapping()[level.upper()]
    shared: list[structlog.typing.Processor] = [
        structlog.contextvars.merge_contextvars,
        add_trace_id,
        structlog.processors.add_log_level,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
        redact_secrets,
    ]
    structlog.configure(
        processors=[
            *shared,
            structlog.processors.format_exc_info,
            structlog.processors.EventRenamer("message"),
            lambda _l, _m, e: {"service": service, **e},
            structlog.processors.JSONRenderer(),
        ],
        wrapper_class=structlog.make_filtering_bound_logger(numeric),
        logger_factory=structlog.PrintLoggerFactory(sys.stdout),
        cache_logger_on_first_use=True,
    )
    # Libraries log through the standard library: render those lines as JSON too.
    handler = logging.StreamHandler(sys.stdout)
    handler.setFormatter(
        structlog.stdlib.ProcessorFormatter(
            foreign_pre_chain=shared,
            processors=[
                structlog.stdlib.ProcessorFormatter.remove_processors_meta,
                structlog.processors.EventRenamer("message"),
                lambda _l, _m, e: {"service": service, **e},
                structlog.processors.JSONRenderer(),
            ],
        )
    )
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(max(numeric, logging.INFO) if numeric < logging.INFO else numeric)
    # Chatty libraries stay at warning unless we debug.
    for name in ("botocore", "aiobotocore", "urllib3", "pymongo", "nats", "asyncio", "waitress"):
        logging.getLogger(name).setLevel(
            logging.DEBUG if numeric <= logging.DEBUG else logging.WARNING
        )


def get_logger(name: str | None = None) -> structlog.stdlib.BoundLogger:
    logger: structlog.stdlib.BoundLogger = structlog.get_logger(name)
    return logger

"""Rich gRPC status (google.rpc.Status with BadRequest, ErrorInfo, RetryInfo) both ways."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import grpc
from google.protobuf import any_pb2, duration_pb2
from google.rpc import code_pb2, error_details_pb2, status_pb2  # type: ignore[import-untyped]
from grpc_status import rpc_status

from storypost_runtime.errors import DomainError, ResourceExhausted

ERROR_DOMAIN = "storypost"


@dataclass(frozen=True)
class ErrorDetails:
    """What a caller learns from a failed call."""

    code: grpc.StatusCode
    message: str
    field_violations: dict[str, list[str]] = field(default_factory=dict)
    retry_after_seconds: float | None = None
    reason: str | None = None


def _pack(message: object) -> any_pb2.Any:
    packed = any_pb2.Any()
    packed.Pack(message)  # type: ignore[arg-type]
    return packed


def status_for(error: DomainError) -> grpc.Status:
    """The grpc.Status (with trailing details) that represents a domain error."""
    details: list[any_pb2.Any] = []
    if error.field_violations:
        bad_request = error_details_pb2.BadRequest()
        for key, explanations in error.field_violations.items():
            for text in explanations:
                bad_request.field_violations.add(field=key, description=text)
        details.append(_pack(bad_request))
    if error.reason:
        details.append(_pack(error_details_pb2.ErrorInfo(reason=error.reason, domain=ERROR_DOMAIN)))
    if isinstance(error, ResourceExhausted) and error.retry_after_seconds is not None:
        seconds = max(0.0, error.retry_after_seconds)
        delay = duration_pb2.Duration(
            seconds=int(seconds), nanos=int((seconds - int(seconds)) * 1e9)
        )
        details.append(_pack(error_details_pb2.RetryInfo(retry_delay=delay)))
    code_value: int = error.code.value[0]
    proto = status_pb2.Status(code=code_value, message=error.message, details=details)
    status: grpc.Status = rpc_status.to_status(proto)
    return status


def details_from(error: grpc.RpcError) -> ErrorDetails:
    """Reads code, message and rich details from a failed call (sync or aio)."""
    code: grpc.StatusCode = error.code()  # type: ignore[attr-defined,unused-ignore]
    message: str = error.details() or ""  # type: ignore[attr-defined,unused-ignore]
    status = _rich_status(error)
    violations: dict[str, list[str]] = {}
    retry_after: float | None = None
    reason: str | None = None
    if status is not None:
        message = status.message or message
        for detail in status.details:
            if detail.Is(error_details_pb2.BadRequest.DESCRIPTOR):
                bad_request = error_details_pb2.BadRequest()
                detail.Unpack(bad_request)
                for violation in bad_request.field_violations:
                    violations.setdefault(violation.field, []).append(violation.description)
            elif detail.Is(error_details_pb2.RetryInfo.DESCRIPTOR):
                info = error_details_pb2.RetryInfo()
                detail.Unpack(info)
                retry_after = info.retry_delay.seconds + info.retry_delay.nanos / 1e9
            elif detail.Is(error_details_pb2.ErrorInfo.DESCRIPTOR):
                error_info = error_details_pb2.ErrorInfo()
                detail.Unpack(error_info)
                reason = error_info.reason
    return ErrorDetails(code, message, violations, retry_after, reason)


def _rich_status(error: grpc.RpcError) -> Any:
    trailing: Any = error.trailing_metadata()  # type: ignore[attr-defined,unused-ignore]
    for key, value in trailing or ():
        if key == "grpc-status-details-bin" and isinstance(value, bytes):
            parsed = status_pb2.Status.FromString(value)
            if parsed.code != code_pb2.OK:
                return parsed
    return None


def retry_after_header(seconds: float | None) -> str | None:
    """Retry-After is whole seconds, at least 1."""
    if seconds is None:
        return None
    return str(max(1, math.ceil(seconds)))

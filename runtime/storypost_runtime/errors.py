"""Domain errors raised by services; the gRPC layer turns them into status codes with details."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import grpc


class DomainError(Exception):
    """An expected error whose message is safe to show the caller."""

    code: grpc.StatusCode = grpc.StatusCode.INVALID_ARGUMENT

    def __init__(
        self,
        message: str,
        *,
        field_violations: Mapping[str, Sequence[str]] | None = None,
        reason: str | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        # Validation-style details: offending key -> explanations (becomes google.rpc.BadRequest).
        self.field_violations = dict(field_violations or {})
        # Machine-readable reason (becomes google.rpc.ErrorInfo.reason), e.g. "QUOTA_EXCEEDED".
        self.reason = reason


class InvalidArgument(DomainError):
    code = grpc.StatusCode.INVALID_ARGUMENT


class FailedPrecondition(DomainError):
    code = grpc.StatusCode.FAILED_PRECONDITION


class NotFound(DomainError):
    code = grpc.StatusCode.NOT_FOUND


class AlreadyExists(DomainError):
    code = grpc.StatusCode.ALREADY_EXISTS


class Unauthenticated(DomainError):
    code = grpc.StatusCode.UNAUTHENTICATED


class PermissionDenied(DomainError):
    code = grpc.StatusCode.PERMISSION_DENIED


class Unavailable(DomainError):
    code = grpc.StatusCode.UNAVAILABLE


class ResourceExhausted(DomainError):
    """A quota, rate limit or busy resource; retry_after_seconds tells when to try again."""

    code = grpc.StatusCode.RESOURCE_EXHAUSTED

    def __init__(
        self,
        message: str,
        *,
        retry_after_seconds: float | None = None,
        reason: str | None = None,
    ) -> None:
        super().__init__(message, reason=reason)
        self.retry_after_seconds = retry_after_seconds

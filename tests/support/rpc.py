"""A failed gRPC call as a stub raises it, for fakes of the services' stubs."""

from __future__ import annotations

from typing import Any

import grpc

from storypost_runtime.errors import DomainError
from storypost_runtime.status import status_for


class FakeRpcError(grpc.RpcError):
    """Carries a grpc.Status (code, details and the rich-status trailers) like a real one."""

    def __init__(self, status: grpc.Status) -> None:
        self._status = status

    def code(self) -> grpc.StatusCode:
        return self._status.code

    def details(self) -> str:
        return self._status.details

    def trailing_metadata(self) -> Any:
        return self._status.trailing_metadata


def rpc_error(error: DomainError) -> FakeRpcError:
    """The error a service answering `error` makes its callers' stubs raise."""
    return FakeRpcError(status_for(error))

"""What the server interceptors share: their call signature, a call's metadata, and wrapping a
unary behaviour as a handler that (de)serializes like the one it replaces."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import grpc

type Handler = grpc.RpcMethodHandler[Any, Any]
# What an interceptor calls to get the next handler (None: no such method).
type Continuation = Callable[[grpc.HandlerCallDetails], Awaitable[Handler | None]]
# A unary method's body: (request, context) -> response.
type Behaviour = Callable[[Any, grpc.aio.ServicerContext[Any, Any]], Awaitable[Any]]


def invocation_metadata(details: grpc.HandlerCallDetails) -> dict[str, Any]:
    """The call's metadata by key (the request id, the caller's token)."""
    return dict(details.invocation_metadata or ())


def unary_handler(behaviour: Behaviour, like: Handler | None) -> Handler:
    """A unary handler running `behaviour`, reading and writing messages as `like` does."""
    return grpc.unary_unary_rpc_method_handler(
        behaviour,
        request_deserializer=like.request_deserializer if like else None,
        response_serializer=like.response_serializer if like else None,
    )

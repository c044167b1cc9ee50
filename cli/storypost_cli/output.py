"""Printing results and failing with clear messages and distinct exit codes."""

from __future__ import annotations

import json
import sys
from typing import Any, NoReturn

import grpc

from storypost_client.cli.exits import (
    EXIT_AUTH,
    EXIT_BAD_INPUT,
    EXIT_RATE_LIMITED,
    EXIT_SERVER,
    EXIT_UNAVAILABLE,
)
from storypost_runtime.status import details_from

# The exit codes are the caller CLI's (storypost_client.cli.exits), shared by every command.
__all__ = [
    "EXIT_AUTH",
    "EXIT_BAD_INPUT",
    "EXIT_RATE_LIMITED",
    "EXIT_SERVER",
    "EXIT_UNAVAILABLE",
    "fail",
    "fail_rpc",
    "print_json",
]

_EXIT_FOR_CODE = {
    grpc.StatusCode.INVALID_ARGUMENT: EXIT_BAD_INPUT,
    grpc.StatusCode.FAILED_PRECONDITION: EXIT_BAD_INPUT,
    grpc.StatusCode.NOT_FOUND: EXIT_BAD_INPUT,
    grpc.StatusCode.ALREADY_EXISTS: EXIT_BAD_INPUT,
    grpc.StatusCode.UNAUTHENTICATED: EXIT_AUTH,
    grpc.StatusCode.RESOURCE_EXHAUSTED: EXIT_RATE_LIMITED,
    grpc.StatusCode.UNAVAILABLE: EXIT_UNAVAILABLE,
    grpc.StatusCode.DEADLINE_EXCEEDED: EXIT_UNAVAILABLE,
}


def print_json(value: Any) -> None:
    print(json.dumps(value, indent=2, sort_keys=False))


def fail(message: str, code: int = EXIT_BAD_INPUT) -> NoReturn:
    print(f"storypost: {message}", file=sys.stderr)
    raise SystemExit(code)


def fail_rpc(error: grpc.RpcError, what: str) -> NoReturn:
    details = details_from(error)
    code = _EXIT_FOR_CODE.get(details.code, EXIT_SERVER)
    if code == EXIT_UNAVAILABLE:
        fail(
            f"{what}: the service is not answering ({details.message}); is the stack running?", code
        )
    fail(f"{what}: {details.message}", code)

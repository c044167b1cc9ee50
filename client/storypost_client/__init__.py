"""The Python SDK of the storypost API: typed sync and async clients with retries built in.

Importing the package is cheap: each name below is imported from its module on first use
(`from storypost_client import StorypostClient` works as usual), so a command that only
prints its help (the `storypost` caller CLI) never imports httpx.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from storypost_client.version import __version__

if TYPE_CHECKING:
    from storypost_client.async_client import AsyncStorypostClient
    from storypost_client.errors import (
        ApiConnectionError,
        ApiError,
        ApiTimeoutError,
        AuthenticationError,
        BadRequestError,
        NotFoundError,
        PayloadTooLargeError,
        RateLimitedError,
        ServerError,
        StorypostError,
        UnavailableError,
        UploadError,
        WaitTimeoutError,
    )
    from storypost_client.generated.procedures import CATALOG_VERSION, PROCEDURES, ProcedureName
    from storypost_client.polling import KINDS, PollPolicy
    from storypost_client.procedure import ProcedureInfo
    from storypost_client.retry import NO_RETRY, RetryPolicy
    from storypost_client.sync_client import StorypostClient
    from storypost_client.uploads import UploadedFile

# The module of each public name (the imports above, for type checkers; a test keeps the two
# alike).
_LAZY = {
    "AsyncStorypostClient": "async_client",
    **dict.fromkeys(
        (
            "ApiConnectionError",
            "ApiError",
            "ApiTimeoutError",
            "AuthenticationError",
            "BadRequestError",
            "NotFoundError",
            "PayloadTooLargeError",
            "RateLimitedError",
            "ServerError",
            "StorypostError",
            "UnavailableError",
            "UploadError",
            "WaitTimeoutError",
        ),
        "errors",
    ),
    **dict.fromkeys(("CATALOG_VERSION", "PROCEDURES", "ProcedureName"), "generated.procedures"),
    **dict.fromkeys(("KINDS", "PollPolicy"), "polling"),
    "ProcedureInfo": "procedure",
    **dict.fromkeys(("NO_RETRY", "RetryPolicy"), "retry"),
    "StorypostClient": "sync_client",
    "UploadedFile": "uploads",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})


__all__ = [
    "CATALOG_VERSION",
    "KINDS",
    "NO_RETRY",
    "PROCEDURES",
    "ApiConnectionError",
    "ApiError",
    "ApiTimeoutError",
    "AsyncStorypostClient",
    "AuthenticationError",
    "BadRequestError",
    "NotFoundError",
    "PayloadTooLargeError",
    "PollPolicy",
    "ProcedureInfo",
    "ProcedureName",
    "RateLimitedError",
    "RetryPolicy",
    "ServerError",
    "StorypostClient",
    "StorypostError",
    "UnavailableError",
    "UploadError",
    "UploadedFile",
    "WaitTimeoutError",
    "__version__",
]

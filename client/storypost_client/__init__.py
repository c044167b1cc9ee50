"""The Python SDK of the storypost API: typed sync and async clients with retries built in."""

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
from storypost_client.transport import __version__
from storypost_client.uploads import UploadedFile

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

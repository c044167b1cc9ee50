"""What the sync and async clients hold and decide alike: where and as whom they call, their
policies, their HTTP client, whether a failed attempt is retried. The calls and sleeps
themselves stay in each client (blocking or `await` form)."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import httpx

from storypost_client import transport
from storypost_client.errors import StorypostError
from storypost_client.pacing import Pacer
from storypost_client.polling import PollPolicy
from storypost_client.retry import RetryPolicy

if TYPE_CHECKING:
    from typing import Self  # Python 3.11+: annotations only

HttpClient = TypeVar("HttpClient", httpx.Client, httpx.AsyncClient)


class ClientBase(Generic[HttpClient]):
    """The state of a client of one organization's API (`{base_url}` ends in `/api/v1`)."""

    def __init__(
        self,
        base_url: str,
        token: str,
        *,
        retry: RetryPolicy | None = None,
        poll: PollPolicy | None = None,
        connect_timeout: float = transport.DEFAULT_CONNECT_TIMEOUT,
        http_client: HttpClient | None = None,
        on_retry: transport.RetryHook | None = None,
        pacer: Pacer | None = None,
    ) -> None:
        self._endpoint = transport.Endpoint(base_url, token, connect_timeout)
        self.retry = retry or RetryPolicy()
        self.poll = poll or PollPolicy()
        # Waits for the rate limit's bucket before a call would meet a 429
        # (storypost_client.pacing); shared by every thread or task using this client.
        self.pacer = pacer or Pacer()
        # A client made here is closed with this one; a caller's is the caller's to close.
        self._own_http = http_client is None
        self._http: HttpClient = http_client or self._new_http()
        self._on_retry = on_retry

    def _new_http(self) -> HttpClient:
        """The HTTP client to use when the caller gives none."""
        raise NotImplementedError

    @classmethod
    def from_env(cls, **options: Any) -> Self:
        """A client from STORYPOST_BASE_URL and STORYPOST_API_TOKEN."""
        base_url, token = transport.env_credentials(os.environ)
        return cls(base_url, token, **options)

    @property
    def base_url(self) -> str:
        return self._endpoint.base_url

    def _retry_wait(self, request: transport.Request, attempt: int, error: Exception) -> float:
        """Seconds to sleep before the attempt after `attempt` (1-based), which failed with
        `error` (one of `transport.ATTEMPT_ERRORS`), after telling the `on_retry` hook. Raises
        the error for the caller when the retry policy gives up: `error` itself, or for a
        transport failure the ApiConnectionError it stands for."""
        if isinstance(error, StorypostError):
            failure = error
        else:
            failure = transport.connection_error(request.procedure, error, attempt)
        delay = transport.retry_delay(self.retry, request.info, attempt, failure)
        if delay is None:
            if failure is error:
                raise failure
            raise failure from error
        if self._on_retry:
            self._on_retry(attempt, delay, failure)
        return delay

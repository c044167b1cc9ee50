"""HTTP calls to a platform and the classification of what went wrong."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import KW_ONLY, dataclass, field
from typing import Any

import httpx

from publish_svc.drivers.base import Credentials, Media, Outcome, OutcomeKind, Progress
from publish_svc.model import Post
from storypost_runtime.component import component


@dataclass(frozen=True)
class PlatformError(Exception):
    """A platform call that did not succeed, already classified as an outcome.

    `answer_lost`: the request may have reached the platform, which may have performed it, but
    no answer of the platform's came back (a timeout after sending, a dropped connection, a
    gateway's 502/504, an unreadable success). A driver must then find out what happened
    before sending anything new. Otherwise the platform said no, or the request never left.
    """

    outcome: Outcome
    answer_lost: bool = False


# The request never reached the platform: nothing can have been performed.
NOT_SENT = (
    httpx.ConnectError,
    httpx.ConnectTimeout,
    httpx.PoolTimeout,
    httpx.LocalProtocolError,
    httpx.UnsupportedProtocol,
    httpx.ProxyError,
)
# A gateway answered for the platform, which may have gone on with the request.
GATEWAY_GAVE_UP = (502, 504)


def while_unsettled(error: PlatformError) -> Outcome:
    """The outcome of a call that only asks about a post that may already be published (a
    look-up, a status poll after the publishing call): a refusal says nothing about the post,
    so it is never `failed` (that would claim it did not go out) but looked at again later;
    the processor ends with "the outcome is unknown" once the platform could not tell in time.
    """
    outcome = error.outcome
    if outcome.kind is not OutcomeKind.FAILED:
        return outcome
    return Outcome.retry(
        f"{outcome.message} (while finding out whether the post was published)",
        raw_status=outcome.raw_status,
    )


def _message(response: httpx.Response) -> str:
    try:
        body = response.json()
    except ValueError:
        return response.text[:300] or f"HTTP {response.status_code}"
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict):
        text = str(error.get("message") or error.get("code") or "")
        code = str(error.get("code") or "")
        return f"{text} ({code})" if code and code not in text else text
    if isinstance(error, str):
        return str(body.get("error_description") or error)
    return f"HTTP {response.status_code}"


def _retry_after(response: httpx.Response) -> float | None:
    value = response.headers.get("Retry-After")
    try:
        return float(value) if value else None
    except ValueError:
        return None


def classify(response: httpx.Response, platform: str) -> Outcome | None:
    """None for success; otherwise what the processor should do about it."""
    if response.is_success:
        return None
    message = f"{platform}: {_message(response)}"
    if response.status_code == 401:
        return Outcome.unauthorized(message)
    if response.status_code == 429 or response.status_code >= 500:
        return Outcome.retry(message, _retry_after(response))
    return Outcome.failed(message)


@component
class PlatformClient:
    """One platform's base URL with bearer-token calls that raise PlatformError."""

    _: KW_ONLY
    http: httpx.AsyncClient
    base_url: str
    platform: str
    _base: str = field(init=False)

    def __post_init__(self) -> None:
        self._base = self.base_url.rstrip("/")

    async def call(
        self,
        method: str,
        path: str,
        token: str,
        *,
        json: Any = None,
        headers: dict[str, str] | None = None,
        params: dict[str, str] | None = None,
    ) -> Any:
        try:
            response = await self.http.request(
                method,
                f"{self._base}{path}",
                json=json,
                params=params,
                headers={"Authorization": f"Bearer {token}", **(headers or {})},
            )
        except NOT_SENT as error:
            raise PlatformError(
                Outcome.retry(
                    f"{self.platform}: the platform is unreachable ({type(error).__name__})"
                )
            ) from None
        except httpx.TimeoutException:
            raise PlatformError(
                Outcome.retry(f"{self.platform}: the platform timed out"), answer_lost=True
            ) from None
        except httpx.TransportError as error:
            raise PlatformError(
                Outcome.retry(
                    f"{self.platform}: the connection broke before the platform answered "
                    f"({type(error).__name__})"
                ),
                answer_lost=True,
            ) from None
        problem = classify(response, self.platform)
        if problem is not None:
            raise PlatformError(problem, answer_lost=response.status_code in GATEWAY_GAVE_UP)
        try:
            return response.json()
        except ValueError:
            raise PlatformError(
                Outcome.retry(f"{self.platform}: the platform answered something that is not JSON"),
                answer_lost=True,
            ) from None

    async def reachable(self, path: str, token: str) -> bool:
        try:
            response = await self.http.get(
                f"{self._base}{path}", headers={"Authorization": f"Bearer {token}"}
            )
        except httpx.HTTPError:
            return False
        return response.status_code < 500


@component
class StepDriver(ABC):
    """A driver that publishes in steps through its platform's client: a PlatformError any
    step raises is the attempt's outcome (failed, retry or unauthorized, as it says)."""

    client: PlatformClient

    async def publish(
        self, post: Post, media: Media, credentials: Credentials, progress: Progress
    ) -> Outcome:
        try:
            return await self._publish(post, media, credentials, progress)
        except PlatformError as error:
            return error.outcome

    @abstractmethod
    async def _publish(
        self, post: Post, media: Media, credentials: Credentials, progress: Progress
    ) -> Outcome:
        """The steps; a PlatformError ends them."""

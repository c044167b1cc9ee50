"""Speaks the platforms' OAuth-like connect flow and account APIs (the sandbox network by
default; a real platform gets its own class with the same methods)."""

from __future__ import annotations

from dataclasses import KW_ONLY, dataclass, field
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any
from urllib.parse import urlencode

import httpx

from storypost_runtime.clock import Clock
from storypost_runtime.component import component
from storypost_runtime.logs import get_logger

log = get_logger(__name__)


class Failure(StrEnum):
    # The token was refused (401, or invalid_grant on refresh): the account must reconnect.
    UNAUTHORIZED = "unauthorized"
    RATE_LIMITED = "rate_limited"
    NOT_FOUND = "not_found"
    # Offline, 5xx, timeouts: try again later.
    UNAVAILABLE = "unavailable"
    # Any other refusal (the platform's message says why).
    REJECTED = "rejected"


class PlatformError(Exception):
    def __init__(self, failure: Failure, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.failure = failure
        self.message = message
        self.retry_after = retry_after


@dataclass(frozen=True)
class TokenGrant:
    access_token: str
    refresh_token: str
    access_expires_at: datetime
    refresh_expires_at: datetime | None


@dataclass(frozen=True)
class Profile:
    account_id: str
    username: str
    display_name: str
    picture_url: str


@dataclass(frozen=True)
class Destination:
    id: str
    name: str
    type: str


@component
class PlatformApi:
    """The sandbox network's API for every platform (`<sandbox_url>/<platform key>/…`)."""

    _: KW_ONLY
    http: httpx.AsyncClient
    clock: Clock
    api_url: str
    browser_url: str
    client_id: str
    client_secret: str
    _api: str = field(init=False)
    _browser: str = field(init=False)

    def __post_init__(self) -> None:
        self._api = self.api_url.rstrip("/")
        self._browser = self.browser_url.rstrip("/")

    def authorize_url(self, platform: str, redirect_uri: str, state: str) -> str:
        query = urlencode(
            {
                "client_id": self.client_id,
                "redirect_uri": redirect_uri,
                "state": state,
                "response_type": "code",
                "scope": "profile,publish",
            }
        )
        return f"{self._browser}/{platform}/oauth/authorize?{query}"

    async def exchange_code(self, platform: str, code: str, redirect_uri: str) -> TokenGrant:
        return await self._token(
            platform,
            {"grant_type": "authorization_code", "code": code, "redirect_uri": redirect_uri},
        )

    async def refresh(self, platform: str, refresh_token: str) -> TokenGrant:
        return await self._token(
            platform, {"grant_type": "refresh_token", "refresh_token": refresh_token}
        )

    async def profile(self, platform: str, access_token: str) -> Profile:
        if platform == "clipapp":
            body = await self._get(platform, "/v2/user/info", access_token)
            user = body.get("data", {}).get("user", {})
            return Profile(
                str(user["open_id"]),
                str(user.get("username") or user.get("display_name") or user["open_id"]),
                str(user.get("display_name") or user.get("username") or ""),
                str(user.get("avatar_url") or ""),
            )
        body = await self._get(platform, "/v1/me", access_token)
        return Profile(
            str(body["id"]),
            str(body.get("username") or body["id"]),
            str(body.get("name") or body.get("username") or ""),
            str(body.get("profile_picture_url") or ""),
        )

    async def linknet_destinations(self, access_token: str) -> list[Destination]:
        body = await self._get("photoapp", "/v1/me/linknet_destinations", access_token)
        return [Destination(str(d["id"]), str(d["name"]), str(d["type"])) for d in body["data"]]

    async def lookup_user(self, access_token: str, username: str) -> tuple[str, str]:
        """photoapp's username lookup: (numeric id, username as the platform spells it)."""
        body = await self._get(
            "photoapp", "/v1/lookup", access_token, params={"username": username}
        )
        return str(body["id"]), str(body["username"])

    async def _token(self, platform: str, form: dict[str, str]) -> TokenGrant:
        form |= {"client_id": self.client_id, "client_secret": self.client_secret}
        body = await self._send("POST", platform, "/oauth/token", data=form)
        now = self.clock.now()
        refresh_in = body.get("refresh_expires_in")
        return TokenGrant(
            access_token=str(body["access_token"]),
            refresh_token=str(body.get("refresh_token") or ""),
            access_expires_at=now + timedelta(seconds=float(body.get("expires_in") or 3600)),
            refresh_expires_at=now + timedelta(seconds=float(refresh_in)) if refresh_in else None,
        )

    async def _get(
        self,
        platform: str,
        path: str,
        access_token: str,
        *,
        params: dict[str, str] | None = None,
    ) -> dict[str, Any]:
        return await self._send(
            "GET",
            platform,
            path,
            params=params,
            headers={"Authorization": f"Bearer {access_token}"},
        )

    async def _send(self, method: str, platform: str, path: str, **kwargs: Any) -> dict[str, Any]:
        url = f"{self._api}/{platform}{path}"
        try:
            response = await self.http.request(method, url, **kwargs)
        except httpx.TimeoutException:
            raise PlatformError(Failure.UNAVAILABLE, f"{platform} did not answer in time") from None
        except httpx.TransportError as error:
            raise PlatformError(
                Failure.UNAVAILABLE, f"{platform} is not reachable ({type(error).__name__})"
            ) from None
        if response.is_success:
            body = response.json()
            wrapped = body.get("error") if isinstance(body, dict) else None
            # clipapp wraps every answer: {"data": …, "error": {"code": "ok"}}.
            if isinstance(wrapped, dict) and wrapped.get("code") not in (None, "ok"):
                raise PlatformError(
                    Failure.REJECTED, str(wrapped.get("message") or wrapped["code"])
                )
            if not isinstance(body, dict):
                raise PlatformError(Failure.REJECTED, f"{platform} answered an unexpected body")
            return body
        raise _failure(platform, path, response)


def _failure(platform: str, path: str, response: httpx.Response) -> PlatformError:
    code, message = _error_of(response)
    status = response.status_code
    log.info("platform refused", platform=platform, path=path, status=status, code=code)
    if status == 401 or (path == "/oauth/token" and code in ("invalid_grant", "invalid_client")):
        return PlatformError(Failure.UNAUTHORIZED, message or "the platform refused the token")
    if status == 429:
        retry = response.headers.get("Retry-After")
        return PlatformError(
            Failure.RATE_LIMITED,
            message or f"{platform} is rate limiting",
            float(retry) if retry and retry.isdigit() else None,
        )
    if status == 404:
        return PlatformError(Failure.NOT_FOUND, message or "not found")
    if status >= 500:
        return PlatformError(Failure.UNAVAILABLE, message or f"{platform} answered {status}")
    return PlatformError(Failure.REJECTED, message or f"{platform} answered {status}")


def _error_of(response: httpx.Response) -> tuple[str, str]:
    try:
        body = response.json()
    except ValueError:
        return "", ""
    if not isinstance(body, dict):
        return "", ""
    error = body.get("error")
    if isinstance(error, dict):
        return str(error.get("code") or ""), str(error.get("message") or "")
    if isinstance(error, str):
        return error, str(body.get("error_description") or "")
    return "", ""

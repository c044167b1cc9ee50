"""Bearer tokens checked by account-svc; answers are remembered briefly by this replica."""

from __future__ import annotations

import hashlib
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import grpc
from cachetools import TTLCache

from edge.errors import ApiError, unauthenticated, unavailable
from storypost.account.v1 import account_pb2, account_pb2_grpc
from storypost_runtime.component import component

_BEARER = re.compile(r"^Bearer[ ]+([A-Za-z0-9._~+/=-]{1,512})[ ]*$", re.IGNORECASE)


@dataclass(frozen=True)
class Caller:
    organization_id: str
    credential_id: str


def bearer_token(header: str | None) -> str | None:
    match = _BEARER.match(header or "")
    return match.group(1) if match else None


class _Missing:
    """Not in the cache (None there means: an invalid token)."""


MISSING = _Missing()


@component
class Authenticator:
    """Resolves `Authorization: Bearer <token>` to a caller of one organization.

    A token works only on its own organization's base URL. Both valid and invalid answers
    are cached for `cache_seconds` (so a revoked token stops working within that time),
    keyed by the token's SHA-256 so no plain token is kept in memory longer than a request.
    """

    accounts: account_pb2_grpc.AccountServiceStub
    cache_seconds: float
    timer: Callable[[], float] = time.monotonic
    _lock: threading.Lock = field(init=False, default_factory=threading.Lock)
    _cache: TTLCache[str, Caller | _Missing | None] | None = field(init=False)

    def __post_init__(self) -> None:
        self._cache = (
            TTLCache(maxsize=50_000, ttl=self.cache_seconds, timer=self.timer)
            if self.cache_seconds > 0
            else None
        )

    def authenticate(self, authorization: str | None, organization_id: str) -> Caller:
        token = bearer_token(authorization)
        if token is None:
            raise unauthenticated()
        caller = self._lookup(token)
        if caller is None or caller.organization_id != organization_id:
            raise unauthenticated()
        return caller

    def _lookup(self, token: str) -> Caller | None:
        key = hashlib.sha256(token.encode()).hexdigest()
        if self._cache is not None:
            with self._lock:
                # One look: between a membership test and a read the entry may expire.
                cached = self._cache.get(key, MISSING)
            if not isinstance(cached, _Missing):
                return cached
        try:
            reply = self.accounts.Authenticate(account_pb2.AuthenticateRequest(token=token))
            caller: Caller | None = Caller(reply.organization_id, reply.credential_id)
        except grpc.RpcError as error:
            if error.code() != grpc.StatusCode.UNAUTHENTICATED:  # type: ignore[attr-defined,unused-ignore]
                raise unavailable() from None
            caller = None
        if self._cache is not None:
            with self._lock:
                self._cache[key] = caller
        return caller


@component
class RateLimitGate:
    """Takes one request from the organization's shared bucket; 429 when it is empty."""

    accounts: account_pb2_grpc.AccountServiceStub

    def consume(self, organization_id: str) -> dict[str, str]:
        """Returns the RateLimit-* headers for the answer, or raises the 429."""
        try:
            decision = self.accounts.ConsumeRateLimit(
                account_pb2.ConsumeRateLimitRequest(organization_id=organization_id)
            )
        except grpc.RpcError:
            raise unavailable() from None
        headers = {
            "RateLimit-Limit": str(decision.limit),
            "RateLimit-Remaining": str(decision.remaining),
            "RateLimit-Reset": str(decision.reset_seconds),
        }
        if not decision.allowed:
            retry_after = str(max(1, decision.retry_after_seconds))
            raise ApiError(
                429,
                f"rate limit exceeded: {decision.limit} requests per minute; retry after "
                f"{retry_after} s",
                headers={**headers, "Retry-After": retry_after},
                body={
                    "errorMessage": f"rate limit exceeded: {decision.limit} requests per minute;"
                    f" retry after {retry_after} s",
                    "errorCode": "RATE_LIMITED",
                },
            )
        return headers

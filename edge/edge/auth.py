"""Bearer tokens checked by account-svc; answers are remembered by this replica until a
revocation feed says otherwise, or briefly when the feed is not current."""

from __future__ import annotations

import hashlib
import re
import threading
import time
from collections.abc import Callable, Collection
from dataclasses import KW_ONLY, dataclass, field
from datetime import UTC, datetime, timedelta

import grpc
from cachetools import TLRUCache

from edge.errors import unauthenticated, unavailable
from storypost.account.v1 import account_pb2, account_pb2_grpc
from storypost_runtime.component import component
from storypost_runtime.logs import get_logger
from storypost_runtime.protobuf import timestamp, to_datetime

log = get_logger(__name__)

_BEARER = re.compile(r"^Bearer[ ]+([A-Za-z0-9._~+/=-]{1,512})[ ]*$", re.IGNORECASE)


@dataclass(frozen=True)
class Caller:
    organization_id: str
    credential_id: str


def bearer_token(header: str | None) -> str | None:
    match = _BEARER.match(header or "")
    return match.group(1) if match else None


# How long a token check is reused while the revocation feed is current (the feed drops a
# revoked credential's check as soon as it lists it).
REMEMBER_SECONDS = 600.0
# Each read of the feed asks again from this long before the previous answer's time, so a
# revocation stamped earlier but committed after that read (or stamped by an account-svc
# replica whose clock is behind) is still listed. A check that took over half of it is not
# remembered: a revocation during it could fall out of the window before the check lands.
FEED_OVERLAP = timedelta(seconds=60)


@dataclass(frozen=True)
class _Check:
    caller: Caller | None  # None: the token is invalid
    began: float  # the timer when account-svc was asked
    generation: int  # feed reads applied when the answer was stored


@component
class Authenticator:
    """Resolves `Authorization: Bearer <token>` to a caller of one organization.

    A token works only on its own organization's base URL. Answers are remembered, keyed by
    the token's SHA-256 so no plain token is kept in memory longer than a request, and a
    revoked token stops working within `cache_seconds`:
    - an invalid token's answer, and any answer while the revocation feed is not current,
      is trusted for `cache_seconds` after it was asked;
    - a valid token's answer is trusted up to REMEMBER_SECONDS while the feed
      (RevocationFeed: account-svc's ListRevokedCredentials, read every third of
      `cache_seconds`) was last read less than `cache_seconds` ago and that read was applied
      after the answer was stored; the read drops the checks of every credential it lists.
    So a revocation committed before a read began is applied to every check that read
    vouches for, and no check is trusted on a read older than `cache_seconds`.
    """

    _: KW_ONLY
    accounts: account_pb2_grpc.AccountServiceStub
    cache_seconds: float
    timer: Callable[[], float] = time.monotonic
    _lock: threading.Lock = field(init=False, default_factory=threading.Lock)
    _cache: TLRUCache[str, _Check] | None = field(init=False)
    # The cache keys holding each credential's valid check, so a feed read that lists a
    # credential drops its checks without reading the whole cache (a revocation is listed by
    # every read of its overlap, ~36 reads, and the cache holds up to 50,000 checks). Keys
    # of checks that expired since stay until their credential is listed or `_prune` runs.
    _holders: dict[str, set[str]] = field(init=False, default_factory=dict)
    # Feed reads applied, and the timer when the last applied one began.
    _generation: int = field(init=False, default=0)
    _feed_began: float | None = field(init=False, default=None)

    def __post_init__(self) -> None:
        self._cache = (
            TLRUCache(maxsize=50_000, ttu=self._expiry, timer=self.timer)
            if self.cache_seconds > 0
            else None
        )

    def _expiry(self, _key: str, check: _Check, now: float) -> float:
        return now + (REMEMBER_SECONDS if check.caller is not None else self.cache_seconds)

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
                check = self._cache.get(key)
                if check is not None and self._trusted(check):
                    return check.caller
        began = self.timer()
        try:
            reply = self.accounts.Authenticate(account_pb2.AuthenticateRequest(token=token))
            caller: Caller | None = Caller(reply.organization_id, reply.credential_id)
        except grpc.RpcError as error:
            if error.code() != grpc.StatusCode.UNAUTHENTICATED:  # type: ignore[attr-defined,unused-ignore]
                raise unavailable() from None
            caller = None
        if self._cache is not None and self.timer() - began < FEED_OVERLAP.total_seconds() / 2:
            with self._lock:
                self._cache[key] = _Check(caller, began, self._generation)
                if caller is not None:
                    self._holders.setdefault(caller.credential_id, set()).add(key)
        return caller

    def _trusted(self, check: _Check) -> bool:
        """Under the lock: whether a remembered answer may still be used (the class doc)."""
        now = self.timer()
        if now - check.began < self.cache_seconds:
            return True
        return (
            check.caller is not None
            and check.generation < self._generation
            and self._feed_began is not None
            and now - self._feed_began < self.cache_seconds
        )

    def _forget(self, credential_id: str) -> None:
        """Under the lock: drops the remembered checks of one credential."""
        assert self._cache is not None
        for key in self._holders.pop(credential_id, ()):
            # `get`: the entry may have expired since it was indexed.
            check = self._cache.get(key)
            caller = check.caller if check is not None else None
            if caller is not None and caller.credential_id == credential_id:
                self._cache.pop(key, None)

    def _prune(self) -> None:
        """Under the lock: rebuilds the holders' index from the cache once it names many more
        credentials than the cache still holds checks (theirs expired), so it stays bounded."""
        assert self._cache is not None
        if len(self._holders) <= 2 * len(self._cache) + 1_000:
            return
        holders: dict[str, set[str]] = {}
        for key in list(self._cache):
            check = self._cache.get(key)
            if check is not None and check.caller is not None:
                holders.setdefault(check.caller.credential_id, set()).add(key)
        self._holders = holders

    def apply_revocations(
        self, credential_ids: Collection[str], truncated: bool, began: float
    ) -> None:
        """One read of the revocation feed, begun at `began` (the timer): forgets the checks
        of the credentials it lists, or every check when it listed only part of them."""
        if self._cache is None:
            return
        with self._lock:
            if truncated:
                self._cache.clear()
                self._holders.clear()
            else:
                for credential_id in set(credential_ids):
                    self._forget(credential_id)
            self._prune()
            self._generation += 1
            self._feed_began = began


@component
class RevocationFeed:
    """Reads account-svc's ListRevokedCredentials every `interval` seconds on a thread of its
    own and hands each answer to the authenticator (the edge's composition root starts it)."""

    _: KW_ONLY
    accounts: account_pb2_grpc.AccountServiceStub
    authenticator: Authenticator
    interval: float
    wall_clock: Callable[[], datetime] = lambda: datetime.now(UTC)
    _since: datetime | None = field(init=False, default=None)
    _failing: bool = field(init=False, default=False)
    _stop: threading.Event = field(init=False, default_factory=threading.Event)
    _thread: threading.Thread | None = field(init=False, default=None)

    def read_once(self) -> None:
        began = self.authenticator.timer()
        # The first read covers what could have been revoked while this replica started.
        since = self._since or self.wall_clock() - FEED_OVERLAP
        reply = self.accounts.ListRevokedCredentials(
            account_pb2.ListRevokedCredentialsRequest(since=timestamp(since))
        )
        self.authenticator.apply_revocations(reply.credential_ids, reply.truncated, began)
        self._since = to_datetime(reply.as_of) - FEED_OVERLAP

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="revocation-feed", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def _run(self) -> None:
        while True:
            try:
                self.read_once()
            except grpc.RpcError as error:
                if not self._failing:
                    # Once per outage: token checks fall back to `cache_seconds` meanwhile.
                    log.warning("revocation feed unavailable", code=str(error.code()))  # type: ignore[attr-defined,unused-ignore]
                self._failing = True
            except Exception:
                # A bug must not end the thread: checks fall back, the next read tries again.
                log.exception("revocation feed read failed")
                self._failing = True
            else:
                if self._failing:
                    log.info("revocation feed available again")
                self._failing = False
            if self._stop.wait(self.interval):
                return


def revocation_feed(authenticator: Authenticator) -> RevocationFeed | None:
    """The feed that keeps `authenticator`'s checks honest, read from the same account-svc
    every third of its `cache_seconds`, so a read or two may fail before checks fall back to
    that time; None when nothing is remembered."""
    seconds = authenticator.cache_seconds
    if seconds <= 0:
        return None
    return RevocationFeed(
        accounts=authenticator.accounts, authenticator=authenticator, interval=seconds / 3
    )

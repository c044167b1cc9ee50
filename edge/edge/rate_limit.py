"""The organization's shared rate limit, taken a few requests ahead while it is busy.

Every request is one request from the organization's bucket in account-svc, which all edge
replicas share. Asking account-svc once per request was most of the cost of a cheap call
(bench/edge_vs_bare.py: the round trip and account-svc's bucket write; docs/edge.md
"Speed"). So while an organization with a large limit is busy, a replica takes several
requests in one call (`count`: all of them or none) and admits the next ones itself:

- A take is of one request, exactly as before, unless the limit is at least
  LEASE_MIN_LIMIT a minute and this replica's previous take of the organization was less
  than LEASE_SECONDS ago. Then it asks for twice the previous take, up to MAX_LEASE, and
  never more than a LEASE_SHARE-th of what the bucket had left: near an empty bucket every
  request is a take of one, so the 429 comes when it did. A take refused for lack of room
  for all is asked again for one request, whose answer (429 or not) is the request's.
- Requests taken ahead are taken from the shared bucket, so the replicas together never
  admit more than the limit. A replica holds at most 2 * MAX_LEASE of them; when half of a
  take is spent, the request that spends it takes the next one once it is admitted (before
  its answer), so the requests after it find some held. Held requests lapse unused once no
  take refreshed them for LEASE_SECONDS (the limit is a little stricter after a burst ends,
  by at most what was held, never looser).
- The RateLimit-* headers are the latest take's, with the requests still held counted as
  remaining: the request that took them sees what a take of one would have said; others
  see the bucket as it was at that take, less what this replica admitted since.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import grpc
from cachetools import TTLCache

from edge.errors import ApiError, unavailable
from storypost.account.v1 import account_pb2, account_pb2_grpc
from storypost_runtime.component import component
from storypost_runtime.logs import get_logger

log = get_logger(__name__)

# How long held requests may be admitted after a take, and how recent a previous take makes
# an organization busy.
LEASE_SECONDS = 1.0
# The most requests one take asks for.
MAX_LEASE = 64
# A take asks for at most this fraction of what the bucket had left (1/LEASE_SHARE).
LEASE_SHARE = 16
# Below this limit a minute every take is of one request: such an organization makes a few
# requests a second at most, and a lapse could cost a visible share of its bucket.
LEASE_MIN_LIMIT = 600
# Organizations a replica remembers (an entry lasts 2 * LEASE_SECONDS after its last take).
_ORGANIZATIONS = 10_000

Decision = account_pb2.ConsumeRateLimitResponse


@dataclass
class _Lease:
    """An organization's requests held by this replica, and its latest take."""

    tokens: int = 0  # taken from the bucket and not yet admitted
    expires: float = -math.inf  # the timer past which `tokens` lapse
    size: int = 0  # what the latest take asked for
    asking: int = 0  # asked for by takes in flight
    limit: int = 0
    remaining: int = 0  # the bucket after the latest take
    reset: int = 0

    def headers(self) -> dict[str, str]:
        # Each request held is one the bucket would still have: 60/limit s of its refill.
        reset = max(0, math.ceil(self.reset - self.tokens * 60 / max(1, self.limit) - 1e-9))
        return {
            "RateLimit-Limit": str(self.limit),
            "RateLimit-Remaining": str(self.remaining + self.tokens),
            "RateLimit-Reset": str(reset),
        }

    def next_count(self, now: float) -> int:
        """What the next take asks for (the module's doc)."""
        if now >= self.expires or self.limit < LEASE_MIN_LIMIT:
            return 1
        room = 2 * MAX_LEASE - self.tokens - self.asking
        return max(1, min(2 * self.size, MAX_LEASE, room, self.remaining // LEASE_SHARE))

    def add(self, decision: Decision, count: int, now: float, admitted: int) -> None:
        """Under the lock: an allowed take of `count`, `admitted` of it by its own request."""
        # 0 from an account-svc that predates `count`: it took one.
        taken = max(1, min(decision.taken, count))
        if self.tokens > 0 and now < self.expires:
            # Of two takes answered out of order, the later one's bucket.
            self.remaining = min(self.remaining, decision.remaining)
        else:
            self.tokens = 0  # lapsed
            self.remaining = decision.remaining
        self.tokens += taken - admitted
        self.expires = now + LEASE_SECONDS
        self.size = taken
        self.limit = decision.limit
        self.reset = decision.reset_seconds


@component
class RateLimitGate:
    """Takes one request from the organization's shared bucket (or one this replica took
    ahead for it); 429 when it is empty."""

    accounts: account_pb2_grpc.AccountServiceStub
    timer: Callable[[], float] = time.monotonic
    _lock: threading.Lock = field(init=False, default_factory=threading.Lock)
    _leases: TTLCache[str, _Lease] = field(init=False)

    def __post_init__(self) -> None:
        self._leases = TTLCache(maxsize=_ORGANIZATIONS, ttl=2 * LEASE_SECONDS, timer=self.timer)

    def consume(self, organization_id: str) -> dict[str, str]:
        """Returns the RateLimit-* headers for the answer, or raises the 429."""
        now = self.timer()
        with self._lock:
            lease = self._leases.get(organization_id)
            if lease is None:
                lease = self._leases[organization_id] = _Lease()
            if lease.tokens <= 0 or now >= lease.expires:
                count = lease.next_count(now)
                lease.asking += count
                held = False
            else:
                lease.tokens -= 1
                headers = lease.headers()
                held = True
                # Half of the latest take spent: the next one, unless it would be of one.
                count = 0
                if lease.asking == 0 and 2 * lease.tokens < lease.size:
                    count = lease.next_count(now)
                    count = count if count > 1 else 0
                    lease.asking += count
        if not held:
            return self._take_for_request(organization_id, lease, count, now)
        if count:
            self._take_ahead(organization_id, lease, count, now)
        return headers

    def _take_for_request(
        self, organization_id: str, lease: _Lease, count: int, now: float
    ) -> dict[str, str]:
        try:
            decision = self._take(organization_id, count)
            if not decision.allowed and count > 1:
                decision = self._take(organization_id, 1)
        finally:
            with self._lock:
                lease.asking -= count
        if not decision.allowed:
            with self._lock:
                lease.size = 0
            raise _rate_limited(decision)
        with self._lock:
            lease.add(decision, count, now, admitted=1)
            self._leases[organization_id] = lease  # kept another 2 * LEASE_SECONDS
            return lease.headers()

    def _take_ahead(self, organization_id: str, lease: _Lease, count: int, now: float) -> None:
        """After its own request was admitted: the next take, for the requests to come. When
        it fails, those requests take for themselves (and answer the 429 or 503)."""
        decision: Decision | None = None
        try:
            decision = self._take(organization_id, count)
        except ApiError:
            pass  # account-svc unavailable: the next take tells a request so
        except Exception:
            # Its own request is admitted: a bug here must not fail it.
            log.exception("rate limit take ahead failed", organization_id=organization_id)
        finally:
            with self._lock:
                lease.asking -= count
                if decision is not None and decision.allowed:
                    lease.add(decision, count, now, admitted=0)
                    self._leases[organization_id] = lease
                else:
                    lease.size = 0

    def _take(self, organization_id: str, count: int) -> Decision:
        try:
            reply: Decision = self.accounts.ConsumeRateLimit(
                account_pb2.ConsumeRateLimitRequest(organization_id=organization_id, count=count)
            )
        except grpc.RpcError:
            raise unavailable() from None
        return reply


def _rate_limited(decision: Decision) -> ApiError:
    retry_after = str(max(1, decision.retry_after_seconds))
    message = (
        f"rate limit exceeded: {decision.limit} requests per minute; retry after {retry_after} s"
    )
    return ApiError(
        429,
        message,
        headers={
            "RateLimit-Limit": str(decision.limit),
            "RateLimit-Remaining": str(decision.remaining),
            "RateLimit-Reset": str(decision.reset_seconds),
            "Retry-After": retry_after,
        },
        body={"errorMessage": message, "errorCode": "RATE_LIMITED"},
    )

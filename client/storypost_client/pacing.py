"""Pacing from the rate-limit headers: wait for the bucket instead of meeting a 429.

Every API answer past authentication carries `RateLimit-Limit` (the bucket's size),
`RateLimit-Remaining` (requests left now) and `RateLimit-Reset` (seconds until the bucket is
full again). The API's limit is a token bucket refilled at an even rate (docs/edge.md), so an
answer tells the client how many calls it may make at once and how fast the bucket refills:
`Limit - Remaining` tokens come back in `Reset` seconds.

`Pacer` keeps that picture between answers and hands out slots: a call takes a token when one
is left, else it waits until the next token is due. Calls sent and not yet answered count as
spent (the answers that come back may not have counted them yet), so several threads or tasks
sharing one client never overrun the bucket between them. The sync and async clients use the
same object; only their sleep differs (`time.sleep` or `await asyncio.sleep`).

Before the first answer nothing is known and nothing waits. A 429 that still comes (another
client of the same organization spent the bucket) is retried as before, after `Retry-After`.
"""

from __future__ import annotations

import itertools
import math
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

# The API's limits are per minute (`RateLimit-Limit` requests a minute): a token comes back
# every 60 / Limit seconds at the fastest.
DEFAULT_PERIOD_SECONDS = 60.0
# Tokens kept in hand: the server counts its bucket when it handles a call, the client
# estimates it between answers (from whole-second headers, with the answer's own delay); one
# token of margin absorbs the difference (seen: 1 call in 120 from 8 threads met a 429 with
# none), for about one second more over a minute's calls.
MARGIN_TOKENS = 1.0


@dataclass(frozen=True)
class RateLimit:
    """The three headers of one answer."""

    limit: int
    remaining: int
    reset: float

    @classmethod
    def from_headers(cls, headers: Mapping[str, str]) -> RateLimit | None:
        """The headers' values; None when an answer has none (a 401, a proxy's page)."""
        try:
            limit = int(headers["ratelimit-limit"])
            remaining = int(headers["ratelimit-remaining"])
            reset = float(headers["ratelimit-reset"])
        except (KeyError, ValueError):
            return None
        if limit < 1 or not 0 <= remaining <= limit or not math.isfinite(reset) or reset < 0:
            return None
        return cls(limit, remaining, reset)

    def refill_interval(self, period: float) -> float:
        """Seconds per token: `limit` tokens a `period` (the API's minute), or slower when
        the missing tokens take longer than that to come back in `reset` seconds. `Reset` is
        whole seconds rounded up: one second of it may be rounding, not refill."""
        steady = period / self.limit
        missing = self.limit - self.remaining
        if missing <= 0:
            return steady
        return max(steady, (self.reset - 1) / missing)


@dataclass(frozen=True)
class Slot:
    """One call's place: wait `wait` seconds, send, then `Pacer.settle` it with the answer."""

    number: int
    wait: float


class Pacer:
    """The client's picture of its organization's bucket (see the module doc). Thread-safe;
    each client has one, and clients of one organization may share one (`pacer=`)."""

    def __init__(
        self,
        *,
        period: float = DEFAULT_PERIOD_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if period <= 0:
            raise ValueError("period must be positive")
        self._period = period
        self._clock = clock
        self._lock = threading.Lock()
        self._numbers = itertools.count(1)
        # Tokens the next call may take at `_stamp` (negative: calls already wait for them);
        # None until an answer has told.
        self._tokens: float | None = None
        self._stamp = 0.0
        self._limit = 0
        self._interval = 0.0
        # Slots handed out and not settled: sent (or about to be) and not answered.
        self._open: set[int] = set()
        # The newest slot whose answer was applied: an older answer tells an older state.
        self._applied = 0

    def reserve(self) -> Slot:
        """A slot for the next call: how long to wait before sending it."""
        with self._lock:
            number = next(self._numbers)
            self._open.add(number)
            if self._tokens is None:
                return Slot(number, 0.0)
            now = self._clock()
            tokens = self._available(now)
            wait = 0.0 if tokens >= 1 else (1 - tokens) * self._interval
            self._tokens, self._stamp = tokens - 1, now
            return Slot(number, wait)

    def settle(self, slot: Slot, headers: Mapping[str, str] | None) -> None:
        """The answer to `slot`'s call (its headers), or None when none came."""
        with self._lock:
            self._open.discard(slot.number)
            seen = RateLimit.from_headers(headers) if headers is not None else None
            if seen is None or slot.number < self._applied:
                return
            self._applied = slot.number
            self._limit = seen.limit
            self._interval = seen.refill_interval(self._period)
            # What the server left, less the calls still open: it may not have counted them.
            self._tokens = float(seen.remaining - len(self._open)) - MARGIN_TOKENS
            self._stamp = self._clock()

    def _available(self, now: float) -> float:
        assert self._tokens is not None
        refilled = self._tokens + (now - self._stamp) / self._interval
        return min(float(self._limit), refilled)


# One pacer that never waits: for a client that must not pace (`pacer=NO_PACING`).
class NoPacing(Pacer):
    def reserve(self) -> Slot:
        return Slot(0, 0.0)

    def settle(self, slot: Slot, headers: Mapping[str, str] | None) -> None:
        return None


NO_PACING = NoPacing()

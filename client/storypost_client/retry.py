"""The spec's retry guidance as a policy: which answers to retry, and how long to wait."""

from __future__ import annotations

import secrets
from dataclasses import dataclass

# The spec: "retry 429, 502, 503 and 504". A 500 is not retried by default: it is an
# unexpected error that a retry rarely cures, and waiting hides it from the caller.
RETRY_STATUSES = frozenset({429, 502, 503, 504})


@dataclass(frozen=True, kw_only=True)
class RetryPolicy:
    """How a procedure call is retried (only procedures the catalog marks idempotent).

    The wait before attempt `n + 1` is `min(max_delay, base_delay * multiplier ** (n - 1))`,
    raised to the answer's `Retry-After` when that is longer, plus a random jitter of
    0 to 999 ms (scaled by `jitter`). With the defaults the waits are 1, 2, 4 and 8 s (each
    plus 0-0.999 s), so a call gives up after 5 attempts and at most about 19 s of waiting
    (plus what `Retry-After` asks for). A `Retry-After` longer than `max_retry_after` is not
    waited for: the error is raised at once, carrying `retry_after`.
    """

    max_attempts: int = 5
    base_delay: float = 1.0
    multiplier: float = 2.0
    max_delay: float = 30.0
    # Upper bound (exclusive) of the random extra wait, in seconds.
    jitter: float = 1.0
    max_retry_after: float = 120.0
    statuses: frozenset[int] = RETRY_STATUSES
    # Connection failures and read timeouts get no answer at all; retrying them with the same
    # body is what the spec asks ("after a client timeout, retry with the same UUID").
    retry_connection_errors: bool = True

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ValueError("max_attempts must be at least 1")
        if min(self.base_delay, self.max_delay, self.jitter, self.max_retry_after) < 0:
            raise ValueError("delays must not be negative")
        if self.multiplier < 1:
            raise ValueError("multiplier must be at least 1")

    @classmethod
    def fixed(cls, interval: float = 2.0, *, max_attempts: int = 5) -> RetryPolicy:
        """The spec's other schedule: every `interval` seconds plus 0 to 999 ms."""
        return cls(max_attempts=max_attempts, base_delay=interval, multiplier=1.0)

    def backoff(self, retry: int) -> float:
        """The wait before retry number `retry` (1 = the second attempt), without jitter."""
        return min(self.max_delay, self.base_delay * self.multiplier ** (retry - 1))

    def delay(self, retry: int, retry_after: float | None = None) -> float | None:
        """Seconds to wait before retry number `retry`; None when Retry-After is too long."""
        wait = self.backoff(retry)
        if retry_after is not None:
            if retry_after > self.max_retry_after:
                return None
            wait = max(wait, retry_after)
        return wait + self.jitter * secrets.randbelow(1000) / 1000


# One attempt, no retry (the CLI's `--attempts 1`).
NO_RETRY = RetryPolicy(max_attempts=1)

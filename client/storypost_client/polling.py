"""Waiting for a post or draft to reach a final state: what to poll, and how often."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from storypost_client.errors import WaitTimeoutError
from storypost_client.kinds import KindName

__all__ = ["KINDS", "Kind", "KindName", "PollPolicy", "StatusHook", "Waiting", "kind_of"]

# on_status(answer) of `wait_for`: called with each status answer as it arrives.
StatusHook = Callable[[Mapping[str, Any]], None]


@dataclass(frozen=True, kw_only=True)
class PollPolicy:
    """How `wait_for_*` polls: the first wait is `initial_interval`, each next one
    `multiplier` times longer, never longer than `max_interval`; after `timeout` seconds
    `WaitTimeoutError` is raised. Defaults: 1 s, 1.5 s, 2.25 s, … up to 15 s, for at most
    15 minutes (about 70 status calls, well inside the rate limit of 60 a minute)."""

    initial_interval: float = 1.0
    multiplier: float = 1.5
    max_interval: float = 15.0
    timeout: float = 900.0

    def __post_init__(self) -> None:
        if self.initial_interval <= 0 or self.max_interval < self.initial_interval:
            raise ValueError("intervals must be positive and max_interval >= initial_interval")
        if self.multiplier < 1:
            raise ValueError("multiplier must be at least 1: polling never speeds up")
        if self.timeout < 0:
            raise ValueError("timeout must not be negative")

    def intervals(self) -> Iterator[float]:
        """The waits between polls, growing to `max_interval` and staying there."""
        interval = self.initial_interval
        while True:
            yield interval
            interval = min(self.max_interval, interval * self.multiplier)


@dataclass(frozen=True)
class Kind:
    """A resource a status procedure reports on."""

    name: KindName
    status_procedure: str
    uuid_field: str
    # States that never change again (by the API; a user may still delete a draft).
    final_states: frozenset[str]
    # The final state that means "it worked".
    success_state: str


# Where a post or a draft stops changing. A twin of storypost_runtime.vocabulary's, kept
# because the SDK installs without the server's packages (tests/unit/runtime/test_vocabulary.py
# checks they agree).
FINAL_POST_STATUSES = frozenset({"executed", "failed", "canceled"})
FINAL_DRAFT_STATUSES = frozenset({"ready", "failed", "deleted"})

KINDS: dict[str, Kind] = {
    kind.name: kind
    for kind in (
        Kind(
            "story",
            "status-photoapp-story",
            "storyPostUuid",
            FINAL_POST_STATUSES,
            "executed",
        ),
        Kind(
            "reel",
            "status-photoapp-reel",
            "reelPostUuid",
            FINAL_POST_STATUSES,
            "executed",
        ),
        Kind(
            "clipapp",
            "status-clipapp-post",
            "clipappPostUuid",
            FINAL_POST_STATUSES,
            "executed",
        ),
        Kind(
            "social",
            "status-social-post",
            "socialPostUuid",
            FINAL_POST_STATUSES,
            "executed",
        ),
        Kind("draft", "status-draft", "draftUuid", FINAL_DRAFT_STATUSES, "ready"),
    )
}


def kind_of(name: str) -> Kind:
    """The kind called `name` (story, reel, clipapp, social, draft)."""
    try:
        return KINDS[name]
    except KeyError:
        raise ValueError(f"unknown kind {name!r}; one of {', '.join(KINDS)}") from None


class Waiting:
    """One `wait_for` without its calls and sleeps (which the clients make, blocking or
    awaited): what to poll, and after each answer how long to sleep."""

    def __init__(
        self,
        kind: str,
        uuid: str,
        policy: PollPolicy,
        timeout: float | None,
        on_status: StatusHook | None = None,
    ) -> None:
        what = kind_of(kind)
        self.procedure = what.status_procedure
        self.body = {what.uuid_field: uuid}
        self._final_states = what.final_states
        self._kind, self._uuid = kind, uuid
        self._seconds = policy.timeout if timeout is None else timeout
        self._deadline = time.monotonic() + self._seconds
        self._intervals = policy.intervals()
        self._on_status = on_status

    def pause(self, answer: Mapping[str, Any]) -> float | None:
        """Hands `answer` to the `on_status` hook; then None when it is final, else the
        seconds to sleep before the next poll; WaitTimeoutError when the time is up."""
        if self._on_status:
            self._on_status(answer)
        if answer.get("status") in self._final_states:
            return None
        remaining = self._deadline - time.monotonic()
        if remaining <= 0:
            raise WaitTimeoutError(self._kind, self._uuid, answer, self._seconds)
        return min(next(self._intervals), remaining)

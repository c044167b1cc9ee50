"""The driver interface: publish one post, report the outcome, record progress as it goes.

A driver makes a post idempotent towards its platform: it records what the platform gave it
(a container or publish id) through `progress.record(...)` before the irreversible step, and
on a retry after a crash or a lost answer it first asks the platform whether that attempt
already published; where the platform cannot tell, it fails the post saying so and never
sends again. It never decides about time windows, credits or limits: the processor does.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any, Protocol

from publish_svc.model import Post


class OutcomeKind(StrEnum):
    EXECUTED = "executed"
    # Failed for good (invalid media, refused by the platform's rules).
    FAILED = "failed"
    # Transient (5xx, 429, timeout, offline): try again later within the window.
    RETRY = "retry"
    # The platform refused the token: refresh it, else the account is disconnected.
    UNAUTHORIZED = "unauthorized"


@dataclass(frozen=True)
class Outcome:
    kind: OutcomeKind
    message: str = ""
    platform_post_id: str | None = None
    permalink: str | None = None
    # The platform's last raw status (clipapp's publish status).
    raw_status: str | None = None
    retry_after_seconds: float | None = None

    @classmethod
    def executed(
        cls, platform_post_id: str, permalink: str | None = None, raw_status: str | None = None
    ) -> Outcome:
        return cls(OutcomeKind.EXECUTED, "", platform_post_id, permalink, raw_status)

    @classmethod
    def failed(cls, message: str, raw_status: str | None = None) -> Outcome:
        return cls(OutcomeKind.FAILED, message, raw_status=raw_status)

    @classmethod
    def retry(
        cls, message: str, after: float | None = None, raw_status: str | None = None
    ) -> Outcome:
        return cls(OutcomeKind.RETRY, message, raw_status=raw_status, retry_after_seconds=after)

    @classmethod
    def unauthorized(cls, message: str) -> Outcome:
        return cls(OutcomeKind.UNAUTHORIZED, message)


@dataclass(frozen=True)
class Media:
    """The rendered media as the platform fetches it."""

    kind: str  # "image" or "video"
    url: str
    preview_url: str | None = None
    duration_seconds: float = 0.0


@dataclass(frozen=True)
class Credentials:
    """A valid access token for one call; never logged."""

    access_token: str = field(repr=False)
    platform_account_id: str
    username: str


class Canceled(Exception):
    """The post was canceled before the irreversible step: do not publish."""


class LeaseLost(Exception):
    """Another replica took the post over: stop without changing anything."""


class Progress(Protocol):
    """What a driver may persist about its attempt (survives a crash)."""

    @property
    def recorded(self) -> Mapping[str, Any]: ...

    async def record(self, **fields: Any) -> None:
        """Stores fields (container id, publish id, raw status); raises LeaseLost."""

    async def irreversible(self, **fields: Any) -> None:
        """Marks the step that cannot be taken back as started, storing `fields` and the time
        with it (one write, before the call); raises Canceled (the post was canceled),
        LeaseLost, or, past the post's deadline, TooLate (or Unsettled while an earlier call
        may still be performed by the platform: the processor looks again later)."""

    @property
    def sent_at(self) -> datetime | None:
        """When the latest irreversible call was started (None: never)."""

    def unsettled(self) -> bool:
        """Whether the latest irreversible call started so recently that the platform may
        still perform it (a look-up that finds nothing proves nothing yet)."""


class Driver(Protocol):
    async def publish(
        self, post: Post, media: Media, credentials: Credentials, progress: Progress
    ) -> Outcome: ...

    async def reachable(self, credentials: Credentials | None = None) -> bool:
        """Whether the platform answers right now (cancel of a social post asks this)."""
        ...

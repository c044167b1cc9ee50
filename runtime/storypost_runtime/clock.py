"""An injectable clock, so time rules (the 60-minute window, quotas) are tested without sleeping."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Protocol


class Clock(Protocol):
    def now(self) -> datetime: ...


def truncate_to_millis(moment: datetime) -> datetime:
    """MongoDB keeps milliseconds: truncating first makes stored and returned times equal."""
    return moment.replace(microsecond=moment.microsecond // 1000 * 1000)


class SystemClock:
    def now(self) -> datetime:
        return truncate_to_millis(datetime.now(UTC))


class FrozenClock:
    """A clock tests move by hand."""

    def __init__(self, start: datetime) -> None:
        self._now = start

    def now(self) -> datetime:
        return self._now

    def advance(self, delta: timedelta) -> None:
        self._now += delta


def iso_utc(moment: datetime) -> str:
    """The spec's date shape: `yyyy-mm-ddThh:mm:ssZ` (milliseconds when present)."""
    moment = moment.astimezone(UTC)
    if moment.microsecond:
        return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")

"""A queue's weekly slots in its time zone, as the UTC instants they fall on.

A slot is a weekday and a local `HH:MM`. A local time that does not exist (the hour skipped
when clocks spring forward) is taken at the first minute after the gap; a local time that
exists twice (clocks falling back) is taken once, at its first occurrence. Two slots that
land on one instant (both inside a gap) are one.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from storypost_runtime.errors import InvalidArgument

WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
TIME_PATTERN = re.compile(r"^([01]\d|2[0-3]):([0-5]\d)$")
MAX_SLOTS = 100
ONE_MINUTE = timedelta(minutes=1)


@dataclass(frozen=True, order=True)
class WeeklySlot:
    """A weekday (0 Monday … 6 Sunday) and a local time."""

    weekday: int
    at: time

    @property
    def weekday_name(self) -> str:
        return WEEKDAYS[self.weekday]

    @property
    def time_text(self) -> str:
        return self.at.strftime("%H:%M")


def invalid(field: str, explanation: str) -> InvalidArgument:
    """A 400 naming `field` (the edge answers it with the spec's validation body)."""
    return InvalidArgument(f"{field}: {explanation}", field_violations={field: [explanation]})


def time_zone(name: str) -> ZoneInfo:
    """The IANA zone `name` (e.g. `Europe/Berlin`); a 400 naming `timeZone` otherwise."""
    if not name or name != name.strip() or name.startswith(("/", ".")) or ".." in name:
        raise invalid("timeZone", f"not an IANA time zone name: {name!r}")
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise invalid(
            "timeZone", f"unknown time zone {name!r} (an IANA name, e.g. Europe/Berlin)"
        ) from None


def weekly_slots(raw: Sequence[Mapping[str, str]]) -> tuple[WeeklySlot, ...]:
    """The slots as given (`weekday` name, `time` HH:MM), sorted, repeats dropped; a 400
    naming `slots.<i>.<key>` for a bad one, and `slots` for none or more than 100."""
    if not 1 <= len(raw) <= MAX_SLOTS:
        raise invalid("slots", f"must hold 1 to {MAX_SLOTS} slots (got {len(raw)})")
    found: set[WeeklySlot] = set()
    for index, slot in enumerate(raw):
        weekday = slot.get("weekday", "")
        if weekday not in WEEKDAYS:
            raise invalid(f"slots.{index}.weekday", f"must be one of {', '.join(WEEKDAYS)}")
        match = TIME_PATTERN.match(slot.get("time", ""))
        if match is None:
            raise invalid(f"slots.{index}.time", "must be a time of day HH:MM, 00:00 to 23:59")
        found.add(WeeklySlot(WEEKDAYS.index(weekday), time(int(match[1]), int(match[2]))))
    return tuple(sorted(found))


def instant(day: date, at: time, zone: ZoneInfo) -> datetime:
    """The UTC instant of the local `day` `at` in `zone`: its first occurrence when the local
    time exists twice, the first minute after the gap when it does not exist."""
    local = datetime.combine(day, at, tzinfo=zone)  # fold=0: the first occurrence
    moment = local.astimezone(UTC)
    if moment.astimezone(zone).replace(tzinfo=None) == local.replace(tzinfo=None):
        return moment
    # In a gap: with the offset after the change (fold=1) it lands before the gap's end, with
    # the one before it (fold=0) after; the change itself is the first minute after the gap.
    later_offset = local.replace(fold=1).utcoffset()
    probe = local.replace(fold=1).astimezone(UTC)
    while probe < moment and probe.astimezone(zone).utcoffset() != later_offset:
        probe += ONE_MINUTE
    return probe


def instants(
    slots: Sequence[WeeklySlot], zone: ZoneInfo, after: datetime, until: datetime
) -> Iterator[datetime]:
    """Every instant of the slots in (after, until], in order, each once."""
    day = after.astimezone(zone).date() - timedelta(days=1)
    last: datetime | None = None
    while True:
        moments = sorted(instant(day, s.at, zone) for s in slots if s.weekday == day.weekday())
        for moment in moments:
            if moment > until:
                return
            if moment > after and moment != last:
                last = moment
                yield moment
        day += timedelta(days=1)
        if datetime.combine(day, time(), tzinfo=zone).astimezone(UTC) > until + timedelta(days=1):
            return

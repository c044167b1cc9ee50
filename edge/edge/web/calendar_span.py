"""The days a calendar page shows: a week (Monday to Sunday) or the weeks of a month, around
one day, with the days before and after to move to."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime, time, timedelta
from typing import Literal
from zoneinfo import ZoneInfo

View = Literal["week", "month"]
VIEWS: tuple[View, ...] = ("week", "month")
WEEK = timedelta(days=7)
DASH = "\N{EN DASH}"


def monday(day: date) -> date:
    return day - timedelta(days=day.weekday())


def month_start(day: date, months: int = 0) -> date:
    index = day.year * 12 + day.month - 1 + months
    return date(index // 12, index % 12 + 1, 1)


@dataclass(frozen=True)
class Span:
    view: View
    focus: date
    days: tuple[date, ...]
    previous: date
    next: date

    @property
    def title(self) -> str:
        if self.view == "month":
            return f"{self.focus:%B %Y}"
        first, last = self.days[0], self.days[-1]
        if first.month == last.month:
            return f"{first.day}{DASH}{last.day} {last:%b %Y}"
        if first.year == last.year:
            return f"{first.day} {first:%b} {DASH} {last.day} {last:%b %Y}"
        return f"{first.day} {first:%b %Y} {DASH} {last.day} {last:%b %Y}"

    def bounds(self, zone: ZoneInfo) -> tuple[datetime, datetime]:
        """The first and the day after the last day shown, as instants in the zone."""
        return (
            datetime.combine(self.days[0], time(), zone),
            datetime.combine(self.days[-1] + timedelta(days=1), time(), zone),
        )

    def in_focus(self, day: date) -> bool:
        """In a month view, the days of the month (the grid also shows its edges)."""
        return self.view == "week" or day.month == self.focus.month


def span(view: View, focus: date) -> Span:
    if view == "week":
        start = monday(focus)
        return Span(
            view,
            focus,
            tuple(start + timedelta(days=n) for n in range(7)),
            focus - WEEK,
            focus + WEEK,
        )
    first = month_start(focus)
    following = month_start(focus, 1)
    start = monday(first)
    end = monday(following - timedelta(days=1)) + WEEK
    return Span(
        view,
        first,
        tuple(start + timedelta(days=n) for n in range((end - start).days)),
        month_start(focus, -1),
        following,
    )


def parse_day(text: str, today: date) -> date | None:
    """`YYYY-MM-DD`, today when empty; None when it is not a date."""
    if not text:
        return today
    try:
        return date.fromisoformat(text)
    except ValueError:
        return None

"""The rules of a series of recurring posts, without storage: the `repeat` a schedule call
gives (checked), the series' UUID and its occurrences' UUIDs, dates and texts.

Occurrence 0 is the schedule call's own post; occurrence n (1, 2, ...) has the UUID
uuid5(seriesUuid, str(n)), is dated `first + n * every` (or takes its queue's next free slot
when the series has no `every`), and takes variant (n - 1) mod len(variants) of the texts.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from publish_svc.model import Kind
from publish_svc.queue_times import invalid
from storypost_runtime.errors import InvalidArgument

# `PnD` or `PnW`: whole days or whole weeks, P1D to P52W.
DURATION_PATTERN = re.compile(r"^P([1-9][0-9]{0,3})([DW])$")
MIN_EVERY = timedelta(days=1)
MAX_EVERY = timedelta(weeks=52)
COUNT_MIN = 2
COUNT_MAX = 365
VARIANTS_MAX = 10
# The next occurrence is created at most this long before its date.
CREATE_AHEAD = timedelta(hours=24)
# At most this many series of one account are active at once (Zernio's limit).
MAX_ACTIVE_PER_ACCOUNT = 10
# The namespace of series UUIDs: uuid5(SERIES_NAMESPACE, "<organization>:<kind>:<post uuid>").
SERIES_NAMESPACE = uuid.UUID("5b0a4c1e-8f57-4d4e-9a51-2f3c8e7d6a10")
# The text fields each kind's variants may set.
VARIANT_FIELDS: Mapping[Kind, tuple[str, ...]] = {
    Kind.STORY: (),
    Kind.REEL: ("caption",),
    Kind.CLIPAPP: ("title", "description"),
    Kind.SOCIAL: ("text",),
}


def every_of(text: str) -> timedelta:
    """An ISO 8601 duration of whole days or weeks, P1D to P52W; a 400 naming
    `repeat.every` otherwise."""
    match = DURATION_PATTERN.match(text)
    if match is None:
        raise invalid(
            "repeat.every",
            f"{text!r} is not a duration in whole days or weeks (P1D to P52W, e.g. P7D or P2W)",
        )
    amount, unit = int(match.group(1)), match.group(2)
    every = timedelta(days=amount) if unit == "D" else timedelta(weeks=amount)
    if not MIN_EVERY <= every <= MAX_EVERY:
        raise invalid("repeat.every", f"{text!r} is outside P1D to P52W")
    return every


def duration_text(every: timedelta) -> str:
    """The duration as ISO 8601 (`P2W` for whole weeks, `P10D` otherwise)."""
    days = every.days
    return f"P{days // 7}W" if days % 7 == 0 else f"P{days}D"


@dataclass(frozen=True)
class RepeatRule:
    """A checked `repeat`: how often (None: each occurrence takes its queue's next slot),
    until when (a count of posts, the first included, or an instant), and the texts."""

    every: timedelta | None
    count: int | None
    until: datetime | None
    variants: tuple[Mapping[str, str], ...] = ()

    def variant(self, n: int) -> Mapping[str, str]:
        """The text fields occurrence n (1, 2, ...) takes ({} for none)."""
        if n < 1 or not self.variants:
            return {}
        return self.variants[(n - 1) % len(self.variants)]

    def date_of(self, first: datetime, n: int) -> datetime | None:
        """Occurrence n's date (None when it takes a queue's slot)."""
        return None if self.every is None else first + n * self.every

    def has(self, n: int, date: datetime | None) -> bool:
        """Whether occurrence n (dated `date`, None while unknown) belongs to the series."""
        if n >= COUNT_MAX:
            return False
        if self.count is not None:
            return n < self.count
        return date is None or self.until is None or date <= self.until

    def to_doc(self) -> dict[str, object]:
        return {
            "every": duration_text(self.every) if self.every else None,
            "count": self.count,
            "until": self.until,
            "variants": [dict(v) for v in self.variants],
        }

    @classmethod
    def from_doc(cls, doc: Mapping[str, object]) -> RepeatRule:
        every = doc.get("every")
        count = doc.get("count")
        until = doc.get("until")
        variants = doc.get("variants") or []
        assert isinstance(variants, list)
        return cls(
            every_of(every) if isinstance(every, str) else None,
            count if isinstance(count, int) else None,
            until if isinstance(until, datetime) else None,
            tuple(dict(v) for v in variants),
        )


def repeat_rule(
    kind: Kind,
    *,
    every: str,
    count: int,
    until: datetime | None,
    variants: Sequence[Mapping[str, str]],
    queue_name: str,
    start: datetime,
) -> RepeatRule:
    """The checked `repeat` of a schedule call whose first post is dated `start` (or around
    it, with a queue); a 400 naming the `repeat.*` field otherwise."""
    if not every and not queue_name:
        raise invalid("repeat.every", "required unless queueName is given")
    period = every_of(every) if every else None
    if count and until is not None:
        raise _count_and_until()
    if not count and until is None:
        raise invalid("repeat.count", "give count (2 to 365) or until")
    if count and not COUNT_MIN <= count <= COUNT_MAX:
        raise invalid("repeat.count", f"must be {COUNT_MIN} to {COUNT_MAX}")
    if until is not None:
        second = start + (period or MIN_EVERY)
        if until < second:
            raise invalid(
                "repeat.until",
                f"must leave room for a second post (not before {second.isoformat()})",
            )
    return RepeatRule(period, count or None, until, _variants(kind, variants))


def _count_and_until() -> InvalidArgument:
    """The 400 naming both `repeat.count` and `repeat.until`."""
    return InvalidArgument(
        "repeat: give either count or until, not both",
        field_violations={
            "repeat.count": ["not together with until"],
            "repeat.until": ["not together with count"],
        },
    )


def _variants(kind: Kind, variants: Sequence[Mapping[str, str]]) -> tuple[Mapping[str, str], ...]:
    if len(variants) > VARIANTS_MAX:
        raise invalid("repeat.variants", f"at most {VARIANTS_MAX}")
    allowed = VARIANT_FIELDS[kind]
    checked: list[Mapping[str, str]] = []
    for i, variant in enumerate(variants):
        given = {key: value for key, value in variant.items() if value}
        unknown = sorted(set(given) - set(allowed))
        if unknown or not given:
            fields = ", ".join(allowed) or "none (this kind has no text fields)"
            raise invalid(
                f"repeat.variants.{i}",
                f"a variant sets one or more of: {fields}",
            )
        checked.append(given)
    return tuple(checked)


def series_uuid(organization_id: str, kind: Kind, post_uuid: str) -> str:
    """The series a schedule call starts: the same call again names the same series."""
    return str(uuid.uuid5(SERIES_NAMESPACE, f"{organization_id}:{kind.value}:{post_uuid.lower()}"))


def occurrence_uuid(series: str, n: int) -> str:
    """Occurrence n's post UUID (n = 0 is the schedule call's own, which is not derived)."""
    return str(uuid.uuid5(uuid.UUID(series), str(n)))

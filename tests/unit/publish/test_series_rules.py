"""The rules of a series: `every` durations, the checks of `repeat`, occurrence planning."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from publish_svc.model import Kind
from publish_svc.series_rules import (
    RepeatRule,
    duration_text,
    every_of,
    occurrence_uuid,
    repeat_rule,
    series_uuid,
)
from storypost_runtime.errors import InvalidArgument

START = datetime(2027, 3, 1, 9, 30, tzinfo=UTC)


@pytest.mark.parametrize(
    ("text", "days"),
    [("P1D", 1), ("P7D", 7), ("P2W", 14), ("P52W", 364), ("P364D", 364), ("P30D", 30)],
)
def test_every_takes_whole_days_or_weeks_from_p1d_to_p52w(text: str, days: int) -> None:
    assert every_of(text) == timedelta(days=days)


@pytest.mark.parametrize(
    "text",
    ["P0D", "P53W", "P365D", "P1M", "P1Y", "PT24H", "P1DT1H", "1D", "P1.5D", "p1d", "", "P-1D"],
)
def test_every_refuses_anything_else_naming_repeat_every(text: str) -> None:
    with pytest.raises(InvalidArgument) as raised:
        every_of(text)
    assert list(raised.value.field_violations) == ["repeat.every"]


def test_duration_text_writes_weeks_when_whole() -> None:
    assert duration_text(timedelta(days=14)) == "P2W"
    assert duration_text(timedelta(days=10)) == "P10D"


def rule(kind: Kind = Kind.SOCIAL, **given: Any) -> RepeatRule:
    asked: dict[str, Any] = {
        "every": "P7D",
        "count": 0,
        "until": None,
        "variants": [],
        "queue_name": "",
        "start": START,
    }
    asked.update(given)
    return repeat_rule(kind, **asked)


@pytest.mark.parametrize(
    ("given", "fields"),
    [
        ({}, ["repeat.count"]),  # neither count nor until
        ({"count": 3, "until": START + timedelta(days=30)}, ["repeat.count", "repeat.until"]),
        ({"count": 1}, ["repeat.count"]),
        ({"count": 366}, ["repeat.count"]),
        ({"count": 3, "every": ""}, ["repeat.every"]),  # no every and no queue
        ({"until": START + timedelta(days=6)}, ["repeat.until"]),  # no room for a second
        ({"count": 3, "variants": [{"caption": "x"}]}, ["repeat.variants.0"]),  # not social's
        ({"count": 3, "variants": [{"text": ""}]}, ["repeat.variants.0"]),  # sets nothing
        ({"count": 3, "variants": [{"text": "x"}] * 11}, ["repeat.variants"]),
    ],
)
def test_a_bad_repeat_is_a_400_naming_its_field(given: dict[str, Any], fields: list[str]) -> None:
    with pytest.raises(InvalidArgument) as raised:
        rule(**given)
    assert sorted(raised.value.field_violations) == fields


def test_a_story_series_takes_no_variants() -> None:
    with pytest.raises(InvalidArgument):
        rule(Kind.STORY, count=2, variants=[{"text": "x"}])
    assert rule(Kind.STORY, count=2).variants == ()


def test_with_a_queue_every_may_be_left_out() -> None:
    queued = rule(count=4, every="", queue_name="default")
    assert queued.every is None
    assert queued.date_of(START, 2) is None


def test_dated_occurrences_follow_every_and_count_includes_the_first() -> None:
    weekly = rule(count=3)
    assert [weekly.date_of(START, n) for n in range(3)] == [
        START,
        START + timedelta(weeks=1),
        START + timedelta(weeks=2),
    ]
    assert [weekly.has(n, weekly.date_of(START, n)) for n in range(4)] == [
        True,
        True,
        True,
        False,
    ]


def test_until_keeps_the_occurrences_at_or_before_it() -> None:
    until = START + timedelta(days=14)
    weekly = rule(until=until)
    assert weekly.has(2, START + timedelta(days=14))
    assert not weekly.has(3, START + timedelta(days=21))
    assert not rule(until=START + timedelta(days=3000)).has(365, None)


def test_variants_rotate_in_order_after_the_first_post() -> None:
    rotating = rule(count=6, variants=[{"text": "a"}, {"text": "b"}, {"text": "c"}])
    assert rotating.variant(0) == {}
    assert [rotating.variant(n)["text"] for n in range(1, 6)] == ["a", "b", "c", "a", "b"]


def test_rules_survive_their_stored_form() -> None:
    stored = rule(until=START + timedelta(days=30), variants=[{"text": "a"}])
    assert RepeatRule.from_doc(stored.to_doc()) == stored


def test_the_series_uuid_is_the_calls_and_occurrences_derive_from_it() -> None:
    first = series_uuid("org", Kind.STORY, "BC604F8C-650A-46ED-8726-DEF3CDF9D0C0")
    assert first == series_uuid("org", Kind.STORY, "bc604f8c-650a-46ed-8726-def3cdf9d0c0")
    assert first != series_uuid("other", Kind.STORY, "bc604f8c-650a-46ed-8726-def3cdf9d0c0")
    assert first != series_uuid("org", Kind.REEL, "bc604f8c-650a-46ed-8726-def3cdf9d0c0")
    assert occurrence_uuid(first, 1) == str(uuid.uuid5(uuid.UUID(first), "1"))
    assert occurrence_uuid(first, 1) != occurrence_uuid(first, 2)

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime

import pytest

from storypost_runtime.documents import camel_case, from_document

CREATED = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)


@dataclass(frozen=True)
class Record:
    record_id: str
    organization_id: str
    created_at: datetime
    last_used_at: datetime | None = None
    time_zone: str = "UTC"
    tags: tuple[str, ...] = field(default=())


@pytest.mark.parametrize(
    ("name", "key"),
    [
        ("name", "name"),
        ("created_at", "createdAt"),
        ("last_latency_ms", "lastLatencyMs"),
        ("retry_after_seconds", "retryAfterSeconds"),
    ],
)
def test_camel_case(name: str, key: str) -> None:
    assert camel_case(name) == key


def test_reads_each_field_from_its_camel_case_key() -> None:
    doc = {
        "_id": "r1",
        "organizationId": "org",
        "createdAt": CREATED,
        "lastUsedAt": None,
        "timeZone": "Europe/Paris",
        "tags": ("a",),
        "unrelated": 1,
    }
    assert from_document(Record, doc, record_id=doc["_id"]) == Record(
        "r1", "org", CREATED, None, "Europe/Paris", ("a",)
    )


def test_missing_optional_fields_take_their_defaults() -> None:
    doc = {"organizationId": "org", "createdAt": CREATED}
    assert from_document(Record, doc, record_id="r1") == Record("r1", "org", CREATED)


def test_given_values_win_over_the_document() -> None:
    doc = {"organizationId": "org", "createdAt": CREATED, "timeZone": None}
    record = from_document(Record, doc, record_id="r1", time_zone="UTC")
    assert record.time_zone == "UTC"


def test_a_missing_required_field_is_a_key_error() -> None:
    with pytest.raises(KeyError, match="createdAt"):
        from_document(Record, {"organizationId": "org"}, record_id="r1")

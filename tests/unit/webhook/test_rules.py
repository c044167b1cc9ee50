"""Pure rules of webhook deliveries: payloads, subscriptions, ids, signatures, the schedule."""

from __future__ import annotations

import dataclasses
import json
from datetime import UTC, datetime, timedelta

import pytest

from storypost_runtime.backoff import RetrySchedule
from storypost_runtime.bus_message import BusMessage
from storypost_runtime.errors import InvalidArgument
from tests.support.events import social_event, story_event
from webhook_svc.deliveries import AttemptResult, Status, delivery_uuid, outcome
from webhook_svc.event_types import (
    DEFAULT_EVENTS,
    SOCIAL,
    STORY,
    payload_json,
    sample_payload,
    stored_events,
    subscription,
)
from webhook_svc.signing import check_secret, signature, verify

NOW = datetime(2026, 11, 23, 10, 0, 0, tzinfo=UTC)


def test_payload_is_event_then_the_spec_fields_and_test_only_on_tests() -> None:
    event = story_event("org", "failed", error_message="boom", occurred_at=NOW)
    bus = json.loads(event.to_message())
    body = payload_json(bus["type"], bus["data"])
    assert body.startswith('{"event":"photoapp_story_post.status_changed",')
    assert json.loads(body) == {
        "event": STORY,
        "storyPostUuid": event.data["storyPostUuid"],
        "status": "failed",
        "errorMessage": "boom",
        "occurredAt": "2026-11-23T10:00:00Z",
    }
    # A stray `test` or `event` in the data can never fake a test delivery.
    forged = json.loads(payload_json(STORY, {"status": "executed", "test": True, "event": "x"}))
    assert forged == {"event": STORY, "status": "executed"}
    sample = json.loads(sample_payload("u-1", "2026-11-23T10:00:00Z"))
    assert sample == {
        "event": STORY,
        "storyPostUuid": "u-1",
        "status": "executed",
        "occurredAt": "2026-11-23T10:00:00Z",
        "test": True,
    }


def test_subscriptions_default_to_the_spec_events_and_keep_old_urls_story_only() -> None:
    assert subscription([]) == list(DEFAULT_EVENTS) == [STORY, SOCIAL]
    assert subscription([" social_post.status_changed ", SOCIAL]) == [SOCIAL]
    assert subscription(["clipapp_post.status_changed"]) == ["clipapp_post.status_changed"]
    with pytest.raises(InvalidArgument, match=r"unknown event 'draft\.status_changed'"):
        subscription(["draft.status_changed"])
    assert stored_events({}) == [STORY]  # a URL stored before social events existed
    assert stored_events({"events": [SOCIAL]}) == [SOCIAL]


def test_delivery_ids_are_one_per_event_and_url() -> None:
    first = delivery_uuid("event-1", "hook-1")
    assert first == delivery_uuid("event-1", "hook-1")
    assert len({first, delivery_uuid("event-1", "hook-2"), delivery_uuid("event-2", "hook-1")}) == 3


def test_bus_events_parse_strictly() -> None:
    event = social_event("org-1", occurred_at=NOW)
    parsed = BusMessage.parse(event.to_message())
    assert (parsed.id, parsed.type, parsed.organization_id) == (event.id, SOCIAL, "org-1")
    assert parsed.occurred_at == NOW and parsed.data["platform"] == "LINKNET"
    # What one side writes, the other reads back whole: body, subject and headers.
    sent = dataclasses.replace(event, request_id="req-1")
    read = BusMessage.parse(sent.body(), sent.headers())
    assert read.request_id == "req-1" and read.subject == sent.subject == "events." + SOCIAL
    assert (read.body(), read.headers()) == (sent.body(), sent.headers())
    empty_id = b'{"id":"","type":"t","organizationId":"o","occurredAt":"2026-11-23T10:00:00Z"}'
    bad_date = b'{"id":"x","type":"t","organizationId":"o","occurredAt":"yesterday","data":{}}'
    for bad in [b"not json", b"[]", b'{"id": "x"}', empty_id, bad_date]:
        with pytest.raises(ValueError, match="not a status event"):
            BusMessage.parse(bad)


def test_signature_format_and_verification() -> None:
    secret = check_secret("whsec_0123456789abcdef")
    header = signature(secret, 1_800_000_000, b'{"a":1}')
    assert header.startswith("t=1800000000,v1=") and len(header.split("v1=")[1]) == 64
    assert verify(secret, header, b'{"a":1}')
    assert not verify(secret, header, b'{"a":2}')
    assert not verify("another-secret-000000", header, b'{"a":1}')
    assert not verify(secret, "v1=abc", b'{"a":1}')
    for bad in ["short", "has space in it 123456", "x" * 257, "ünïcödé-secret-1234"]:
        with pytest.raises(InvalidArgument, match="signing secret"):
            check_secret(bad)


def _result(ok: bool, code: int = 0, error: str = "") -> AttemptResult:
    return AttemptResult(ok, code, 12, error, NOW)


def test_outcomes_of_attempts() -> None:
    schedule = RetrySchedule([10, 20], jitter=0.0)
    done = outcome(_result(True, 204), attempts=2, retry_step=2, test=False,
                   schedule=schedule, now=NOW)  # fmt: skip
    assert done.set["status"] == Status.SUCCEEDED and done.set["attempts"] == 3
    assert "dueAt" in done.unset and "leaseId" in done.unset

    again = outcome(_result(False, 500, "HTTP 500"), attempts=0, retry_step=0, test=False,
                    schedule=schedule, now=NOW)  # fmt: skip
    assert again.set["status"] == Status.PENDING
    assert again.set["dueAt"] == NOW + timedelta(seconds=10) and again.set["retryStep"] == 1
    assert again.set["lastResponseCode"] == 500 and again.set["lastError"] == "HTTP 500"

    last = outcome(_result(False, 0, "timed out"), attempts=2, retry_step=2, test=False,
                   schedule=schedule, now=NOW)  # fmt: skip
    assert last.set["status"] == Status.FAILED and "dueAt" in last.unset

    test = outcome(_result(False, 404, "HTTP 404"), attempts=0, retry_step=0, test=True,
                   schedule=schedule, now=NOW)  # fmt: skip
    assert test.set["status"] == Status.FAILED  # a test is attempted once

    record = again.apply({"_id": "d", "dueAt": NOW, "leaseId": "l", "attempts": 0})
    assert record["dueAt"] == NOW + timedelta(seconds=10) and "leaseId" not in record

"""SDK details: errors by status, Retry-After, dates, request bodies, no token in reprs."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from email.utils import format_datetime

import pytest

# The package's public names, as a caller reaches them.
import storypost_client as sp
from storypost_client.errors import error_for_status, parse_retry_after
from storypost_client.transport import body_of, iso_date


@pytest.mark.parametrize(
    ("status", "error_type"),
    [
        (400, sp.BadRequestError),
        (401, sp.AuthenticationError),
        (404, sp.NotFoundError),
        (405, sp.BadRequestError),
        (413, sp.PayloadTooLargeError),
        (429, sp.RateLimitedError),
        (500, sp.ServerError),
        (501, sp.ServerError),
        (502, sp.UnavailableError),
        (503, sp.UnavailableError),
        (504, sp.UnavailableError),
        (507, sp.ServerError),
    ],
)
def test_each_status_has_its_error(status: int, error_type: type) -> None:
    assert error_for_status(status) is error_type


def test_retry_after_in_seconds_or_as_a_date() -> None:
    assert parse_retry_after(None) is None
    assert parse_retry_after("7") == 7.0
    assert parse_retry_after(" 1.5 ") == 1.5
    assert parse_retry_after("-3") == 0.0
    assert parse_retry_after("soon") is None
    later = format_datetime(datetime.now(UTC) + timedelta(seconds=30), usegmt=True)
    seconds = parse_retry_after(later)
    assert seconds is not None and 25 <= seconds <= 30


def test_error_fields_come_from_the_body_and_headers() -> None:
    error = sp.RateLimitedError(
        procedure="generate-uuid",
        status=429,
        body={"errorMessage": "rate limit exceeded", "errorCode": "RATE_LIMITED"},
        headers={"Retry-After": "3", "X-Request-Id": "req-1"},
    )
    assert (error.error_message, error.error_code) == ("rate limit exceeded", "RATE_LIMITED")
    assert (error.retry_after, error.request_id) == (3.0, "req-1")
    assert str(error) == "generate-uuid: rate limit exceeded (HTTP 429)"
    bare = sp.ServerError(procedure="x", status=500, body={})
    assert bare.error_message == "HTTP 500" and bare.error_code is None


def test_dates_are_sent_as_utc() -> None:
    plus_two = timezone(timedelta(hours=2))
    assert iso_date(datetime(2026, 7, 1, 11, 30, tzinfo=plus_two)) == "2026-07-01T09:30:00Z"
    assert iso_date(datetime(2026, 7, 1, 9, 30, 0, 250000, tzinfo=UTC)) == (
        "2026-07-01T09:30:00.250Z"
    )
    assert iso_date("2026-07-01T09:30:00+02:00") == "2026-07-01T09:30:00+02:00"
    with pytest.raises(ValueError, match="timezone"):
        iso_date(datetime(2026, 7, 1, 9, 30))


def test_none_means_not_given() -> None:
    assert body_of(a=None, b=False, c=0, d="") == {"b": False, "c": 0, "d": ""}


def test_the_token_stays_out_of_reprs() -> None:
    with sp.StorypostClient("http://api.test/o/1/api/v1", "sp_secret-token") as client:
        assert "sp_secret-token" not in repr(client._endpoint)
        assert client.base_url == "http://api.test/o/1/api/v1"
    with pytest.raises(ValueError, match="base_url"):
        sp.StorypostClient("api.test/o/1/api/v1", "t")
    with pytest.raises(ValueError, match="token"):
        sp.StorypostClient("http://api.test/o/1/api/v1", "")

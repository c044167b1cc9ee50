"""Conversions between Python values and protobuf well-known types."""

from __future__ import annotations

from datetime import UTC, datetime

from google.protobuf.timestamp_pb2 import Timestamp


def timestamp(moment: datetime | None) -> Timestamp | None:
    """A Timestamp of an aware datetime; None stays None (the field is left unset)."""
    if moment is None:
        return None
    stamp = Timestamp()
    stamp.FromDatetime(moment)
    return stamp


def to_datetime(stamp: Timestamp) -> datetime:
    """An aware UTC datetime of a Timestamp."""
    return stamp.ToDatetime(tzinfo=UTC)

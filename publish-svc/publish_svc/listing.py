"""ListPosts' query and its page tokens.

A post is listed under `listedAt`: its date, or when it was accepted if it came without one
(what Post.date answers and where the calendar places it). Pages are newest first over the
stable key (listedAt, _id); a page token is where the last page stopped and which way it
goes on, bound to the query it came from.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from publish_svc.model import Kind, Status
from storypost_runtime.errors import InvalidArgument

LISTED_FIELD = "listedAt"
# page_token is `cursor` in the API (list-posts): the messages name both.
NOT_A_PAGE = (
    "page_token is not a token of this listing (cursor: not a cursor of list-posts): ask "
    "again without it for the newest page"
)
OTHER_QUERY = (
    "page_token (cursor) belongs to a listing with other filters (kinds, statuses, date "
    "range, account, series): ask again with that listing's filters, or without it"
)


@dataclass(frozen=True)
class ListQuery:
    organization_id: str
    kinds: Sequence[Kind]
    statuses: Sequence[Status]
    date_from: datetime | None
    date_to: datetime | None
    # A connected account's social_account_id, and a series' UUID (lowercase); "" for any.
    social_account_id: str = ""
    series_uuid: str = ""

    def __post_init__(self) -> None:
        if self.date_from and self.date_to and self.date_to <= self.date_from:
            raise InvalidArgument("date_to must be after date_from")

    def digest(self) -> str:
        """Names the query, so that a token is only used with the query it came from."""
        key = [
            self.organization_id,
            sorted(k.value for k in self.kinds),
            sorted(s.value for s in self.statuses),
            self.date_from.isoformat() if self.date_from else "",
            self.date_to.isoformat() if self.date_to else "",
        ]
        # Only when set, so that tokens made before these filters existed stay valid.
        if self.social_account_id or self.series_uuid:
            key += [self.social_account_id, self.series_uuid]
        return hashlib.sha256(json.dumps(key).encode()).hexdigest()[:16]


@dataclass(frozen=True)
class Position:
    """A post's place in the listing, and which way a page from it goes: toward older
    posts (after it) or newer ones (before it)."""

    listed_at: datetime
    record_id: str
    newer: bool


def encode(query: ListQuery, position: Position) -> str:
    payload = json.dumps(
        {
            "q": query.digest(),
            "at": position.listed_at.isoformat(),
            "id": position.record_id,
            "newer": position.newer,
        },
        separators=(",", ":"),
    ).encode()
    token = payload + b"." + _checksum(payload)
    return base64.urlsafe_b64encode(token).decode().rstrip("=")


def decode(query: ListQuery, token: str) -> Position:
    """The position a token names; InvalidArgument for anything not made by `encode` for
    this query."""
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
        payload, _, checksum = raw.rpartition(b".")
        if not payload or checksum != _checksum(payload):
            raise ValueError("checksum")
        fields = json.loads(payload)
        digest, at, record_id, newer = fields["q"], fields["at"], fields["id"], fields["newer"]
        if not (isinstance(at, str) and isinstance(record_id, str) and isinstance(newer, bool)):
            raise ValueError("types")
        moment = datetime.fromisoformat(at)
    except (binascii.Error, ValueError, TypeError, KeyError):
        raise InvalidArgument(NOT_A_PAGE) from None
    if moment.tzinfo is None:
        raise InvalidArgument(NOT_A_PAGE)
    if digest != query.digest():
        raise InvalidArgument(OTHER_QUERY)
    return Position(moment, record_id, newer)


def _checksum(payload: bytes) -> bytes:
    # Not a secret: it tells a damaged or edited token from a real one (the organization
    # is part of every query, so a token never reaches another one's posts).
    return hashlib.sha256(b"storypost.ListPosts:" + payload).hexdigest()[:16].encode()

"""ListPosts: a date range on where the calendar places a post, keyset pages both ways
(posts sharing one date included), and clear errors for tokens it did not make."""

from __future__ import annotations

import base64
from datetime import datetime, timedelta
from typing import Any

import pytest
from google.protobuf.timestamp_pb2 import Timestamp

from publish_svc import migrations as publish_migrations
from publish_svc.listing import NOT_A_PAGE, OTHER_QUERY
from publish_svc.model import Kind, Post, Status, post_id
from publish_svc.post_params import params_doc
from storypost.publish.v1 import publish_pb2 as pb
from storypost_runtime.errors import InvalidArgument
from storypost_runtime.migrations import migrate
from storypost_runtime.mongo import Document
from tests.unit.publish.conftest import START, Core
from tests.unit.publish.fakes import params, photoapp_account

DAY = timedelta(days=1)


def _doc(uuid: str, date: datetime | None, created: datetime = START) -> Document:
    kind = Kind.REEL if uuid.startswith("r") else Kind.STORY
    return {
        "_id": post_id(kind, "org", uuid),
        "organizationId": "org",
        "kind": kind.value,
        "postUuid": uuid,
        "status": Status.SCHEDULED.value,
        "account": {
            "socialAccountId": "",
            "platform": "PHOTOAPP",
            "platformAccountId": photoapp_account("alice").platform_account_id,
            "username": "alice",
        },
        "params": params_doc(params(kind)),
        "date": date,
        "dueAt": date or created,
        "createdAt": created,
    }


async def _seed(core: Core) -> None:
    # Three posts on one date, an immediate one placed by when it was accepted, and others.
    for uuid, date, created in [
        ("s-a", START + DAY, START),
        ("s-b", START + DAY, START),
        ("r-c", START + DAY, START),
        ("s-now", None, START + 2 * DAY),
        ("s-old", START - DAY, START - 2 * DAY),
        ("s-late", START + 3 * DAY, START),
        ("r-edge", START + 2 * DAY + timedelta(hours=1), START),
    ]:
        await core.store.insert(Post.from_doc(_doc(uuid, date, created)))


def _ts(moment: datetime) -> Timestamp:
    stamp = Timestamp()
    stamp.FromDatetime(moment)
    return stamp


async def _list(core: Core, **fields: Any) -> pb.ListPostsResponse:
    servicer = core.servicer()
    return await servicer.ListPosts(pb.ListPostsRequest(organization_id="org", **fields), None)  # type: ignore[arg-type]


def _uuids(answer: pb.ListPostsResponse) -> list[str]:
    return [p.post_uuid for p in answer.posts]


NEWEST_FIRST = ["s-late", "r-edge", "s-now", "s-b", "s-a", "r-c", "s-old"]


async def test_no_range_and_no_token_is_the_newest_page(core: Core) -> None:
    await _seed(core)
    answer = await _list(core)
    # Newest date first; posts of one date in descending record id order.
    assert _uuids(answer) == NEWEST_FIRST
    assert answer.next_page_token == answer.previous_page_token == ""


async def test_pages_go_older_and_back_newer_without_gaps_or_repeats(core: Core) -> None:
    await _seed(core)
    pages: list[pb.ListPostsResponse] = [await _list(core, limit=2)]
    assert pages[0].previous_page_token == ""
    while pages[-1].next_page_token:
        pages.append(await _list(core, limit=2, page_token=pages[-1].next_page_token))
    assert [_uuids(p) for p in pages] == [NEWEST_FIRST[i : i + 2] for i in range(0, 7, 2)]
    # Back from the oldest page, page by page, to the newest one.
    back = pages[-1]
    for expected in reversed(pages[:-1]):
        back = await _list(core, limit=2, page_token=back.previous_page_token)
        assert _uuids(back) == _uuids(expected)
    assert back.previous_page_token == ""
    assert back.next_page_token


async def test_a_date_range_holds_the_posts_the_calendar_places_in_it(core: Core) -> None:
    await _seed(core)
    answer = await _list(
        core, date_from=_ts(START + DAY), date_to=_ts(START + 2 * DAY + timedelta(hours=1))
    )
    # From is inclusive (the three of START + DAY), to is exclusive (r-edge is not in it);
    # the immediate post is placed by when it was accepted.
    assert _uuids(answer) == ["s-now", "s-b", "s-a", "r-c"]
    paged = await _list(core, limit=3, date_from=_ts(START + DAY))
    assert _uuids(paged) == NEWEST_FIRST[:3]
    rest = await _list(core, limit=3, date_from=_ts(START + DAY), page_token=paged.next_page_token)
    assert _uuids(rest) == ["s-b", "s-a", "r-c"]
    assert rest.next_page_token == ""


async def test_tokens_it_did_not_make_are_invalid_argument(core: Core) -> None:
    await _seed(core)
    first = await _list(core, limit=2)
    for garbage in ["garbage", "!!!", base64.urlsafe_b64encode(b"{}.0").decode()]:
        with pytest.raises(InvalidArgument, match="page_token is not a token of this listing"):
            await _list(core, page_token=garbage)
    raw = base64.urlsafe_b64decode(first.next_page_token + "==")
    tampered = base64.urlsafe_b64encode(raw.replace(b"r-edge", b"s-late")).decode()
    with pytest.raises(InvalidArgument) as caught:
        await _list(core, page_token=tampered)
    assert str(caught.value) == NOT_A_PAGE
    with pytest.raises(InvalidArgument) as other:
        await _list(core, kinds=[pb.POST_KIND_REEL], page_token=first.next_page_token)
    assert str(other.value) == OTHER_QUERY
    with pytest.raises(InvalidArgument, match="date_to must be after date_from"):
        await _list(core, date_from=_ts(START), date_to=_ts(START))
    with pytest.raises(InvalidArgument, match="limit must be 1 to 500"):
        await _list(core, limit=501)


async def test_records_from_before_listed_at_get_it_and_the_index_serves_the_listing(
    core: Core,
) -> None:
    # A database from before this version: the step not done, a record without it.
    old = _doc("s-legacy", None, START - DAY)
    await core.db["posts"].insert_one(old)
    await core.db["posts"].create_index([("organizationId", 1), ("dueAt", -1)], name="org_due")
    schema = publish_migrations.plan(core.db, timedelta(days=90))
    report = await migrate(schema, limit_seconds=60)
    assert report.steps_run == ["1 posts.listedAt", "2 queue_names"] and report.changed == 1
    doc = await core.db["posts"].find_one({"_id": old["_id"]})
    assert doc is not None and doc["listedAt"] == START - DAY
    # Done once: a later run does not scan the posts again.
    assert (await migrate(schema, limit_seconds=60)).steps_run == []
    indexes = await core.db["posts"].index_information()
    assert indexes["org_listed"]["key"] == [("organizationId", 1), ("listedAt", -1), ("_id", -1)]
    assert "org_due" not in indexes


async def test_account_and_series_filters_page_with_tokens_bound_to_them(core: Core) -> None:
    for i in range(6):
        doc = _doc(f"s-{i}", START + i * DAY)
        doc["account"]["socialAccountId"] = f"sa_{i % 2}"
        if i < 2:
            doc["seriesUuid"] = "5e0c8f43-7d2a-4f41-9b1e-3c2a1d0e9f87"
        await core.store.insert(Post.from_doc(doc))
    first = await _list(core, social_account_id="sa_1", limit=2)
    assert _uuids(first) == ["s-5", "s-3"]
    assert [p.connected_account_id for p in first.posts] == ["sa_1", "sa_1"]
    rest = await _list(core, social_account_id="sa_1", limit=2, page_token=first.next_page_token)
    assert _uuids(rest) == ["s-1"] and rest.next_page_token == ""
    # A token is bound to its account filter, as to the others.
    with pytest.raises(InvalidArgument) as other:
        await _list(core, social_account_id="sa_0", page_token=first.next_page_token)
    assert str(other.value) == OTHER_QUERY
    series = await _list(core, series_uuid="5E0C8F43-7D2A-4F41-9B1E-3C2A1D0E9F87")
    assert _uuids(series) == ["s-1", "s-0"]
    assert {p.series_uuid for p in series.posts} == {"5e0c8f43-7d2a-4f41-9b1e-3c2a1d0e9f87"}
    both = await _list(core, social_account_id="sa_0", series_uuid=series.posts[0].series_uuid)
    assert _uuids(both) == ["s-0"]

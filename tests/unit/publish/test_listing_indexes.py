"""An index serves every ListPosts filter: on MongoDB the (organizationId, field, listedAt,
_id) index of the filter, on the embedded stand-in (mongoeco on SQLite, patched as the stack
runs it) the SQLite index made for that field; read from the stand-in's `explain`."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from mongoeco.engines.sqlite_query import json_path_for_field
from pymongo.asynchronous.database import AsyncDatabase

from publish_svc.listing import ListQuery
from publish_svc.model import Kind, Status
from publish_svc.post_params import params_doc
from publish_svc.records import LISTED_INDEX, LISTING_INDEXES, PostStore
from storypost_cli.embedded_mongo import (
    add_sqlite_indexes_for_mongo_indexes,
    index_name,
    skip_full_scan_for_plain_ids,
)
from storypost_runtime.mongo import Document
from tests.support.mongo import sqlite_mongo_database
from tests.unit.publish.fakes import params

NOW = datetime(2026, 11, 23, 10, 0, tzinfo=UTC)
SERIES = "5e0c8f43-7d2a-4f41-9b1e-3c2a1d0e9f87"


@pytest.fixture
async def embedded(tmp_path: Path) -> AsyncIterator[AsyncDatabase[Document]]:
    skip_full_scan_for_plain_ids()
    add_sqlite_indexes_for_mongo_indexes()
    async with sqlite_mongo_database(tmp_path / "db.sqlite") as database:
        yield database


EMPTY: dict[str, Any] = {
    "organization_id": "org1",
    "kinds": [],
    "statuses": [],
    "date_from": None,
    "date_to": None,
}
# A query of each filter, and the field whose index must answer it.
FILTERS: list[tuple[dict[str, Any], str]] = [
    ({}, "organizationId"),
    ({"kinds": [Kind.REEL]}, "kind"),
    ({"statuses": [Status.FAILED]}, "status"),
    ({"social_account_id": "sa_1"}, "account.socialAccountId"),
    ({"series_uuid": SERIES}, "seriesUuid"),
]


async def test_each_filter_has_its_mongodb_index(embedded: AsyncDatabase[Document]) -> None:
    await PostStore(embedded["posts"], lambda: None).ensure_indexes()
    indexes = await embedded["posts"].index_information()
    listed = [("listedAt", -1), ("_id", -1)]
    assert indexes[LISTED_INDEX]["key"] == [("organizationId", 1), *listed]
    for field, name in LISTING_INDEXES:
        assert indexes[name]["key"] == [("organizationId", 1), (field, 1), *listed]
    assert {field for field, _ in LISTING_INDEXES} == {f for _, f in FILTERS[1:]}


def _post(i: int) -> Document:
    kind = Kind.STORY if i % 2 else Kind.REEL
    date = NOW + timedelta(minutes=i)
    return {
        "_id": f"{kind.value}:org{i % 3}:{i:04d}",
        "organizationId": f"org{i % 3}",
        "kind": kind.value,
        "postUuid": f"{i:04d}",
        "status": "scheduled" if i % 5 else "failed",
        "account": {
            "socialAccountId": f"sa_{i % 4}",
            "platform": "PHOTOAPP",
            "platformAccountId": "1",
            "username": "alice",
        },
        "params": params_doc(params(kind)),
        "date": date,
        "dueAt": date,
        "createdAt": NOW,
        "listedAt": date,
        **({"seriesUuid": SERIES} if i % 7 == 0 else {}),
    }


@pytest.mark.parametrize(("filters", "field"), FILTERS)
async def test_the_stand_in_answers_each_filter_from_an_index(
    embedded: AsyncDatabase[Document], filters: dict[str, Any], field: str
) -> None:
    posts = embedded["posts"]
    store = PostStore(posts, lambda: None)
    await store.ensure_indexes()
    await posts.insert_many([_post(i) for i in range(60)])
    seen: list[Any] = []
    find = posts.find

    def spying(*args: Any, **kwargs: Any) -> Any:
        cursor = find(*args, **kwargs)
        seen.append(cursor)
        return cursor

    posts.find = spying  # type: ignore[method-assign]
    try:
        page, _ = await store.list(ListQuery(**{**EMPTY, **filters}), None, 5)
    finally:
        del posts.find
    assert page
    plan = (await seen[0].clone().explain())["details"]["engine_details"]
    # The field's own SQLite index, or the one of its MongoDB index (organizationId, field,
    # listedAt, _id): either finds the page's documents without reading the others.
    compound = ["organizationId", *([field] if field != "organizationId" else [])]
    compound += ["listedAt", "_id"]
    expected = {
        index_name("ptx", "storypost", "posts", json_path_for_field(field)),
        index_name("px", "storypost", "posts", *map(json_path_for_field, compound)),
    }
    used = plan[0].removeprefix("SEARCH documents USING INDEX ").split(" ")[0]
    assert used in expected, plan

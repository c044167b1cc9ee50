"""Issue 51 item 2: publish-svc killed (kill -9) while its series worker creates the next
occurrences of many series. After a restart every series has each occurrence exactly once
(none lost, none doubled), under the UUID a caller computes, and each first post was
published once."""

from __future__ import annotations

import datetime as dt
import uuid
from typing import Any

import pytest
from pymongo.asynchronous.database import AsyncDatabase

from storypost.testing.stack import StackHandle
from tests.reliability.support import FIGURES, username
from tests.support.accounts import connect_account, published
from tests.support.api import Api, Org
from tests.support.polling import wait_until

# Two minutes of kills: `make reliability` runs it (the unit test
# tests/unit/publish/test_series.py kills the worker between creating and advancing in every
# `make test`).
pytestmark = [pytest.mark.integration, pytest.mark.reliability_long]

ACCOUNTS = 3
SERIES_PER_ACCOUNT = 10  # the most active series an account may have
STORY = (
    "<photoapp-story></photoapp-story><div style='width:1080px;height:1920px;"
    "background:#36a'><h1 style='font:bold 90px sans-serif;color:#fff'>Again</h1></div>"
)


async def status_series(api: Api, org: Org, key: str) -> dict[str, Any]:
    """status-series, as a caller asks it (again after a 429)."""

    async def ask() -> dict[str, Any] | None:
        answer = await api.call(org, "status-series", {"seriesUuid": key})
        if answer.status_code == 429:
            return None
        assert answer.status_code == 200, answer.text
        view: dict[str, Any] = answer.json()
        return view

    return await wait_until(ask, 120, f"status-series {key}", every=1.0)


def at(moment: dt.datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


@pytest.mark.timeout(600)
async def test_publish_killed_while_creating_occurrences_loses_none_and_doubles_none(
    rel_stack: StackHandle, rel_api: Api, rel_db: AsyncDatabase[dict[str, Any]]
) -> None:
    org = await rel_api.admin.create_org("series crash org")
    users = [username() for _ in range(ACCOUNTS)]
    for user in users:
        await connect_account(rel_stack, org, "photoapp", user)
    first = dt.datetime.now(dt.UTC).replace(microsecond=0) + dt.timedelta(seconds=40)
    series: dict[str, str] = {}  # series uuid -> user
    for user in users:
        for _ in range(SERIES_PER_ACCOUNT):
            body = {
                "storyPostUuid": str(uuid.uuid4()),
                "photoappUsername": user,
                "html": STORY,
                "date": at(first),
                "repeat": {"every": "P1D", "count": 2},
            }
            answer = await rel_api.call(org, "schedule-photoapp-story", body)
            assert answer.status_code == 200, answer.text
            series[answer.json()["seriesUuid"]] = user
    second = {s: str(uuid.uuid5(uuid.UUID(s), "1")) for s in series}
    query = {"organizationId": org.organization_id, "postUuid": {"$in": list(second.values())}}

    async def creating() -> int | None:
        made = await rel_db["posts"].count_documents(query)
        return made if made else None

    # Kill it as soon as the first occurrence is stored, while the others are being made.
    before = await wait_until(creating, 120, "the first occurrence", every=0.02)
    await rel_stack.processes.kill("publish")
    at_kill = await rel_db["posts"].count_documents(query)
    advanced = await rel_db["series"].count_documents(
        {"organizationId": org.organization_id, "nextIndex": 2}
    )
    await rel_stack.processes.start_component("publish")

    async def all_finished() -> int | None:
        finished = await rel_db["series"].count_documents(
            {"organizationId": org.organization_id, "status": "finished"}
        )
        return finished if finished == len(series) else None

    await wait_until(all_finished, 180, "every series to finish", every=0.5)
    views = [await status_series(rel_api, org, key) for key in series]
    FIGURES["series crash: occurrences made before the kill"] = (
        f"{before} seen, {at_kill} stored and {advanced} series advanced at the kill, "
        f"of {len(series)}"
    )
    for view in views:
        key = view["seriesUuid"]
        uuids = [o["uuid"] for o in view["occurrences"]]
        assert len(uuids) == 2 and uuids[1] == second[key], view
        assert view["occurrences"][1]["date"] == at(first + dt.timedelta(days=1)), view
        assert view["occurrences"][1]["status"] == "scheduled", view
    for key in series:
        assert (
            await rel_db["posts"].count_documents(
                {"organizationId": org.organization_id, "seriesUuid": key}
            )
            == 2
        ), key
    records = rel_db["series"].find({"organizationId": org.organization_id})
    assert [doc["nextIndex"] async for doc in records] == [2] * len(series)

    async def first_posts_published() -> bool | None:
        counts = [len(await published(rel_stack, "photoapp", user)) for user in users]
        return True if counts == [SERIES_PER_ACCOUNT] * ACCOUNTS else None

    await wait_until(first_posts_published, 120, "every first post published once")

"""Issue #12 item 1: 50 concurrent identical calls of every create/schedule procedure give
exactly one record and 50 identical successful answers."""

from __future__ import annotations

import asyncio
import base64
import json
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from pymongo.asynchronous.database import AsyncDatabase

from storypost.testing.stack import StackHandle
from tests.reliability.support import FIGURES, IMAGE_STORY, future, username, video_story
from tests.support.accounts import connect_account
from tests.support.api import Api, Org, upload_blob
from tests.support.videos import make_video

pytestmark = pytest.mark.integration

CALLS = 50
Db = AsyncDatabase[dict[str, Any]]


@dataclass(frozen=True)
class Case:
    """A procedure, its body (built per organization) and where its one record lives."""

    procedure: str
    uuid_field: str
    body: Callable[[Org, str], Awaitable[dict[str, Any]]]
    # collection and the query of the record, given the organization and the UUID
    record: Callable[[Org, str], tuple[str, dict[str, Any]]]


def by_field(collection: str, field: str) -> Callable[[Org, str], tuple[str, dict[str, Any]]]:
    return lambda org, key: (collection, {"organizationId": org.organization_id, field: key})


def post(kind: str) -> Callable[[Org, str], tuple[str, dict[str, Any]]]:
    return lambda org, key: ("posts", {"_id": f"{kind}:{org.organization_id}:{key}"})


def cases(stack: StackHandle, api: Api, video: Path) -> list[Case]:
    png = base64.b64encode(video.with_suffix(".png").read_bytes()).decode()

    async def connect_link(org: Org, key: str) -> dict[str, Any]:
        return {"connectLinkUuid": key, "description": "race"}

    async def upload_url(org: Org, key: str) -> dict[str, Any]:
        return {"tempBlobUuid": key, "contentType": "image/png", "contentLengthBytes": 4096}

    async def inline(org: Org, key: str) -> dict[str, Any]:
        return {"tempBlobUuid": key, "contentBase64": png, "contentType": "image/png"}

    async def draft(org: Org, key: str) -> dict[str, Any]:
        return {"draftUuid": key, "html": IMAGE_STORY, "name": "race"}

    async def story(org: Org, key: str) -> dict[str, Any]:
        name = username()
        await connect_account(stack, org, "photoapp", name)
        return {
            "storyPostUuid": key,
            "photoappUsername": name,
            "html": IMAGE_STORY,
            "date": future(3600),
        }

    async def reel(org: Org, key: str) -> dict[str, Any]:
        name = username()
        await connect_account(stack, org, "photoapp", name)
        src = await upload_blob(api, org, video.read_bytes(), "video/mp4")
        return {
            "reelPostUuid": key,
            "photoappUsername": name,
            "html": video_story(src),
            "caption": "race",
            "date": future(3600),
        }

    async def clipapp(org: Org, key: str) -> dict[str, Any]:
        account = await connect_account(stack, org, "clipapp", username())
        return {
            "clipappPostUuid": key,
            "clipappAccountId": account.platform_account_id,
            "html": IMAGE_STORY,
            "title": "race",
            "date": future(3600),
        }

    async def social(org: Org, key: str) -> dict[str, Any]:
        account = await connect_account(stack, org, "linknet", username(), connection="social")
        return {
            "socialPostUuid": key,
            "socialAccountId": account.social_account_id,
            "postType": "IMAGE_POST",
            "html": IMAGE_STORY,
            "text": "race",
            "date": future(3600),
        }

    return [
        Case("create-connect-link", "connectLinkUuid", connect_link,
             by_field("connect_links", "uuid")),
        Case("create-temp-blob-upload-url", "tempBlobUuid", upload_url,
             by_field("temp_blobs", "tempBlobUuid")),
        Case("upload-temp-blob", "tempBlobUuid", inline, by_field("temp_blobs", "tempBlobUuid")),
        Case("create-draft", "draftUuid", draft, by_field("drafts", "draftUuid")),
        Case("schedule-photoapp-story", "storyPostUuid", story, post("story")),
        Case("schedule-photoapp-reel", "reelPostUuid", reel, post("reel")),
        Case("schedule-clipapp-post", "clipappPostUuid", clipapp, post("clipapp")),
        Case("schedule-social-post", "socialPostUuid", social, post("social")),
    ]  # fmt: skip


PROCEDURES = [
    "create-connect-link",
    "create-temp-blob-upload-url",
    "upload-temp-blob",
    "create-draft",
    "schedule-photoapp-story",
    "schedule-photoapp-reel",
    "schedule-clipapp-post",
    "schedule-social-post",
]


@pytest.fixture(scope="module")
def race_video(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("race-media")
    path = make_video(root / "clip.mp4", seconds=1)
    # A small PNG next to it for the inline blob.
    import subprocess

    subprocess.run(
        ["ffmpeg", "-v", "error", "-y", "-f", "lavfi", "-i", "color=c=red:s=32x32",
         "-frames:v", "1", str(path.with_suffix(".png"))],
        check=True, timeout=60,
    )  # fmt: skip
    return path


@pytest.mark.parametrize("procedure", PROCEDURES)
async def test_fifty_identical_concurrent_calls_make_one_record(
    rel_stack: StackHandle,
    rel_api: Api,
    rel_org: Org,
    rel_db: Db,
    race_video: Path,
    procedure: str,
) -> None:
    case = next(c for c in cases(rel_stack, rel_api, race_video) if c.procedure == procedure)
    key = str(uuid.uuid4())
    body = await case.body(rel_org, key)
    started = time.monotonic()
    answers = await asyncio.gather(*(rel_api.call(rel_org, procedure, body) for _ in range(CALLS)))
    FIGURES[f"race: {CALLS} x {procedure}"] = f"{time.monotonic() - started:.1f} s"

    assert [a.status_code for a in answers] == [200] * CALLS, [
        a.text for a in answers if a.status_code != 200
    ]
    bodies = {json.dumps(a.json(), sort_keys=True) for a in answers}
    assert len(bodies) == 1, f"{len(bodies)} different answers: {sorted(bodies)[:3]}"
    answer = answers[0].json()
    assert answer[case.uuid_field] == key
    collection, query = case.record(rel_org, key)
    assert await rel_db[collection].count_documents(query) == 1
    if procedure == "create-draft":
        # One draft, rendered once: one first version.
        versions = rel_db["draft_versions"]
        assert await versions.count_documents({"organizationId": rel_org.organization_id}) == 1
    if procedure.startswith("schedule-"):
        # One post, prepared once, with exactly one `scheduled` event.
        doc = await rel_db["posts"].find_one(query)
        assert doc is not None and doc["status"] == "scheduled"
        renderings = await rel_db["renderings"].count_documents(
            {"organizationId": rel_org.organization_id}
        )
        assert renderings == 1
    # A later repeat still answers the same.
    again = await rel_api.call(rel_org, procedure, body)
    assert again.status_code == 200 and again.json() == answer

"""Issue #12 item 7 (isolation): organization A's token never reaches B — not on B's base
URL, not through B's UUIDs on A's own base URL — and B's records stay as they were."""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from typing import Any

import pytest

from edge.catalog import build_catalog
from storypost.testing.stack import StackHandle
from tests.reliability.support import IMAGE_STORY, future, username, video_story
from tests.support.accounts import connect_account
from tests.support.api import Api, Org, upload_blob
from tests.support.videos import make_video

pytestmark = pytest.mark.integration

ALL_PROCEDURES = [procedure.name for procedure in build_catalog().procedures]


@dataclass
class World:
    """Organization B with one resource of every kind, and what A may never see of it."""

    b: Org
    photoapp: str
    clipapp_id: str
    social_id: str
    uuids: dict[str, str]
    answers: dict[str, dict[str, Any]]

    def secrets(self) -> list[str]:
        """Strings only B's answers carry: none may appear in an answer to A."""
        found = [self.b.organization_id, self.b.token, self.photoapp, self.clipapp_id]
        found += [str(a.get("url") or a.get("connectLinkUrl") or "") for a in self.answers.values()]
        return [s for s in found if s]


@pytest.fixture(scope="module")
async def world(
    rel_stack: StackHandle, rel_api: Api, tmp_path_factory: pytest.TempPathFactory
) -> World:
    b = await rel_api.admin.create_org("organization B")
    photoapp = username()
    await connect_account(rel_stack, b, "photoapp", photoapp)
    clipapp = await connect_account(rel_stack, b, "clipapp", username())
    social = await connect_account(rel_stack, b, "linknet", username(), connection="social")
    video = make_video(tmp_path_factory.mktemp("isolation") / "clip.mp4", seconds=1)
    src = await upload_blob(rel_api, b, video.read_bytes(), "video/mp4")
    uuids = {k: str(uuid.uuid4()) for k in (
        "draftUuid", "tempBlobUuid", "connectLinkUuid", "storyPostUuid", "reelPostUuid",
        "clipappPostUuid", "socialPostUuid")}  # fmt: skip
    later = future(3600)
    calls = {
        "create-draft": {"draftUuid": uuids["draftUuid"], "html": IMAGE_STORY},
        "upload-temp-blob": {"tempBlobUuid": uuids["tempBlobUuid"], "contentType": "image/png",
                             "contentBase64": "iVBORw0KGgo="},
        "create-connect-link": {"connectLinkUuid": uuids["connectLinkUuid"]},
        "schedule-photoapp-story": {"storyPostUuid": uuids["storyPostUuid"], "html": IMAGE_STORY,
                                    "photoappUsername": photoapp, "date": later},
        "schedule-photoapp-reel": {"reelPostUuid": uuids["reelPostUuid"], "date": later,
                                   "html": video_story(src), "photoappUsername": photoapp},
        "schedule-clipapp-post": {"clipappPostUuid": uuids["clipappPostUuid"], "date": later,
                                  "html": IMAGE_STORY,
                                  "clipappAccountId": clipapp.platform_account_id},
        "schedule-social-post": {"socialPostUuid": uuids["socialPostUuid"], "date": later,
                                 "html": IMAGE_STORY, "postType": "IMAGE_POST",
                                 "socialAccountId": social.social_account_id, "text": "B"},
    }  # fmt: skip
    answers = {}
    for procedure, body in calls.items():
        answer = await rel_api.call(b, procedure, body)
        assert answer.status_code == 200, (procedure, answer.text)
        answers[procedure] = answer.json()
    return World(b, photoapp, clipapp.platform_account_id, social.social_account_id, uuids, answers)


async def b_state(api: Api, world: World) -> dict[str, Any]:
    """Every status of B's resources, as B sees them."""
    state = {}
    for procedure, key in (
        ("status-draft", "draftUuid"),
        ("status-photoapp-story", "storyPostUuid"),
        ("status-photoapp-reel", "reelPostUuid"),
        ("status-clipapp-post", "clipappPostUuid"),
        ("status-social-post", "socialPostUuid"),
    ):
        answer = await api.call(world.b, procedure, {key: world.uuids[key]})
        assert answer.status_code == 200, answer.text
        state[procedure] = {k: v for k, v in answer.json().items() if k != "previewUrl"}
    return state


async def test_a_token_on_another_organizations_base_url_is_401_everywhere(
    rel_api: Api, rel_org: Org, world: World
) -> None:
    b_base = world.b.base_url
    for procedure in ALL_PROCEDURES:
        answer = await rel_api.post(f"{b_base}/{procedure}", json={}, headers=rel_api.auth(rel_org))
        assert answer.status_code == 401, (procedure, answer.text)
        assert answer.json() == {"errorMessage": "not authenticated"}
        assert "RateLimit-Remaining" not in answer.headers


async def test_b_uuids_on_a_base_url_are_not_found_and_change_nothing(
    rel_api: Api, rel_org: Org, world: World
) -> None:
    before = await b_state(rel_api, world)
    u = world.uuids
    lookups = [
        ("status-draft", "draftUuid"), ("delete-draft", "draftUuid"),
        ("status-photoapp-story", "storyPostUuid"), ("cancel-photoapp-story", "storyPostUuid"),
        ("status-photoapp-reel", "reelPostUuid"), ("cancel-photoapp-reel", "reelPostUuid"),
        ("status-clipapp-post", "clipappPostUuid"), ("cancel-clipapp-post", "clipappPostUuid"),
        ("status-social-post", "socialPostUuid"), ("cancel-social-post", "socialPostUuid"),
    ]  # fmt: skip
    for procedure, key in lookups:
        answer = await rel_api.call(rel_org, procedure, {key: u[key]})
        assert answer.status_code == 400, (procedure, answer.text)
        message = answer.json()["errorMessage"]
        assert "not found" in message, (procedure, message)
        leaked = [s for s in world.secrets() if s in answer.text]
        assert not leaked, (procedure, leaked)
    assert await b_state(rel_api, world) == before


async def test_b_uuids_in_a_creates_make_a_own_resources(
    rel_stack: StackHandle, rel_api: Api, rel_org: Org, world: World, rel_db: Any
) -> None:
    """A UUID is unique per organization: A reusing B's UUIDs creates A's own records and
    never gets B's back."""
    before = await b_state(rel_api, world)
    u = world.uuids
    # A connects the same platform accounts (accounts can serve several organizations).
    await connect_account(rel_stack, rel_org, "photoapp", world.photoapp)
    calls: list[tuple[str, dict[str, Any]]] = [
        ("create-draft", {"draftUuid": u["draftUuid"], "html": IMAGE_STORY}),
        ("upload-temp-blob", {"tempBlobUuid": u["tempBlobUuid"], "contentType": "image/png",
                              "contentBase64": "iVBORw0KGgo="}),
        ("create-temp-blob-upload-url", {"tempBlobUuid": u["tempBlobUuid"],
                                         "contentType": "image/png", "contentLengthBytes": 8}),
        ("create-connect-link", {"connectLinkUuid": u["connectLinkUuid"]}),
        ("schedule-photoapp-story", {"storyPostUuid": u["storyPostUuid"], "html": IMAGE_STORY,
                                     "photoappUsername": world.photoapp, "date": future(3600)}),
    ]  # fmt: skip
    for procedure, body in calls:
        answer = await rel_api.call(rel_org, procedure, body)
        assert answer.status_code == 200, (procedure, answer.text)
        text = json.dumps(answer.json())
        b_answer = world.answers.get(procedure)
        if b_answer is not None and procedure.startswith("create-"):
            assert answer.json() != b_answer  # A's own URL, not B's
        for secret in world.secrets():
            if secret != world.photoapp:
                assert secret not in text, (procedure, secret)
        for link in ("url", "editorUrl", "connectLinkUrl"):
            if link in answer.json() and "/o/" in answer.json()[link]:
                assert f"/o/{rel_org.organization_id}/" in answer.json()[link]
    # A scheduling with B's clipapp/social accounts: unknown to A.
    refused = [
        ("schedule-clipapp-post", {"clipappPostUuid": u["clipappPostUuid"], "html": IMAGE_STORY,
                                   "clipappAccountId": world.clipapp_id}),
        ("schedule-social-post", {"socialPostUuid": u["socialPostUuid"], "html": IMAGE_STORY,
                                  "postType": "IMAGE_POST", "socialAccountId": world.social_id}),
    ]  # fmt: skip
    for procedure, body in refused:
        answer = await rel_api.call(rel_org, procedure, body)
        assert answer.status_code == 400, (procedure, answer.text)
    # Lists show only A's own accounts.
    users = (await rel_api.call(rel_org, "list-photoapp-users", {})).json()["photoappUsers"]
    assert [u["photoappUsername"] for u in users] == [world.photoapp]  # A's own connection
    assert world.clipapp_id not in (await rel_api.call(rel_org, "list-clipapp-accounts", {})).text
    assert world.social_id not in (await rel_api.call(rel_org, "list-social-accounts", {})).text
    # Two stories with one UUID: B's and A's own.
    post_ids = {
        f"story:{o}:{u['storyPostUuid']}"
        for o in (world.b.organization_id, rel_org.organization_id)
    }
    assert await rel_db["posts"].count_documents({"_id": {"$in": sorted(post_ids)}}) == 2
    assert await b_state(rel_api, world) == before


async def test_b_blob_url_under_a_organization_is_404(
    rel_api: Api, rel_org: Org, world: World
) -> None:
    url = str(world.answers["upload-temp-blob"]["url"])
    assert (await rel_api.get(url)).status_code == 302
    crossed = url.replace(f"/o/{world.b.organization_id}/", f"/o/{rel_org.organization_id}/")
    answer = await rel_api.get(crossed)
    assert answer.status_code == 404 and answer.json()["errorMessage"]

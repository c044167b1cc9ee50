"""Drafts: the lifecycle through the API, versions, user posts, and the rolling quota."""

from __future__ import annotations

import asyncio
import subprocess
import uuid
from datetime import UTC, datetime
from typing import Any

import grpc
import httpx
import pytest

from storypost.render.v1 import render_pb2 as pb
from storypost.render.v1 import render_pb2_grpc
from storypost.testing.stack import StackHandle
from tests.integration.render.conftest import QUOTA, Videos
from tests.integration.render.rendering import story_page
from tests.integration.render.support import decode_rgb, mean_color, probe
from tests.support.api import Api, Org, upload_blob
from tests.support.mongo import stack_database

pytestmark = pytest.mark.integration


def png(color: str) -> bytes:
    return subprocess.run(
        ["ffmpeg", "-v", "error", "-f", "lavfi", "-i", f"color=c={color}:s=108x192", "-frames:v",
         "1", "-f", "image2pipe", "-c:v", "png", "-"],
        capture_output=True, check=True, timeout=60,
    ).stdout  # fmt: skip


async def set_user_post(
    render: render_pb2_grpc.RenderServiceAsyncStub,
    org: Org,
    draft_uuid: str,
    state: pb.DraftUserPost.ValueType,
) -> None:
    """What the app tells render-svc when a user schedules (or cancels) a post of a draft."""
    await render.SetDraftUserPost(
        pb.SetDraftUserPostRequest(
            organization_id=org.organization_id,
            draft_uuid=draft_uuid,
            user_post=state,
            public_app_url="http://app.test/o/x",
        )
    )


def background_page(image_url: str, stickers: str = "") -> str:
    return story_page(
        stickers, background=f"url({image_url}) center / cover no-repeat, #000000", top=300
    )


async def wait_ready(api: Api, org: Org, draft_uuid: str) -> dict[str, Any]:
    for _ in range(300):
        status = await api.call(org, "status-draft", {"draftUuid": draft_uuid})
        assert status.status_code == 200, status.text
        body: dict[str, Any] = status.json()
        if body["status"] != "rendering":
            return body
        await asyncio.sleep(0.2)
    raise AssertionError("the draft is still rendering")


async def preview_color(url: str) -> tuple[float, float, float]:
    async with httpx.AsyncClient(timeout=30) as client:
        jpeg = (await client.get(url)).content
    assert probe(jpeg)["width"] == "1080" and probe(jpeg)["height"] == "1920"
    return mean_color(decode_rgb(jpeg, 27, 48))


async def test_a_draft_from_create_to_delete(
    api: Api, fresh_org: Org, stack_render: render_pb2_grpc.RenderServiceAsyncStub
) -> None:
    org = fresh_org
    red = await upload_blob(api, org, png("#d01010"), "image/png")
    draft_uuid = str(uuid.uuid4())
    body = {
        "draftUuid": draft_uuid,
        "html": background_page(red, '<photoapp-hashtag hashtag="draft"></photoapp-hashtag>'),
        "name": "Summer sale - day 1",
        "folderName": "Campaigns 2026",
    }
    created = await api.call(org, "create-draft", body)
    assert created.status_code == 200, created.text
    editor = f"{org.base_url.removesuffix('/api/v1')}/drafts/{draft_uuid}"
    # The blob came from S3 directly (the loopback edge is off limits): no warning.
    assert created.json() == {"draftUuid": draft_uuid, "editorUrl": editor}
    ready = await wait_ready(api, org, draft_uuid)
    assert ready["status"] == "ready" and ready["editorUrl"] == editor
    r, g, b = await preview_color(ready["previewUrl"])
    assert r > 150 and g < 80 and b < 80, "the uploaded red background is in the preview"
    assert (await api.call(org, "create-draft", body)).json() == created.json()

    # The app saves a new version: status-draft reports it.
    blue = await upload_blob(api, org, png("#1030d0"), "image/png")
    saved = await stack_render.SaveDraftVersion(
        pb.SaveDraftVersionRequest(
            organization_id=org.organization_id,
            draft_uuid=draft_uuid,
            version_uuid=str(uuid.uuid4()),
            design=pb.Design(html=background_page(blue)),
            public_app_url=org.base_url.removesuffix("/api/v1"),
        ),
        timeout=100,
    )
    assert saved.version == 2
    ready = await wait_ready(api, org, draft_uuid)
    r, g, b = await preview_color(ready["previewUrl"])
    assert b > 150 and r < 80, "the latest version's preview"
    design = await stack_render.GetDraftDesign(
        pb.GetDraftRequest(organization_id=org.organization_id, draft_uuid=draft_uuid)
    )
    assert blue in design.html
    listed = await stack_render.ListDrafts(
        pb.ListDraftsRequest(
            organization_id=org.organization_id,
            folder_name="Campaigns 2026",
            public_app_url="http://app.test/o/x",
        )
    )
    assert [(d.draft_uuid, d.name, d.version) for d in listed.drafts] == [
        (draft_uuid, "Summer sale - day 1", 2)
    ]
    folders = await stack_render.ListDraftFolders(
        pb.ListDraftFoldersRequest(organization_id=org.organization_id)
    )
    assert list(folders.folder_names) == ["Campaigns 2026"]

    # A user scheduled it in the app: the API may not delete it.
    await set_user_post(stack_render, org, draft_uuid, pb.DRAFT_USER_POST_SCHEDULED)
    refused = await api.call(org, "delete-draft", {"draftUuid": draft_uuid})
    assert refused.status_code == 400
    assert refused.json()["errorMessage"] == (
        "a user already scheduled or posted this draft; cancel the post in the app first"
    )
    assert (await wait_ready(api, org, draft_uuid))["status"] == "ready"
    await set_user_post(stack_render, org, draft_uuid, pb.DRAFT_USER_POST_NONE)
    for _ in range(2):
        deleted = await api.call(org, "delete-draft", {"draftUuid": draft_uuid})
        assert deleted.json() == {"draftUuid": draft_uuid, "status": "deleted"}
    status = await api.call(org, "status-draft", {"draftUuid": draft_uuid})
    assert status.json() == {"draftUuid": draft_uuid, "status": "deleted"}


async def test_warnings_unknown_drafts_and_video_rules(api: Api, org: Org, videos: Videos) -> None:
    draft_uuid = str(uuid.uuid4())
    created = await api.call(
        org,
        "create-draft",
        {"draftUuid": draft_uuid, "html": story_page("<photoapp-gif></photoapp-gif>")},
    )
    assert created.json()["warnings"] == ["unknown element <photoapp-gif> is ignored"]
    unknown = await api.call(org, "status-draft", {"draftUuid": str(uuid.uuid4())})
    assert unknown.status_code == 400 and "not found" in unknown.json()["errorMessage"]

    long_video = await upload_blob(api, org, videos.long.read_bytes(), "video/mp4")
    video_uuid = str(uuid.uuid4())
    too_long = await api.call(
        org,
        "create-draft",
        {
            "draftUuid": video_uuid,
            "html": story_page("", background="#000").replace(
                "<photoapp-story>", f'<photoapp-story src="{long_video}">'
            ),
        },
    )
    assert too_long.status_code == 400
    assert too_long.json()["errorMessage"] == (
        "video does not meet the requirements: the video is too long: 61 s; a draft video may "
        "be at most 60 s"
    )
    assert (await api.call(org, "status-draft", {"draftUuid": video_uuid})).status_code == 400


async def test_the_101st_draft_of_a_day_is_a_429(
    api: Api, fresh_org: Org, storypost_stack: StackHandle
) -> None:
    now = datetime.now(UTC)
    org_id = fresh_org.organization_id
    async with stack_database(storypost_stack.env, tz_aware=True) as database:
        # 100 drafts earlier today (deleted or not, they hold the quota's slots).
        await database["draft_quota_slots"].insert_one(
            {"_id": org_id, "organizationId": org_id,
             "slots": [{"t": now, "post": str(uuid.uuid4())} for _ in range(100)]}
        )  # fmt: skip
    draft_uuid = str(uuid.uuid4())
    refused = await api.call(
        fresh_org, "create-draft", {"draftUuid": draft_uuid, "html": story_page("<p>one more</p>")}
    )
    assert refused.status_code == 429
    body = refused.json()
    assert body["errorCode"] == "QUOTA_EXCEEDED"
    assert body["errorMessage"].startswith(
        "draft quota exceeded: at most 100 drafts per organization in any rolling 24 hours "
        "(deleted drafts count)"
    )
    assert 86000 <= int(refused.headers["Retry-After"]) <= 86400
    assert (await api.call(fresh_org, "status-draft", {"draftUuid": draft_uuid})).status_code == 400


def create(org: str, draft_uuid: str, html: str) -> pb.CreateDraftRequest:
    return pb.CreateDraftRequest(
        organization_id=org,
        draft_uuid=draft_uuid,
        design=pb.Design(html=html),
        public_app_url=f"http://app.test/o/{org}",
    )


async def outcome(call: Any) -> str:
    try:
        await call
    except grpc.aio.AioRpcError as error:
        return error.code().name
    return "OK"


async def test_the_quota_holds_under_concurrent_creates_and_deleted_drafts_count(
    render: render_pb2_grpc.RenderServiceAsyncStub,
) -> None:
    org = f"quota-{uuid.uuid4().hex[:8]}"
    html = story_page("<h1>quota</h1>")
    # A create whose mention lookup is busy fails with 429 and keeps no slot.
    busy = story_page('<photoapp-mention username="busy_one"></photoapp-mention>')
    busy_uuid = str(uuid.uuid4())
    assert await outcome(render.CreateDraft(create(org, busy_uuid, busy))) == "RESOURCE_EXHAUSTED"
    get_busy = pb.GetDraftRequest(
        organization_id=org, draft_uuid=busy_uuid, public_app_url="http://a/o/b"
    )
    assert await outcome(render.GetDraft(get_busy)) == "NOT_FOUND"
    # Two identical creates racing make one draft and hold one slot.
    same = str(uuid.uuid4())
    twins = await asyncio.gather(
        render.CreateDraft(create(org, same, html)), render.CreateDraft(create(org, same, html))
    )
    assert twins[0].draft_uuid == twins[1].draft_uuid == same
    # QUOTA - 1 slots are left; more creates than that race for them.
    results = await asyncio.gather(
        *(
            outcome(render.CreateDraft(create(org, str(uuid.uuid4()), html)))
            for _ in range(QUOTA + 1)
        )
    )
    assert sorted(results) == ["OK"] * (QUOTA - 1) + ["RESOURCE_EXHAUSTED"] * 2
    deleted = await render.DeleteDraft(
        pb.DeleteDraftRequest(organization_id=org, draft_uuid=same, public_app_url="http://a/o/b")
    )
    assert deleted.status == pb.DRAFT_STATUS_DELETED and deleted.editor_url == ""
    with pytest.raises(grpc.aio.AioRpcError) as raised:
        await render.CreateDraft(create(org, str(uuid.uuid4()), html))
    assert raised.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert "deleted drafts count" in (raised.value.details() or "")
    # Repeating an existing draft's create never needs a slot.
    assert (await render.CreateDraft(create(org, same, html))).status == pb.DRAFT_STATUS_DELETED

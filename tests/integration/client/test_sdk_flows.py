"""Every procedure through the SDK against the real stack, end to end: connect links and
listings, uploads, drafts, stories, reels, clipapp and social posts on the sandbox network."""

from __future__ import annotations

import asyncio
import base64
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx

from storypost.testing.stack import StackHandle
from storypost_client import AsyncStorypostClient, PollPolicy
from storypost_client.generated.types import ListSocialAccountsResponse, PostType, SocialAccount
from tests.integration.client.conftest import Storypost, async_client, connect_sandbox_account
from tests.support.api import Org
from tests.support.videos import make_video

PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
)
IMAGE_PAGE = (
    "<!doctype html><html><body style='margin:0;width:1080px;height:1920px;"
    "background:linear-gradient(160deg,#ff7a59,#ffb347)'><photoapp-story>"
    "<h1 style='font-size:96px;color:#fff'>SDK test</h1>"
    '<photoapp-hashtag hashtag="sdk" design="rainbow"></photoapp-hashtag>'
    "</photoapp-story></body></html>"
)
# Polls fast enough for tests, still with backoff.
POLL = PollPolicy(initial_interval=0.5, multiplier=1.5, max_interval=3.0, timeout=240.0)


def client_of(org: Org) -> AsyncStorypostClient:
    return async_client(org, poll=POLL)


def microblog_image_post(listed: ListSocialAccountsResponse) -> tuple[SocialAccount, PostType]:
    """From `list-social-accounts`: the MICROBLOG account and its image post type for
    `schedule-social-post`."""
    account = next(a for a in listed["socialAccounts"] if a["platform"] == "MICROBLOG")
    post_type = next(
        t
        for t in account.get("postTypes", [])
        if t["media"] == "image" and t["procedure"] == "schedule-social-post"
    )
    return account, post_type


async def fetch(url: str) -> httpx.Response:
    async with httpx.AsyncClient(follow_redirects=True, timeout=30.0) as http:
        return await http.get(url)


async def test_connect_links_are_idempotent(fresh_org: Org) -> None:
    link = str(uuid.uuid4())
    async with client_of(fresh_org) as client:
        first = await client.create_connect_link(connect_link_uuid=link, description="Lisbon")
        again = await client.create_connect_link(connect_link_uuid=link, description="Lisbon")
        other = await client.create_connect_link()
    assert first == again
    assert first["connectLinkUuid"] == link
    assert first["connectLinkUrl"].startswith("http")
    assert uuid.UUID(other["connectLinkUuid"]).version == 4
    assert other["connectLinkUrl"] != first["connectLinkUrl"]


async def test_listings_show_connected_sandbox_accounts(
    storypost: Storypost, storypost_stack: StackHandle, fresh_org: Org
) -> None:
    photoapp = await connect_sandbox_account(storypost, storypost_stack, fresh_org, "photoapp")
    clipapp = await connect_sandbox_account(storypost, storypost_stack, fresh_org, "clipapp")
    async with client_of(fresh_org) as client:
        users, clipapps, social = await asyncio.gather(
            client.list_photoapp_users(),
            client.list_clipapp_accounts(),
            client.list_social_accounts(),
        )
    assert [u["photoappUsername"] for u in users["photoappUsers"]] == [photoapp["username"]]
    assert len(clipapps["clipappAccounts"]) == 1
    platforms = {(a["platform"], a["connection"]) for a in social["socialAccounts"]}
    assert {("PHOTOAPP", "direct"), ("CLIPAPP", "direct")} <= platforms
    assert clipapp["username"]


async def test_upload_file_presigned_existing_and_inline(fresh_org: Org, tmp_path: Path) -> None:
    image = tmp_path / "pixel.png"
    image.write_bytes(PNG)
    progress: list[tuple[int, int]] = []
    blob = str(uuid.uuid4())
    async with client_of(fresh_org) as client:
        uploaded = await client.upload_file(
            image, progress=lambda sent, total: progress.append((sent, total)), temp_blob_uuid=blob
        )
        again = await client.upload_file(image, temp_blob_uuid=blob)
        inline = await client.upload_file(image, method="inline")
    assert uploaded["method"] == "presigned" and uploaded["tempBlobUuid"] == blob
    assert progress[0] == (0, len(PNG)) and progress[-1] == (len(PNG), len(PNG))
    assert again["method"] == "existing" and again["url"] == uploaded["url"]
    assert inline["method"] == "inline"
    for url in (uploaded["url"], inline["url"]):
        fetched = await fetch(url)
        assert fetched.status_code == 200
        assert fetched.content == PNG


async def test_draft_lifecycle(fresh_org: Org) -> None:
    draft = str(uuid.uuid4())
    async with client_of(fresh_org) as client:
        created = await client.create_draft(html=IMAGE_PAGE, draft_uuid=draft, name="sdk test")
        repeated = await client.create_draft(html=IMAGE_PAGE, draft_uuid=draft, name="sdk test")
        ready = await client.wait_for_draft(draft)
        deleted = await client.delete_draft(draft_uuid=draft)
        status = await client.status_draft(draft_uuid=draft)
        deleted_again = await client.delete_draft(draft_uuid=draft)
    assert created == repeated
    assert created["editorUrl"].startswith("http")
    assert ready["status"] == "ready" and ready.get("previewUrl")
    assert deleted == {"draftUuid": draft, "status": "deleted"} == deleted_again
    assert status["status"] == "deleted" and "editorUrl" not in status


async def test_story_is_executed_on_the_sandbox(
    storypost: Storypost, storypost_stack: StackHandle, fresh_org: Org
) -> None:
    account = await connect_sandbox_account(storypost, storypost_stack, fresh_org, "photoapp")
    async with client_of(fresh_org) as client:
        scheduled = await client.schedule_photoapp_story(
            html=IMAGE_PAGE, photoapp_username=account["username"]
        )
        story = scheduled["storyPostUuid"]
        repeated = await client.schedule_photoapp_story(
            html=IMAGE_PAGE, photoapp_username=account["username"], story_post_uuid=story
        )
        final = await client.wait_for_story(story)
    assert scheduled["status"] == "scheduled" and uuid.UUID(story).version == 4
    assert repeated == scheduled
    assert final["status"] == "executed", final
    assert final.get("previewUrl")


async def test_a_later_story_can_be_canceled(
    storypost: Storypost, storypost_stack: StackHandle, fresh_org: Org
) -> None:
    account = await connect_sandbox_account(storypost, storypost_stack, fresh_org, "photoapp")
    async with client_of(fresh_org) as client:
        scheduled = await client.schedule_photoapp_story(
            html=IMAGE_PAGE,
            photoapp_username=account["username"],
            date=datetime.now(UTC) + timedelta(hours=1),
        )
        story = scheduled["storyPostUuid"]
        canceled = await client.cancel_photoapp_story(story_post_uuid=story)
        again = await client.cancel_photoapp_story(story_post_uuid=story)
        final = await client.wait_for_story(story)
    assert canceled == again == {"storyPostUuid": story, "status": "canceled"}
    assert final["status"] == "canceled"


async def test_reel_from_an_uploaded_video(
    storypost: Storypost, storypost_stack: StackHandle, fresh_org: Org, tmp_path: Path
) -> None:
    account = await connect_sandbox_account(storypost, storypost_stack, fresh_org, "photoapp")
    video = await asyncio.to_thread(make_video, tmp_path / "clip.mp4", seconds=1)
    async with client_of(fresh_org) as client:
        blob = await client.upload_file(video)
        scheduled = await client.schedule_photoapp_reel(
            html=f'<photoapp-story src="{blob["url"]}"><h1>Reel</h1></photoapp-story>',
            photoapp_username=account["username"],
            caption="made by the SDK test",
            # The API's default (true) needs a linknet destination linked to the account.
            share_to_linknet=False,
        )
        final = await client.wait_for_reel(scheduled["reelPostUuid"])
    assert blob["contentType"] == "video/mp4"
    assert scheduled["status"] == "scheduled"
    assert final["status"] == "executed", final


async def test_clipapp_post_is_executed(
    storypost: Storypost, storypost_stack: StackHandle, fresh_org: Org
) -> None:
    await connect_sandbox_account(storypost, storypost_stack, fresh_org, "clipapp")
    async with client_of(fresh_org) as client:
        accounts = await client.list_clipapp_accounts()
        account_id = accounts["clipappAccounts"][0]["clipappAccountId"]
        scheduled = await client.schedule_clipapp_post(
            html=IMAGE_PAGE, clipapp_account_id=account_id, title="SDK test", auto_audio=True
        )
        final = await client.wait_for_clipapp_post(scheduled["clipappPostUuid"])
    assert scheduled["status"] == "scheduled"
    assert final["status"] == "executed", final


async def test_social_post_is_executed_with_a_permalink(
    storypost: Storypost, storypost_stack: StackHandle, fresh_org: Org
) -> None:
    await connect_sandbox_account(storypost, storypost_stack, fresh_org, "microblog")
    async with client_of(fresh_org) as client:
        account, post_type = microblog_image_post(await client.list_social_accounts())
        scheduled = await client.schedule_social_post(
            html=IMAGE_PAGE,
            social_account_id=account["socialAccountId"],
            post_type=post_type["postType"],
            text="posted by the SDK test",
        )
        final = await client.wait_for_social_post(scheduled["socialPostUuid"])
    assert scheduled["status"] == "in-progress"
    assert final["status"] == "executed", final
    assert final.get("permalink", "").startswith("http")


async def test_later_reel_clipapp_and_social_posts_can_be_canceled(
    storypost: Storypost, storypost_stack: StackHandle, fresh_org: Org, tmp_path: Path
) -> None:
    photoapp = await connect_sandbox_account(storypost, storypost_stack, fresh_org, "photoapp")
    await connect_sandbox_account(storypost, storypost_stack, fresh_org, "clipapp")
    await connect_sandbox_account(storypost, storypost_stack, fresh_org, "microblog")
    later = datetime.now(UTC) + timedelta(hours=2)
    video = await asyncio.to_thread(make_video, tmp_path / "clip.mp4", seconds=1)
    async with client_of(fresh_org) as client:
        blob = await client.upload_file(video)
        clipapps, listed = await asyncio.gather(
            client.list_clipapp_accounts(), client.list_social_accounts()
        )
        microblog, image_type = microblog_image_post(listed)
        reel = await client.schedule_photoapp_reel(
            html=f'<photoapp-story src="{blob["url"]}"></photoapp-story>',
            photoapp_username=photoapp["username"],
            date=later,
            share_to_linknet=False,
        )
        clip = await client.schedule_clipapp_post(
            html=IMAGE_PAGE,
            clipapp_account_id=clipapps["clipappAccounts"][0]["clipappAccountId"],
            date=later,
        )
        social = await client.schedule_social_post(
            html=IMAGE_PAGE,
            social_account_id=microblog["socialAccountId"],
            post_type=image_type["postType"],
            text="canceled by the SDK test",
            date=later,
        )
        canceled = await asyncio.gather(
            client.cancel_photoapp_reel(reel_post_uuid=reel["reelPostUuid"]),
            client.cancel_clipapp_post(clipapp_post_uuid=clip["clipappPostUuid"]),
            client.cancel_social_post(social_post_uuid=social["socialPostUuid"]),
        )
        finals = await asyncio.gather(
            client.wait_for_reel(reel["reelPostUuid"]),
            client.wait_for_clipapp_post(clip["clipappPostUuid"]),
            client.wait_for_social_post(social["socialPostUuid"]),
        )
    assert social["status"] == "scheduled"
    assert [c["status"] for c in canceled] == ["canceled"] * 3
    assert [f["status"] for f in finals] == ["canceled"] * 3

"""Gallery, editor and posts in a real browser: open a draft from its editorUrl, edit it with
the live preview, save a new version and see status-draft report it, post it and see
delete-draft refused; schedule one for later, cancel it and see delete-draft allowed."""

from __future__ import annotations

import asyncio
import time
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import urlsplit

import pytest
from playwright.async_api import Page, expect

from storypost.testing.stack import StackHandle
from tests.e2e.app.conftest import Workspace, shoot
from tests.support.accounts import connect_account
from tests.support.api import Api

pytestmark = [pytest.mark.e2e, pytest.mark.integration]


def design(text: str, color: str) -> str:
    return (
        f"<photoapp-story><div style='height:1920px;background:{color};display:flex;"
        "flex-direction:column;align-items:center;justify-content:center;font-family:sans-serif'>"
        f"<h1 style='font-size:150px;color:#fff;margin:0'>{text}</h1></div></photoapp-story>"
    )


async def create_draft(api: Api, workspace: Workspace, name: str, **extra: Any) -> dict[str, Any]:
    answer = await api.call(
        workspace.org,
        "create-draft",
        {"draftUuid": str(uuid.uuid4()), "name": name, **extra},
    )
    assert answer.status_code == 200, answer.text
    created: dict[str, Any] = answer.json()
    return created


async def draft_status(api: Api, workspace: Workspace, draft_uuid: str) -> dict[str, Any]:
    answer = await api.call(workspace.org, "status-draft", {"draftUuid": draft_uuid})
    assert answer.status_code == 200, answer.text
    status: dict[str, Any] = answer.json()
    return status


async def ready(api: Api, workspace: Workspace, draft_uuid: str) -> dict[str, Any]:
    deadline = time.monotonic() + 60
    while True:
        status = await draft_status(api, workspace, draft_uuid)
        if status["status"] != "rendering" or time.monotonic() > deadline:
            return status
        await asyncio.sleep(0.5)


@pytest.fixture(scope="module")
async def photoapp_account(storypost_stack: StackHandle, workspace: Workspace) -> str:
    account = await connect_account(storypost_stack, workspace.org, "photoapp", "sunny.drafts")
    return account.username


async def test_edit_save_post_and_delete_refused(
    api: Api, workspace: Workspace, page: Page, photoapp_account: str
) -> None:
    created = await create_draft(
        api, workspace, "Spring launch", html=design("Spring", "#7b7cff"), folderName="Launches"
    )
    draft_uuid = created["draftUuid"]
    before = await ready(api, workspace, draft_uuid)
    assert before["status"] == "ready" and before["editorUrl"] == created["editorUrl"]

    # The gallery shows it in its folder with its preview.
    await page.goto(f"{workspace.app_url}/gallery")
    await (
        page.get_by_role("navigation", name="Folders").get_by_role("link", name="Launches").click()
    )
    card = page.locator(f"[data-draft='{draft_uuid}']")
    await expect(card).to_contain_text("Spring launch")
    await expect(card).to_contain_text("ready")
    await expect(card.get_by_role("img", name="Preview of Spring launch")).to_be_visible()
    await shoot(page, "gallery")

    # The editorUrl opens the editor; the live preview follows the HTML as it is typed.
    await page.goto(created["editorUrl"])
    await expect(page.get_by_role("heading", name="Spring launch")).to_be_visible()
    await expect(page.get_by_test_id("draft-status")).to_have_text("ready")
    live = page.frame_locator("#live-preview")
    await expect(live.get_by_role("heading")).to_have_text("Spring")
    await page.get_by_label("HTML").fill(design("Summer", "#ff7ab6"))
    await expect(live.get_by_role("heading")).to_have_text("Summer")
    await expect(page.get_by_text("Unsaved changes")).to_be_visible()

    # Saving renders a new version; the page shows it rendering, then ready by itself.
    await page.get_by_role("button", name="Save new version").click()
    await expect(page.get_by_role("status").first).to_contain_text("Version 2 saved.")
    await expect(page.get_by_test_id("draft-status")).to_have_text("ready", timeout=60_000)
    await expect(page.get_by_role("img", name="Rendered preview of version 2")).to_be_visible()
    after = await ready(api, workspace, draft_uuid)
    assert after["status"] == "ready"
    assert after["editorUrl"] == created["editorUrl"]
    # status-draft reports the saved version: its preview is another rendering.
    assert urlsplit(after["previewUrl"]).path != urlsplit(before["previewUrl"]).path
    await shoot(page, "editor")

    # Post it now to the connected account: then delete-draft through the API is refused.
    await page.get_by_label("Account").select_option(photoapp_account)
    await page.get_by_role("button", name="Post now").click()
    await expect(page.get_by_role("status").first).to_contain_text(
        f"The story is being posted to @{photoapp_account} now."
    )
    story = page.locator("[data-post]").first
    await expect(story).to_contain_text(f"@{photoapp_account}")
    refused = await api.call(workspace.org, "delete-draft", {"draftUuid": draft_uuid})
    assert refused.status_code == 400, refused.text
    assert "errorMessage" in refused.json()
    assert (await draft_status(api, workspace, draft_uuid))["status"] == "ready"

    # The story is on the posts page and is published by the sandbox.
    post_uuid = await story.get_attribute("data-post")
    await page.get_by_role("link", name="Posts").click()
    row = page.locator(f"tr[data-post='{post_uuid}']")
    await expect(row).to_contain_text("Photoapp story")
    await expect(row).to_contain_text("executed", timeout=60_000)
    await shoot(page, "posts")


async def test_schedule_for_later_cancel_and_delete(
    api: Api, workspace: Workspace, page: Page, photoapp_account: str
) -> None:
    created = await create_draft(api, workspace, "Next week", html=design("Soon", "#06d6a0"))
    draft_uuid = created["draftUuid"]
    await ready(api, workspace, draft_uuid)
    await page.goto(created["editorUrl"])
    when = datetime.now(UTC) + timedelta(days=2)
    await page.get_by_label("Account").select_option(photoapp_account)
    # A time in the past is refused with a clear message; nothing is scheduled.
    await page.get_by_label("Date and time (UTC)").fill("2020-01-01T10:00")
    await page.get_by_role("button", name="Schedule", exact=True).click()
    await expect(page.get_by_role("alert")).to_contain_text("Choose a time in the future")
    await expect(page.locator("[data-post]")).to_have_count(0)

    await page.get_by_label("Account").select_option(photoapp_account)
    await page.get_by_label("Date and time (UTC)").fill(when.strftime("%Y-%m-%dT%H:%M"))
    await page.get_by_role("button", name="Schedule", exact=True).click()
    await expect(page.get_by_role("status").first).to_contain_text("The story is scheduled for")
    story = page.locator("[data-post]")
    await expect(story).to_have_count(1)
    await expect(story).to_contain_text("scheduled")
    refused = await api.call(workspace.org, "delete-draft", {"draftUuid": draft_uuid})
    assert refused.status_code == 400, refused.text

    # The posts page can cancel it too; here the editor does, which frees the draft.
    await story.get_by_role("button", name="Cancel").click()
    await expect(page.get_by_role("status").first).to_contain_text("The story was canceled.")
    await expect(story).to_contain_text("canceled")
    deleted = await api.call(workspace.org, "delete-draft", {"draftUuid": draft_uuid})
    assert deleted.status_code == 200, deleted.text
    assert deleted.json() == {"draftUuid": draft_uuid, "status": "deleted"}
    await page.reload()
    await expect(page.locator("main")).to_contain_text("This draft was deleted")


async def test_the_posts_page_cancels_a_scheduled_story(
    api: Api, workspace: Workspace, page: Page, photoapp_account: str
) -> None:
    # A scheduled story from the API: cancel it on the posts page.
    post_uuid = str(uuid.uuid4())
    scheduled = await api.call(
        workspace.org,
        "schedule-photoapp-story",
        {
            "storyPostUuid": post_uuid,
            "html": design("Later", "#118ab2"),
            "photoappUsername": photoapp_account,
            "date": (datetime.now(UTC) + timedelta(days=1)).strftime("%Y-%m-%dT%H:%M:%SZ"),
        },
    )
    assert scheduled.status_code == 200, scheduled.text
    await page.goto(f"{workspace.app_url}/posts?kind=story&status=scheduled")
    row = page.locator(f"tr[data-post='{post_uuid}']")
    await expect(row).to_contain_text("scheduled")
    await row.get_by_role("button", name=f"Cancel post {post_uuid}").click()
    await expect(page.get_by_role("status").first).to_contain_text("The post was canceled.")
    status = await api.call(workspace.org, "status-photoapp-story", {"storyPostUuid": post_uuid})
    assert status.json()["status"] == "canceled"

"""The calendar, a post's page, the time zone and user management in a real browser: posts
scheduled through the API appear on their day with their status and account and open their
page; weeks and months move; a time zone chosen by the user moves every date; an admin adds a
member, sets their password and removes them, and the member is refused user management."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import pytest
from playwright.async_api import Browser, Page, expect

from edge.web.calendar_span import monday
from storypost.testing.stack import StackHandle
from tests.e2e.app.conftest import DESKTOP, Workspace, shoot, sign_in
from tests.e2e.app.test_drafts import design
from tests.support.accounts import connect_account
from tests.support.api import Api

pytestmark = [pytest.mark.e2e, pytest.mark.integration]


async def test_calendar_shows_every_kind_and_follows_the_time_zone(
    api: Api, storypost_stack: StackHandle, workspace: Workspace, page: Page
) -> None:
    photoapp = await connect_account(storypost_stack, workspace.org, "photoapp", "sunny.calendar")
    linknet = await connect_account(storypost_stack, workspace.org, "linknet", "sunny.pages")
    # Tomorrow at 10:00 UTC and the day after at 15:30 UTC, both in one week of the calendar
    # (Monday to Sunday): when tomorrow is a Sunday, Monday and Tuesday instead.
    day = (datetime.now(UTC) + timedelta(days=1)).replace(hour=10, minute=0, second=0)
    if monday(day.date()) != monday((day + timedelta(days=1)).date()):
        day += timedelta(days=1)
    story_uuid, social_uuid = str(uuid.uuid4()), str(uuid.uuid4())
    story = await api.call(
        workspace.org,
        "schedule-photoapp-story",
        {
            "storyPostUuid": story_uuid,
            "html": design("Plan", "#ef476f"),
            "photoappUsername": photoapp.username,
            "date": day.strftime("%Y-%m-%dT%H:%M:%SZ"),
        },
    )
    assert story.status_code == 200, story.text
    social = await api.call(
        workspace.org,
        "schedule-social-post",
        {
            "socialPostUuid": social_uuid,
            "socialAccountId": linknet.social_account_id,
            "postType": "IMAGE_POST",
            "html": design("Pages", "#118ab2"),
            "text": "From the calendar test",
            "date": (day + timedelta(days=1, hours=5, minutes=30)).strftime("%Y-%m-%dT%H:%M:%SZ"),
        },
    )
    assert social.status_code == 200, social.text

    await page.get_by_role("link", name="Calendar", exact=True).click()
    await expect(page.get_by_role("heading", name="Calendar", exact=True)).to_be_visible()
    await page.goto(f"{workspace.app_url}/calendar?view=week&date={day:%Y-%m-%d}")
    entry = page.locator(f".cal-day[data-day='{day:%Y-%m-%d}'] [data-post='{story_uuid}']")
    await expect(entry).to_contain_text("10:00")
    await expect(entry).to_contain_text("Photoapp story")
    await expect(entry).to_contain_text(photoapp.username)
    await expect(entry).to_have_class("cal-post b-scheduled")
    await expect(entry.locator("img.cal-thumb")).to_be_visible(timeout=30_000)  # its preview
    social_entry = page.locator(f"[data-post='{social_uuid}']")
    await expect(social_entry).to_contain_text("15:30")
    await expect(social_entry).to_contain_text("Linknet image post")
    await expect(social_entry).to_contain_text("@sunny.pages")
    await expect(page.get_by_test_id("credits")).to_contain_text("credits left")
    await shoot(page, "calendar-week")

    # The posts list, where social posts are, shows the balance too.
    await page.goto(f"{workspace.app_url}/posts")
    await expect(page.get_by_test_id("credits")).to_contain_text("credits left")
    await page.go_back()

    # Months, and moving between them and back.
    await page.get_by_role("link", name="Month", exact=True).click()
    title = page.locator("h2.cal-title")
    await expect(title).to_have_text(f"{day:%B %Y}")
    await expect(page.locator(f"[data-post='{story_uuid}']")).to_be_visible()
    await shoot(page, "calendar-month")
    await page.get_by_role("link", name="Next month →").click()
    following = (day.replace(day=1) + timedelta(days=32)).replace(day=1)
    await expect(title).to_have_text(f"{following:%B %Y}")
    await page.get_by_role("link", name="← Previous month").click()
    await expect(title).to_have_text(f"{day:%B %Y}")

    # The entry opens the post's own page.
    await page.locator(f"[data-post='{story_uuid}']").click()
    await expect(page.get_by_role("heading", name="Photoapp story")).to_be_visible()
    await expect(page.locator("main")).to_contain_text(story_uuid)
    await expect(page.locator("main")).to_contain_text(f"{day.day} {day:%b %Y}, 10:00 UTC")
    await shoot(page, "post")

    # A time zone of the user's own moves every date: Tokyo is UTC+9.
    await page.get_by_role("link", name=workspace.email).click()
    await expect(page.get_by_role("heading", name="Your settings")).to_be_visible()
    try:
        await page.get_by_label("Time zone").select_option("Asia/Tokyo")
        await page.get_by_role("button", name="Save time zone").click()
        await expect(page.get_by_role("status")).to_contain_text("Asia/Tokyo")
        await shoot(page, "profile")
        await page.goto(f"{workspace.app_url}/posts/story/{story_uuid}")
        await expect(page.locator("main")).to_contain_text(f"{day.day} {day:%b %Y}, 19:00 JST")
        await page.goto(f"{workspace.app_url}/calendar?date={day:%Y-%m-%d}")
        await expect(page.locator(f"[data-post='{story_uuid}']")).to_contain_text("19:00")
    finally:
        # The workspace's user is shared with the other app tests, which expect UTC.
        await page.goto(f"{workspace.app_url}/settings/profile")
        await page.get_by_label("Time zone").select_option("UTC")
        await page.get_by_role("button", name="Save time zone").click()
        await expect(page.get_by_role("status")).to_contain_text("UTC")


async def test_an_admin_manages_users_and_a_member_is_refused(
    browser: Browser, workspace: Workspace, page: Page
) -> None:
    member = Workspace(
        workspace.org, "bob@sunny.example", "bob's first password", workspace.app_url
    )
    await page.get_by_role("link", name="Users").click()
    await expect(page.get_by_role("heading", name="Users", exact=True)).to_be_visible()
    await page.get_by_label("Email").fill(member.email)
    await page.get_by_label("Password", exact=True).fill(member.password)
    await page.get_by_label("Role").select_option("member")
    await page.get_by_role("button", name="Add user").click()
    await expect(page.get_by_role("status")).to_contain_text(f"{member.email} was added as member")
    row = page.locator(f"tr[data-user='{member.email}']")
    await expect(row).to_contain_text("member")
    await shoot(page, "users")

    # The member signs in, sees who is there, and is refused managing them.
    context = await browser.new_context(viewport=DESKTOP)
    try:
        theirs = await context.new_page()
        await theirs.goto(f"{workspace.app_url}/settings/users")
        await sign_in(theirs, member)
        await expect(theirs.get_by_role("status")).to_contain_text(
            "Only a workspace admin can add or remove users"
        )
        await expect(theirs.get_by_role("button", name="Add user")).to_have_count(0)
        await expect(theirs.get_by_role("button", name="Remove", exact=False)).to_have_count(0)
        await shoot(theirs, "users-member")
        # A forged form (with the member's valid CSRF token) gets the same clear refusal.
        csrf = await theirs.locator("input[name=csrf]").first.input_value()
        refused = await context.request.post(
            f"{workspace.app_url}/settings/users",
            form={
                "csrf": csrf,
                "action": "add",
                "email": "eve@sunny.example",
                "password": "eve's own password",
                "role": "admin",
            },
        )
        assert refused.status == 403
        assert "Only a workspace admin can add or remove users" in await refused.text()

        # A new password from the admin ends the member's session at once.
        await row.get_by_label(f"New password for {member.email}").fill("bob's second password")
        await row.get_by_role("button", name=f"Set password of {member.email}").click()
        await expect(page.get_by_role("status")).to_contain_text(f"The password of {member.email}")
        await theirs.reload()
        await expect(theirs.get_by_label("Password")).to_be_visible()

        # Removed, the member cannot sign in any more.
        await (
            page.locator(f"tr[data-user='{member.email}']")
            .get_by_role("button", name=f"Remove {member.email}")
            .click()
        )
        await expect(page.get_by_role("status")).to_contain_text(f"{member.email} was removed")
        await expect(page.locator(f"tr[data-user='{member.email}']")).to_have_count(0)
        await theirs.get_by_label("Email").fill(member.email)
        await theirs.get_by_label("Password").fill("bob's second password")
        await theirs.get_by_role("button", name="Sign in").click()
        await expect(theirs.get_by_role("alert")).to_contain_text("Wrong email or password.")
    finally:
        await context.close()

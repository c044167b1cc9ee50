"""The calendar feed in a real browser: made from the calendar page, its URL shown once and
read by a calendar client (a post scheduled through the API is an event linking to its page),
revoked from the same page, after which the URL answers 404."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import httpx
import pytest
from icalendar import Calendar
from playwright.async_api import Page, expect

from storypost.testing.stack import StackHandle
from tests.e2e.app.conftest import Workspace, shoot
from tests.e2e.app.test_drafts import design
from tests.support.accounts import connect_account
from tests.support.api import Api

pytestmark = [pytest.mark.e2e, pytest.mark.integration]


async def test_a_feed_is_made_read_and_revoked_from_the_app(
    api: Api, storypost_stack: StackHandle, workspace: Workspace, page: Page
) -> None:
    account = await connect_account(storypost_stack, workspace.org, "photoapp", "sunny.feed")
    when = (datetime.now(UTC) + timedelta(days=2)).replace(
        hour=9, minute=0, second=0, microsecond=0
    )
    story_uuid = str(uuid.uuid4())
    answer = await api.call(
        workspace.org,
        "schedule-photoapp-story",
        {
            "storyPostUuid": story_uuid,
            "html": design("Feed", "#06d6a0"),
            "photoappUsername": account.username,
            "date": when.strftime("%Y-%m-%dT%H:%M:%SZ"),
        },
    )
    assert answer.status_code == 200, answer.text

    await page.goto(f"{workspace.app_url}/calendar")
    await page.get_by_role("link", name="in your calendar app").click()
    await expect(page.get_by_role("heading", name="Calendar feeds")).to_be_visible()
    await page.get_by_label("Name").fill("Social team")
    await page.get_by_role("button", name="Make a feed").click()
    shown = page.get_by_test_id("feed-url")
    await expect(shown).to_contain_text("/calendar/spcal_")
    url = (await shown.inner_text()).strip()
    await shoot(page, "calendar-feeds")

    async with httpx.AsyncClient(timeout=30) as http:
        got = await http.get(url)
        assert got.status_code == 200, got.text
        events = {str(e["uid"]): e for e in Calendar.from_ical(got.content).walk("VEVENT")}
        event = events[f"story-{story_uuid}@storypost"]
        assert event.decoded("dtstart") == when
        assert str(event["url"]) == f"{workspace.app_url}/posts/story/{story_uuid}"

        # Shown once: the list names the feed, never its URL again.
        await page.goto(f"{workspace.app_url}/calendar/feeds")
        await expect(page.get_by_test_id("feed-url")).to_have_count(0)
        row = page.locator("tr[data-feed]").filter(has_text="Social team")
        await expect(row).to_have_count(1)
        await row.get_by_role("button", name="Revoke Social team").click()
        await expect(page.get_by_role("status")).to_contain_text("was revoked")
        await expect(page.locator("tr[data-feed]").filter(has_text="Social team")).to_have_count(0)
        assert (await http.get(url)).status_code == 404

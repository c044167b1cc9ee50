"""Insights in a real browser: a story published on the sandbox network has its page of
figures, drawn as a chart by the app's own Chart.js under the app's CSP; its account has one
per day. Screenshots at desktop and phone widths."""

from __future__ import annotations

import uuid

import pytest
from playwright.async_api import Page, expect

from storypost.testing.stack import StackHandle
from tests.e2e.app.conftest import Workspace, shoot
from tests.e2e.app.test_drafts import design
from tests.reliability.support import wait_status
from tests.support.accounts import connect_account
from tests.support.api import Api
from tests.support.polling import wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.integration]


async def test_a_published_storys_insights_and_its_accounts_are_drawn(
    api: Api, storypost_stack: StackHandle, workspace: Workspace, page: Page
) -> None:
    account = await connect_account(storypost_stack, workspace.org, "photoapp", "sunny.charts")
    story_uuid = str(uuid.uuid4())
    answer = await api.call(
        workspace.org,
        "schedule-photoapp-story",
        {
            "storyPostUuid": story_uuid,
            "html": design("Charts", "#ffd166"),
            "photoappUsername": account.username,
        },
    )
    assert answer.status_code == 200, answer.text
    ref = {"storyPostUuid": story_uuid}
    done = await wait_status(api, workspace.org, "status-photoapp-story", ref, {"executed"})
    assert done["status"] == "executed", done
    # The collector reads at once, then again (the test stack's points are seconds apart):
    # two points make a curve.
    asked = {"kind": "story", "uuid": story_uuid}

    async def two_points() -> bool | None:
        read = await api.call(workspace.org, "get-post-insights", asked)
        return True if read.status_code == 200 and len(read.json()["history"]) >= 2 else None

    await wait_until(two_points, 90, "two insight points")
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)

    await page.goto(f"{workspace.app_url}/posts/story/{story_uuid}/insights")
    await expect(page.get_by_role("heading", name="Insights")).to_be_visible()
    await expect(page.get_by_label("Latest figures")).to_contain_text("impressions")
    chart = page.locator("canvas[data-chart]")
    await expect(chart).to_be_visible()
    # Chart.js drew on the canvas (a blank one is all zero pixels), within the CSP.
    drawn = await chart.evaluate(
        "c => c.getContext('2d').getImageData(0, 0, c.width, c.height).data.some(v => v !== 0)"
    )
    assert drawn
    assert not [e for e in errors if "Content Security Policy" in e], errors
    await shoot(page, "post-insights")

    await page.goto(f"{workspace.app_url}/accounts/{account.social_account_id}/insights")
    await expect(page.locator("canvas[data-chart]")).to_be_visible()
    await shoot(page, "account-insights")

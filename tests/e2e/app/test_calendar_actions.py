"""A calendar you act on, in a real browser (issue 51, item 5): a queue is set and edited in
the queue editor of its account; the week view shows its free slots; a scheduled post dragged
onto a free slot or onto another day is rescheduled there (and published at its new time); the
"Move" form does it on a phone, and a refused move is said on the page; a gallery draft added
to a queue becomes a story at the queue's next free slot."""

from __future__ import annotations

import uuid
from datetime import UTC, date, datetime, timedelta
from typing import Any

import pytest
from playwright.async_api import Browser, Locator, Page, expect

from edge.web.calendar_span import monday
from storypost.testing.stack import StackHandle
from tests.e2e.app.conftest import PHONE, Workspace, shoot, sign_in
from tests.e2e.app.test_drafts import create_draft, design, ready
from tests.support.accounts import connect_account, published
from tests.support.api import Api
from tests.support.polling import wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.integration]

DAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
Z = "%Y-%m-%dT%H:%M:%SZ"


def unique(name: str) -> str:
    """An account name of its own: the test stack allows 3 stories per account and day."""
    return f"{name}.{uuid.uuid4().hex[:6]}"


async def ok(api: Api, workspace: Workspace, procedure: str, body: dict[str, Any]) -> Any:
    answer = await api.call(workspace.org, procedure, body)
    assert answer.status_code == 200, (procedure, answer.text)
    return answer.json()


def alert(page: Page, text: str) -> Locator:
    """The page's error message saying `text` (other alerts, e.g. the reconnect banner of
    another test's account, may be there too)."""
    return page.get_by_role("alert").filter(has_text=text)


def next_monday() -> date:
    return monday(datetime.now(UTC).date()) + timedelta(days=7)


async def schedule_social(api: Api, workspace: Workspace, account_id: str, at: datetime) -> str:
    post_uuid = str(uuid.uuid4())
    await ok(
        api,
        workspace,
        "schedule-social-post",
        {
            "socialPostUuid": post_uuid,
            "socialAccountId": account_id,
            "postType": "IMAGE_POST",
            "html": design("Moves", "#06d6a0"),
            "text": "Moved around in the calendar",
            "date": at.strftime(Z),
        },
    )
    return post_uuid


async def schedule_story(api: Api, workspace: Workspace, username: str, at: datetime) -> str:
    post_uuid = str(uuid.uuid4())
    await ok(
        api,
        workspace,
        "schedule-photoapp-story",
        {
            "storyPostUuid": post_uuid,
            "html": design("Soon", "#ef476f"),
            "photoappUsername": username,
            "date": at.strftime(Z),
        },
    )
    return post_uuid


async def story_date(api: Api, workspace: Workspace, post_uuid: str) -> str:
    """The story's date as list-posts gives it (status-photoapp-story has none)."""
    listed = await ok(api, workspace, "list-posts", {"kind": "story", "limit": 100})
    dates = [p["date"] for p in listed["posts"] if p["uuid"] == post_uuid]
    assert len(dates) == 1, listed
    return str(dates[0])


async def social_date(api: Api, workspace: Workspace, post_uuid: str) -> str:
    status = await ok(api, workspace, "status-social-post", {"socialPostUuid": post_uuid})
    return str(status["date"])


async def test_the_queue_editor_sets_and_edits_a_queue_whose_free_slots_the_week_shows(
    storypost_stack: StackHandle, workspace: Workspace, page: Page
) -> None:
    account = await connect_account(storypost_stack, workspace.org, "linknet", unique("plan"))
    await page.goto(f"{workspace.app_url}/accounts")
    await page.get_by_role("link", name=f"Queues of @{account.username}").click()
    await expect(page.get_by_role("heading", name=f"Queues of @{account.username}")).to_be_visible()

    # A new queue: weekdays at 09:30 and 17:00, UTC.
    await page.get_by_label("Name").fill("weekdays")
    await page.get_by_label("Time zone").select_option("UTC")
    for day in DAYS[:5]:
        await page.get_by_label(day.capitalize(), exact=True).fill("9:30, 17:00")
    await page.get_by_role("button", name="Save queue").click()
    await expect(page.get_by_role("status")).to_contain_text(
        "Queue “weekdays” saved with 10 weekly slots"
    )
    card = page.locator("[data-queue='weekdays']")
    await expect(card).to_contain_text("Monday: 09:30, 17:00")
    await expect(card).to_contain_text("Next free:")

    # A bad time is said on the form, which keeps what was entered; nothing changes.
    await card.get_by_role("link", name="Edit queue weekdays").click()
    await expect(page.get_by_label("Monday", exact=True)).to_have_value("09:30, 17:00")
    await page.get_by_label("Saturday", exact=True).fill("25:00")
    await page.get_by_role("button", name="Save queue").click()
    await expect(alert(page, "“25:00” on Saturday is not a time")).to_be_visible()
    await expect(page.get_by_label("Saturday", exact=True)).to_have_value("25:00")

    # Edited: Saturday at 11:00 too, Friday's 17:00 dropped.
    await page.get_by_label("Saturday", exact=True).fill("11:00")
    await page.get_by_label("Friday", exact=True).fill("09:30")
    await page.get_by_role("button", name="Save queue").click()
    await expect(page.get_by_role("status")).to_contain_text("saved with 10 weekly slots")
    await expect(card).to_contain_text("Friday: 09:30")
    await expect(card).to_contain_text("Saturday: 11:00")
    await shoot(page, "queues")

    # Next week, every slot of the queue is free: the week view shows each one on its day.
    week = next_monday()
    await page.goto(f"{workspace.app_url}/calendar?view=week&date={week}")
    slots = page.locator(f".cal-slot[data-account='{account.social_account_id}']")
    await expect(slots).to_have_count(10)
    monday_slots = page.locator(f".cal-day[data-day='{week}'] .cal-slot[data-queue='weekdays']")
    await expect(monday_slots).to_have_count(2)
    await expect(monday_slots.first).to_contain_text("09:30")
    await expect(monday_slots.first).to_contain_text(f"@{account.username} · weekdays")
    saturday = page.locator(f".cal-day[data-day='{week + timedelta(days=5)}'] .cal-slot")
    await expect(saturday.filter(has_text="11:00")).to_have_count(1)
    await shoot(page, "calendar-free-slots")

    # Deleted: the week shows none of its slots.
    await page.goto(f"{workspace.app_url}/accounts/{account.social_account_id}/queues")
    await card.get_by_role("button", name="Delete queue weekdays").click()
    await expect(page.get_by_role("status")).to_contain_text("Queue “weekdays” was deleted")
    await page.goto(f"{workspace.app_url}/calendar?view=week&date={week}")
    await expect(slots).to_have_count(0)


async def test_a_post_dragged_onto_a_free_slot_or_a_day_is_rescheduled_there(
    api: Api, storypost_stack: StackHandle, workspace: Workspace, page: Page
) -> None:
    account = await connect_account(storypost_stack, workspace.org, "linknet", unique("drag"))
    await ok(
        api,
        workspace,
        "set-queue",
        {
            "socialAccountId": account.social_account_id,
            "queueName": "mornings",
            "timeZone": "UTC",
            "slots": [{"weekday": day, "time": "08:15"} for day in DAYS],
        },
    )
    week = next_monday()
    tuesday = datetime.combine(week + timedelta(days=1), datetime.min.time(), UTC)
    post_uuid = await schedule_social(
        api, workspace, account.social_account_id, tuesday + timedelta(hours=12)
    )
    await page.goto(f"{workspace.app_url}/calendar?view=week&date={week}")
    post = page.locator(f"[data-move='{post_uuid}']")
    await expect(post).to_contain_text("12:00")

    # Onto Thursday's free 08:15 slot of the queue.
    thursday = week + timedelta(days=3)
    slot = page.locator(
        f".cal-day[data-day='{thursday}'] .cal-slot[data-account='{account.social_account_id}']"
    )
    await expect(slot).to_contain_text("08:15")
    await post.drag_to(slot)
    await expect(page.get_by_role("status")).to_contain_text(
        f"was moved to {thursday.day} {thursday:%b %Y}, 08:15 UTC"
    )
    assert await social_date(api, workspace, post_uuid) == f"{thursday}T08:15:00Z"
    moved = page.locator(f".cal-day[data-day='{thursday}'] [data-move='{post_uuid}']")
    await expect(moved).to_contain_text("08:15")
    # The slot it took is not offered as free any more: the post holds it in the queue.
    await expect(slot).to_have_count(0)
    queue = {"socialAccountId": account.social_account_id, "queueName": "mornings", "count": 50}
    held = f"{thursday}T08:15:00Z"
    assert held not in (await ok(api, workspace, "preview-queue", queue))["slots"]

    # Onto Saturday (no slot): the post keeps its time of day.
    saturday = week + timedelta(days=5)
    await moved.drag_to(page.locator(f".cal-day[data-day='{saturday}'] .cal-date"))
    await expect(page.get_by_role("status")).to_contain_text(
        f"was moved to {saturday.day} {saturday:%b %Y}, 08:15 UTC"
    )
    assert await social_date(api, workspace, post_uuid) == f"{saturday}T08:15:00Z"
    await expect(
        page.locator(f".cal-day[data-day='{saturday}'] [data-move='{post_uuid}']")
    ).to_be_visible()
    # Off the slot, the post gave it back.
    assert held in (await ok(api, workspace, "preview-queue", queue))["slots"]
    await shoot(page, "calendar-dragged")

    # A move without the form's CSRF token (another site's form) is refused; nothing moves.
    forged = await page.context.request.post(
        f"{workspace.app_url}/calendar",
        form={"action": "move", "kind": "social", "uuid": post_uuid, "to": f"{thursday}T10:00"},
    )
    assert forged.status == 403
    assert await social_date(api, workspace, post_uuid) == f"{saturday}T08:15:00Z"


async def test_the_move_form_on_a_phone_and_a_refused_move_said_on_the_page(
    api: Api, browser: Browser, storypost_stack: StackHandle, workspace: Workspace
) -> None:
    account = await connect_account(storypost_stack, workspace.org, "photoapp", unique("phone"))
    week = next_monday()
    wednesday = datetime.combine(week + timedelta(days=2), datetime.min.time(), UTC)
    post_uuid = await schedule_story(
        api, workspace, account.username, wednesday + timedelta(hours=10)
    )
    context = await browser.new_context(viewport=PHONE, is_mobile=True, has_touch=True)
    try:
        page = await context.new_page()
        await page.goto(f"{workspace.app_url}/calendar?view=week&date={week}")
        await sign_in(page, workspace)
        item = page.locator(f"[data-move='{post_uuid}']")
        await item.locator("summary").click()
        await item.get_by_label("New date and time (UTC)").fill(f"{week + timedelta(days=4)}T18:45")
        await shoot(page, "calendar-move-form")
        await item.locator("button[type=submit]").click()
        await expect(page.get_by_role("status")).to_contain_text(
            f"The photoapp story was moved to {(week + timedelta(days=4)).day}"
        )
        assert (
            await story_date(api, workspace, post_uuid) == f"{week + timedelta(days=4)}T18:45:00Z"
        )
        item = page.locator(
            f".cal-day[data-day='{week + timedelta(days=4)}'] [data-move='{post_uuid}']"
        )
        await expect(item).to_contain_text("18:45")

        # A time in the past is refused on the page; the post stays where it was.
        await item.locator("summary").click()
        await item.get_by_label("New date and time (UTC)").fill("2020-01-01T10:00")
        await item.locator("button[type=submit]").click()
        await expect(alert(page, "Choose a time in the future")).to_be_visible()
        assert (
            await story_date(api, workspace, post_uuid) == f"{week + timedelta(days=4)}T18:45:00Z"
        )

        # Canceled meanwhile (through the API): the move is refused with publish-svc's reason,
        # shown on the page, not an error page.
        item = page.locator(f"[data-move='{post_uuid}']")
        await item.locator("summary").click()
        await item.get_by_label("New date and time (UTC)").fill(f"{week + timedelta(days=5)}T09:00")
        await ok(api, workspace, "cancel-photoapp-story", {"storyPostUuid": post_uuid})
        await item.locator("button[type=submit]").click()
        await expect(alert(page, "only a scheduled post can be rescheduled")).to_be_visible()
        await expect(page.locator(f"[data-move='{post_uuid}']")).to_have_count(0)  # not movable
        await shoot(page, "calendar-move-refused")
    finally:
        await context.close()


async def test_a_gallery_draft_added_to_a_queue_takes_its_next_free_slot(
    api: Api, storypost_stack: StackHandle, workspace: Workspace, page: Page
) -> None:
    account = await connect_account(storypost_stack, workspace.org, "photoapp", unique("queue"))
    await ok(
        api,
        workspace,
        "set-queue",
        {
            "socialAccountId": account.social_account_id,
            "timeZone": "Europe/Berlin",
            "slots": [{"weekday": day, "time": t} for day in DAYS for t in ("09:00", "18:00")],
        },
    )
    ref = {"socialAccountId": account.social_account_id, "queueName": "default", "count": 1}
    first = (await ok(api, workspace, "preview-queue", ref))["slots"][0]
    folder = f"Queued {uuid.uuid4().hex[:6]}"
    created = await create_draft(
        api, workspace, "Evergreen", html=design("Evergreen", "#ffd166"), folderName=folder
    )
    assert (await ready(api, workspace, created["draftUuid"]))["status"] == "ready"

    await page.goto(f"{workspace.app_url}/gallery?folder={folder}")
    card = page.locator(f"[data-draft='{created['draftUuid']}']")
    await card.get_by_label("Queue for Evergreen").select_option(
        label=f"@{account.username} · default"
    )
    await shoot(page, "gallery-queue")
    await card.get_by_role("button", name="Add Evergreen to the queue").click()
    await expect(page.get_by_role("status")).to_contain_text(
        f"“Evergreen” takes the next free slot of @{account.username} · default"
    )
    await expect(page).to_have_url(f"{workspace.app_url}/gallery?folder={folder.replace(' ', '+')}")
    listed = await ok(api, workspace, "list-posts", {"socialAccountId": account.social_account_id})
    assert [(p["kind"], p["status"], p["date"]) for p in listed["posts"]] == [
        ("story", "scheduled", first)
    ]
    # The queue's next free slot is now the one after.
    after = (await ok(api, workspace, "preview-queue", ref))["slots"][0]
    assert after > first
    # The draft is marked scheduled, and its story shows in the calendar linked to it.
    await expect(card).to_contain_text("scheduled")
    day = first[:10]
    await page.goto(f"{workspace.app_url}/calendar?view=week&date={day}")
    entry = page.locator(f"[data-move='{listed['posts'][0]['uuid']}']")
    await expect(entry).to_contain_text("draft: Evergreen")


# Waits for a minute about two and a half minutes ahead: `make reliability` (tests/conftest.py).
@pytest.mark.reliability_long
async def test_a_post_dragged_in_the_calendar_is_published_at_its_new_time(
    api: Api, storypost_stack: StackHandle, workspace: Workspace, page: Page
) -> None:
    account = await connect_account(storypost_stack, workspace.org, "photoapp", unique("soon"))
    # The new time: the minute at least 90 s from now (the move form takes minutes). The story
    # starts a day later at that time of day; dragged onto the new time's day it keeps its time.
    now = datetime.now(UTC)
    target = (now + timedelta(seconds=150)).replace(second=0, microsecond=0)
    later = target + timedelta(days=1)
    post_uuid = await schedule_story(api, workspace, account.username, later)
    # A view showing both days: their week, else their month (today a Sunday).
    view = "week" if monday(target.date()) == monday(later.date()) else "month"
    await page.goto(f"{workspace.app_url}/calendar?view={view}&date={target:%Y-%m-%d}")
    post = page.locator(f".cal-day[data-day='{later:%Y-%m-%d}'] [data-move='{post_uuid}']")
    target_day = page.locator(f".cal-day[data-day='{target:%Y-%m-%d}'] .cal-date")
    if await post.count() == 0:
        # The last day of a month that is a Sunday: no calendar page shows both days, so
        # the story starts later the same day and moves with its form.
        later = target + timedelta(minutes=30)
        await ok(
            api,
            workspace,
            "reschedule-post",
            {"kind": "story", "uuid": post_uuid, "date": later.strftime(Z)},
        )
        await page.reload()
        item = page.locator(f"[data-move='{post_uuid}']")
        await item.locator("summary").click()
        await item.get_by_label("New date and time (UTC)").fill(f"{target:%Y-%m-%dT%H:%M}")
        await item.locator("button[type=submit]").click()
    else:
        await post.drag_to(target_day)
    await expect(page.get_by_role("status")).to_contain_text(f"{target:%H:%M} UTC")
    assert await story_date(api, workspace, post_uuid) == target.strftime(Z)
    assert datetime.now(UTC) < target  # moved before it was due

    async def executed() -> dict[str, Any] | None:
        status = await ok(api, workspace, "status-photoapp-story", {"storyPostUuid": post_uuid})
        assert status["status"] in ("scheduled", "in-progress", "executed"), status
        return status if status["status"] == "executed" else None

    await wait_until(executed, 240, "the moved story to be published", every=1)
    items = await published(storypost_stack, "photoapp", account.username)
    assert len(items) == 1, items
    at = datetime.strptime(items[0]["publishedAt"], Z).replace(tzinfo=UTC)
    # Published at its new time: not before it, and soon after it (not a day later).
    assert target <= at < target + timedelta(seconds=60), (target, at)
    await page.reload()
    await expect(page.locator(f"[data-post='{post_uuid}']")).to_contain_text("executed")


async def test_a_series_carries_a_marker_and_is_canceled_from_the_calendar(
    api: Api, storypost_stack: StackHandle, workspace: Workspace, page: Page
) -> None:
    account = await connect_account(storypost_stack, workspace.org, "photoapp", unique("weekly"))
    week = next_monday()
    thursday = datetime.combine(week + timedelta(days=3), datetime.min.time(), UTC)
    post_uuid = str(uuid.uuid4())
    scheduled = await ok(
        api,
        workspace,
        "schedule-photoapp-story",
        {
            "storyPostUuid": post_uuid,
            "html": design("Weekly", "#8338ec"),
            "photoappUsername": account.username,
            "date": (thursday + timedelta(hours=14)).strftime(Z),
            "repeat": {"every": "P1W", "count": 3},
        },
    )
    series_uuid = scheduled["seriesUuid"]
    await page.goto(f"{workspace.app_url}/calendar?view=week&date={week}")
    item = page.locator(f"[data-move='{post_uuid}']")
    await expect(item.locator(f"[data-series='{series_uuid}']")).to_have_text("↻ series")
    await shoot(page, "calendar-series")
    await item.get_by_role(
        "button", name="Cancel the series of the photoapp story of 14:00"
    ).click()
    await expect(page.get_by_role("status")).to_contain_text("The series was canceled")
    status = await ok(api, workspace, "status-series", {"seriesUuid": series_uuid})
    assert status["status"] == "canceled", status
    assert {o["status"] for o in status["occurrences"]} == {"canceled"}, status
    # Canceled, it cannot be moved or canceled again; the marker stays.
    await expect(page.locator(f"[data-move='{post_uuid}']")).to_have_count(0)
    entry = page.locator(f"[data-post='{post_uuid}']")
    await expect(entry).to_contain_text("canceled")
    await expect(entry).to_contain_text("↻ series")

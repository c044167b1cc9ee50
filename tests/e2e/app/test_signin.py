"""Sign-in in a real browser: editorUrl without a login goes to sign-in and comes back, the
session cookie's flags, sign-out really ends the session, failed attempts are limited."""

from __future__ import annotations

import uuid

import pytest
from playwright.async_api import BrowserContext, Page, expect

from tests.e2e.app.conftest import Workspace, shoot, sign_in
from tests.support.api import Api

pytestmark = [pytest.mark.e2e, pytest.mark.integration]

DESIGN = (
    "<photoapp-story><div style='height:1920px;background:#ffd166;display:flex;"
    "align-items:center;justify-content:center'><h1 style='font-size:120px'>Sale</h1></div>"
    "</photoapp-story>"
)


async def test_editor_url_needs_a_login_and_comes_back_after_it(
    api: Api, workspace: Workspace, context: BrowserContext
) -> None:
    created = await api.call(
        workspace.org,
        "create-draft",
        {"draftUuid": str(uuid.uuid4()), "name": "Weekend sale", "html": DESIGN},
    )
    assert created.status_code == 200, created.text
    editor_url = created.json()["editorUrl"]
    assert editor_url.startswith(f"{workspace.app_url}/drafts/")
    page = await context.new_page()
    answer = await page.goto(editor_url)
    assert answer is not None and answer.status == 200
    assert page.url.startswith(f"{workspace.app_url}/signin?next=")
    await expect(page.get_by_role("heading", name="Sign in")).to_be_visible()
    await expect(page.locator("main")).to_contain_text("Sunny Shop")
    await shoot(page, "signin")

    # A wrong password: the same form again with a clear message, the email kept.
    await page.get_by_label("Email").fill(workspace.email)
    await page.get_by_label("Password").fill("not the password")
    await page.get_by_role("button", name="Sign in").click()
    await expect(page.get_by_role("alert")).to_have_text("Wrong email or password.")
    await expect(page.get_by_label("Email")).to_have_value(workspace.email)

    await sign_in(page, workspace)
    await expect(page).to_have_url(editor_url)
    await expect(page.get_by_role("heading", name="Weekend sale")).to_be_visible()

    cookies = {c["name"]: c for c in await context.cookies()}
    session = cookies["storypost_session"]
    assert session["httpOnly"] is True
    assert session["sameSite"] == "Lax"
    assert session["secure"] is False  # the test stack's public URL is http
    assert session["path"] == f"/o/{workspace.org.organization_id}"
    assert len(session["value"]) == 43

    # Signing out ends the session on the server: the old cookie no longer opens pages.
    await page.get_by_role("button", name="Sign out").click()
    await expect(page).to_have_url(f"{workspace.app_url}/signin")
    await expect(page.get_by_role("status")).to_have_text("You are signed out.")
    await context.add_cookies(
        [
            {
                "name": session["name"],
                "value": session["value"],
                "domain": session["domain"],
                "path": session["path"],
            }
        ]
    )
    await page.goto(editor_url)
    assert page.url.startswith(f"{workspace.app_url}/signin?next=")


async def test_another_workspace_does_not_accept_the_session(
    api: Api, workspace: Workspace, page: Page
) -> None:
    other = await api.admin.create_org("Other Shop")
    answer = await page.goto(f"{api.edge_url}/o/{other.organization_id}/posts")
    assert answer is not None and answer.status == 200
    assert page.url.startswith(f"{api.edge_url}/o/{other.organization_id}/signin?next=")
    await expect(page.locator("main")).to_contain_text("Other Shop")


async def test_failed_sign_ins_are_limited_per_email(
    workspace: Workspace, context: BrowserContext
) -> None:
    page = await context.new_page()
    await page.goto(f"{workspace.app_url}/signin")
    for _ in range(10):
        await page.get_by_label("Email").fill("mallory@sunny.example")
        await page.get_by_label("Password").fill("guess guess guess")
        await page.get_by_role("button", name="Sign in").click()
        await expect(page.get_by_role("alert")).to_have_text("Wrong email or password.")
    await page.get_by_label("Email").fill("Mallory@Sunny.example")
    await page.get_by_label("Password").fill("guess guess guess")
    async with page.expect_response(lambda r: r.request.method == "POST") as posted:
        await page.get_by_role("button", name="Sign in").click()
    answer = await posted.value
    assert answer.status == 429
    assert int(answer.headers["retry-after"]) > 0
    await expect(page.get_by_role("alert")).to_contain_text(
        "Too many sign-in attempts; try again in"
    )


async def test_unknown_workspace_and_the_workspace_picker(
    api: Api, workspace: Workspace, context: BrowserContext
) -> None:
    page = await context.new_page()
    await page.goto(api.edge_url)
    await expect(page.get_by_role("heading", name="Sign in to storypost")).to_be_visible()
    await page.get_by_label("Workspace id").fill(workspace.org.organization_id)
    await page.get_by_role("button", name="Continue").click()
    await expect(page).to_have_url(f"{workspace.app_url}/signin")
    answer = await page.goto(f"{api.edge_url}/o/{'f' * 24}/signin")
    assert answer is not None and answer.status == 404
    await expect(page.get_by_role("heading")).to_have_text("Not found")
    await expect(page.locator("main")).to_contain_text("This workspace was not found.")

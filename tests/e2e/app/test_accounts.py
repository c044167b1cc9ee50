"""Connected accounts in a real browser: a connect link made in the app connects the owner's
photoapp account and shows as used; a disconnected account is reconnected from the app."""

from __future__ import annotations

import pytest
from playwright.async_api import Browser, Page, expect

from storypost.account.v1 import account_pb2 as pb
from storypost.account.v1 import account_pb2_grpc
from storypost.testing.stack import StackHandle
from tests.e2e.app.conftest import DESKTOP, Workspace, shoot
from tests.support.api import Api

pytestmark = [pytest.mark.e2e, pytest.mark.integration]


async def authorize_on_sandbox(page: Page, username: str, display_name: str = "") -> None:
    """The sandbox platform's sign-in page, as the account owner."""
    await expect(page).to_have_title("Sign in to photoapp (sandbox)")
    await page.get_by_label("Username").fill(username)
    if display_name:
        await page.get_by_label("Display name (optional)").fill(display_name)
    await page.get_by_role("button", name="Allow").click()


async def test_connect_link_made_in_the_app_connects_an_account(
    api: Api, workspace: Workspace, page: Page, browser: Browser
) -> None:
    await page.get_by_role("link", name="Accounts").click()
    await expect(page.get_by_role("heading", name="Connected accounts")).to_be_visible()
    await page.get_by_label("Note (optional)").fill("Lisbon store")
    await page.get_by_role("button", name="Create connect link").click()
    await expect(page.get_by_role("status")).to_contain_text("Connect link created")
    link = (
        page.get_by_role("list", name="Connect links")
        .get_by_role("listitem")
        .filter(has_text="Lisbon store")
    )
    await expect(link).to_contain_text("active")
    url = (await link.locator("code").inner_text()).strip()
    assert url.startswith(f"{api.edge_url}/connect/")

    # The owner opens it in their own browser, without a login.
    owner = await browser.new_context(viewport=DESKTOP)
    try:
        owner_page = await owner.new_page()
        await owner_page.goto(url)
        await expect(owner_page.locator("main")).to_contain_text("Lisbon store")
        await owner_page.get_by_role("button", name="Continue to photoapp").click()
        await authorize_on_sandbox(owner_page, "sunny.lisbon", "Sunny Lisbon")
        await expect(owner_page.get_by_role("heading")).to_have_text("Your account is connected")
    finally:
        await owner.close()

    await page.reload()
    await expect(link).to_contain_text("used")
    await expect(link).to_contain_text("@sunny.lisbon")
    await expect(link.locator("code")).to_have_count(0)
    account = page.locator("[data-account='sunny.lisbon']")
    await expect(account).to_contain_text("Sunny Lisbon")
    await expect(account).to_contain_text("connected")
    listed = await api.call(workspace.org, "list-photoapp-users", {})
    assert [u["photoappUsername"] for u in listed.json()["photoappUsers"]] == ["sunny.lisbon"]
    await shoot(page, "accounts")


async def test_a_disconnected_account_is_reconnected_from_the_app(
    workspace: Workspace, page: Page, storypost_stack: StackHandle
) -> None:
    await page.goto(f"{workspace.app_url}/accounts")
    await page.get_by_label("Platform").select_option("CLIPAPP")
    await page.get_by_role("button", name="Connect", exact=True).click()
    await expect(page).to_have_title("Sign in to clipapp (sandbox)")
    await page.get_by_label("Username").fill("sunny.clips")
    await page.get_by_role("button", name="Allow").click()
    await expect(page.get_by_role("status")).to_contain_text(
        "@sunny.clips on CLIPAPP is connected."
    )
    account = page.locator("[data-account='sunny.clips']")
    await expect(account).to_contain_text("connected")

    # The platform refused its token: account-svc marks it disconnected.
    channel = storypost_stack.channel("account", 10.0)
    try:
        await account_pb2_grpc.AccountServiceStub(channel).MarkAccountDisconnected(
            pb.MarkAccountDisconnectedRequest(
                organization_id=workspace.org.organization_id,
                account=pb.AccountRef(
                    platform_username=pb.PlatformUsername(
                        platform="CLIPAPP", username="sunny.clips"
                    )
                ),
                reason="the access token was revoked",
            )
        )
    finally:
        await channel.close()
    await page.reload()
    await expect(account).to_contain_text("Disconnected: the access token was revoked")
    await shoot(page, "accounts-disconnected")
    # Every page says so, with a way to reconnect it from there.
    await page.goto(f"{workspace.app_url}/gallery")
    banner = page.locator("[data-reconnect]")
    await expect(banner).to_have_count(1)
    await expect(banner).to_contain_text("@sunny.clips needs to be connected again")
    await expect(banner).to_contain_text("the access token was revoked")
    await shoot(page, "reconnect-banner")
    await banner.get_by_role("button", name="Reconnect @sunny.clips").click()
    await expect(page).to_have_title("Sign in to clipapp (sandbox)")
    await page.get_by_label("Username").fill("sunny.clips")
    await page.get_by_role("button", name="Allow").click()
    await expect(page.get_by_role("status")).to_contain_text("is connected")
    await expect(account).not_to_contain_text("Disconnected")
    await expect(account.get_by_role("button", name="Reconnect @sunny.clips")).to_have_count(0)
    await expect(page.locator("[data-reconnect]")).to_have_count(0)

    await account.get_by_role("button", name="Remove @sunny.clips").click()
    await expect(page.get_by_role("status")).to_contain_text("@sunny.clips (CLIPAPP) was removed.")
    await expect(account).to_have_count(0)

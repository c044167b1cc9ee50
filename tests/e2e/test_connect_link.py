"""A connect link in a real headless browser: the owner opens it, signs in on the sandbox
photoapp, comes back, and the account is listed by list-photoapp-users."""

from __future__ import annotations

import uuid

import pytest
from playwright.async_api import Browser, expect

from tests.support.api import Api

pytestmark = [pytest.mark.e2e, pytest.mark.integration]


async def test_connect_through_a_connect_link_in_a_browser(api: Api, browser: Browser) -> None:
    org = await api.admin.create_org("Sunny Shop")
    created = await api.call(
        org,
        "create-connect-link",
        {"connectLinkUuid": str(uuid.uuid4()), "description": "Photoapp of the Lisbon store"},
    )
    assert created.status_code == 200, created.text
    link = created.json()["connectLinkUrl"]
    context = await browser.new_context()
    page = await context.new_page()
    try:
        answer = await page.goto(link)
        assert answer is not None and answer.status == 200
        await expect(page.get_by_role("heading")).to_have_text("Connect your photoapp account")
        await expect(page.get_by_text("Photoapp of the Lisbon store")).to_be_visible()
        await expect(page.locator("main")).to_contain_text("Sunny Shop")
        await page.get_by_role("button", name="Continue to photoapp").click()
        # The sandbox photoapp's sign-in page.
        await expect(page).to_have_title("Sign in to photoapp (sandbox)")
        await page.get_by_label("Username").fill("Sunny.Lisbon")
        await page.get_by_label("Display name (optional)").fill("Sunny Lisbon")
        await page.get_by_label("Linknet destinations (optional, one per line: id:name:type)").fill(
            "104857512345678:Sunny Shop:page"
        )
        await page.get_by_role("button", name="Allow").click()
        # Back on the edge: connected.
        await expect(page.get_by_role("heading")).to_have_text("Your account is connected")
        await expect(page.locator("main")).to_contain_text("@sunny.lisbon")
        assert page.url.startswith(f"{api.edge_url}/connect/callback?")
        # The link worked once.
        again = await page.goto(link)
        assert again is not None and again.status == 410
        await expect(page.get_by_role("heading")).to_have_text("This connect link was already used")
        unknown = await page.goto(f"{api.edge_url}/connect/{'x' * 43}")
        assert unknown is not None and unknown.status == 404
        await expect(page.get_by_role("heading")).to_have_text("This connect link does not exist")
    finally:
        await context.close()
    listed = await api.call(org, "list-photoapp-users", {})
    assert listed.status_code == 200
    users = listed.json()["photoappUsers"]
    assert len(users) == 1
    assert users[0]["photoappUsername"] == "sunny.lisbon"
    assert users[0]["photoappId"].isdigit()
    assert users[0]["linknetDestinations"] == [
        {
            "linknetDestinationId": "104857512345678",
            "linknetDestinationName": "Sunny Shop",
            "linknetDestinationType": "page",
        }
    ]


async def test_denying_access_connects_nothing(api: Api, browser: Browser) -> None:
    org = await api.admin.create_org("Denied Shop")
    created = await api.call(org, "create-connect-link", {"connectLinkUuid": str(uuid.uuid4())})
    link = created.json()["connectLinkUrl"]
    context = await browser.new_context()
    page = await context.new_page()
    try:
        await page.goto(link)
        await page.get_by_role("button", name="Continue to photoapp").click()
        await page.get_by_role("button", name="Deny").click()
        await expect(page.get_by_role("heading")).to_have_text("The account was not connected")
        await expect(page.locator("main")).to_contain_text("did not allow access")
        # The link is still usable.
        answer = await page.goto(link)
        assert answer is not None and answer.status == 200
    finally:
        await context.close()
    listed = await api.call(org, "list-photoapp-users", {})
    assert listed.json() == {"photoappUsers": []}

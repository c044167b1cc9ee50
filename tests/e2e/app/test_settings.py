"""Settings in a real browser: an API credential created in the app works against the API
(its token shown once) and can be revoked; a webhook added in the app gets a test delivery
at a local receiver, shows it in the delivery log and redelivers it."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from aiohttp import web
from playwright.async_api import Page, expect

from tests.e2e.app.conftest import Workspace, shoot
from tests.support.api import Api

pytestmark = [pytest.mark.e2e, pytest.mark.integration]


async def test_credential_created_in_the_app_calls_the_api_and_is_revoked(
    api: Api, workspace: Workspace, page: Page
) -> None:
    await page.get_by_role("link", name="API credentials").click()
    await expect(page.get_by_role("heading", name="API credentials")).to_be_visible()
    await page.get_by_label("Name").fill("production server")
    await page.get_by_role("button", name="Create credential").click()
    token = (await page.get_by_test_id("new-token").inner_text()).strip()
    assert token.startswith("sp_") and len(token) == 46
    await expect(page.get_by_text("only this once")).to_be_visible()
    await expect(page.get_by_role("button", name="Copy")).to_be_visible()
    await shoot(page, "credentials-created")

    # The shown token works against the API.
    answer = await api.call(workspace.org, "generate-uuid", {}, token=token)
    assert answer.status_code == 200, answer.text
    assert len(answer.json()["uuid"]) == 36

    # It is never shown again; the list has its name and when it was last used.
    await page.goto(f"{workspace.app_url}/settings/credentials")
    assert token not in await page.content()
    row = page.get_by_role("row").filter(has_text="production server")
    await expect(row).to_contain_text(token[:8])
    await expect(row.get_by_role("cell").nth(3)).not_to_have_text("never")
    await shoot(page, "credentials")

    await row.get_by_role("button", name="Revoke production server").click()
    await expect(page.get_by_role("status")).to_contain_text("was revoked")
    await expect(page.get_by_role("row").filter(has_text="production server")).to_have_count(0)
    deadline = time.monotonic() + 10
    while True:
        answer = await api.call(workspace.org, "generate-uuid", {}, token=token)
        if answer.status_code == 401 or time.monotonic() > deadline:
            break
        await asyncio.sleep(0.5)
    assert answer.status_code == 401
    assert answer.json() == {"errorMessage": "not authenticated"}


@dataclass
class Receiver:
    """A plain-http webhook receiver on 127.0.0.1."""

    url: str = ""
    received: list[dict[str, Any]] = field(default_factory=list)
    arrived: asyncio.Event = field(default_factory=asyncio.Event)

    async def handle(self, request: web.Request) -> web.Response:
        self.received.append(
            {
                "headers": dict(request.headers),
                "body": json.loads(await request.read()),
            }
        )
        self.arrived.set()
        return web.Response(status=204)

    async def wait_for(self, count: int, timeout: float = 15.0) -> None:
        async with asyncio.timeout(timeout):
            while len(self.received) < count:
                self.arrived.clear()
                await self.arrived.wait()


@pytest.fixture
async def receiver() -> AsyncIterator[Receiver]:
    found = Receiver()
    app = web.Application()
    app.router.add_post("/hooks/storypost", found.handle)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    found.url = f"http://127.0.0.1:{port}/hooks/storypost"
    yield found
    await runner.cleanup()


async def test_webhook_added_in_the_app_gets_a_test_and_a_redelivery(
    workspace: Workspace, page: Page, receiver: Receiver
) -> None:
    await page.get_by_role("link", name="Webhooks").click()
    await expect(page.get_by_role("heading", name="Webhooks", exact=True)).to_be_visible()
    # https is the rule: a plain http URL elsewhere than on loopback is refused, clearly.
    await page.get_by_role("textbox", name="URL").fill("http://example.com/hooks")
    await page.get_by_role("button", name="Add webhook").click()
    await expect(page.get_by_role("alert")).to_contain_text("https")

    await page.get_by_role("textbox", name="URL").fill(receiver.url)
    await page.get_by_label("Reel posts").check()
    await page.get_by_role("button", name="Add webhook").click()
    await expect(page.get_by_role("status")).to_contain_text(f"Webhook {receiver.url} was added.")
    await expect(page.locator("main")).to_contain_text("1 of 5 used")

    await page.get_by_role("button", name=f"Send a test to {receiver.url}").click()
    await receiver.wait_for(1)
    await expect(page.get_by_role("status")).to_contain_text("delivered: HTTP 204")
    first = receiver.received[0]
    assert first["headers"]["X-Service-Event"] == "photoapp_story_post.status_changed"
    assert first["body"]["test"] is True and first["body"]["status"] == "executed"
    delivery_uuid = first["headers"]["X-Service-Delivery"]

    log = page.get_by_role("row").filter(has_text=receiver.url)
    await expect(log).to_have_count(1)
    await expect(log).to_contain_text("succeeded")
    await expect(log).to_contain_text("HTTP 204")
    await log.get_by_role("button", name=f"Redeliver {delivery_uuid}").click()
    await expect(page.get_by_role("status")).to_contain_text("will be sent again")
    await receiver.wait_for(2)
    assert receiver.received[1]["headers"]["X-Service-Delivery"] == delivery_uuid
    # The log shows the second attempt once webhook-svc recorded it.
    attempts = page.get_by_role("row").filter(has_text=receiver.url).get_by_role("cell").nth(4)
    for _ in range(20):
        await page.goto(f"{workspace.app_url}/settings/webhooks")
        if (await attempts.inner_text()).strip().endswith("2"):
            break
        await asyncio.sleep(0.5)
    await expect(attempts).to_have_text("2")
    await shoot(page, "webhooks")

    await page.get_by_role("button", name=f"Remove {receiver.url}").click()
    await expect(page.get_by_role("status")).to_contain_text("was removed")
    await expect(page.locator("main")).to_contain_text("0 of 5 used")

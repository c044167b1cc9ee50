"""Fixtures of the app's browser tests: one headless Chromium for the session, a workspace
with a user (made with `storypost admin create-user`), signed-in pages, screenshots."""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from playwright.async_api import (
    Browser,
    BrowserContext,
    Page,
    ViewportSize,
    expect,
)

from storypost.testing.stack import StackHandle
from tests.support.api import Api, Org

SCREENSHOTS = Path(__file__).parent.parent / "screenshots"
DESKTOP = ViewportSize(width=1280, height=800)
PHONE = ViewportSize(width=390, height=844)
PASSWORD = "a long enough password"


@dataclass(frozen=True)
class Workspace:
    org: Org
    email: str
    password: str
    app_url: str


async def create_user(stack: StackHandle, organization_id: str, email: str, password: str) -> str:
    """`storypost admin create-user --org ID --email … --password-stdin`, as an admin would."""
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "storypost_cli",
        "admin",
        "create-user",
        "--org",
        organization_id,
        "--email",
        email,
        "--password-stdin",
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        # The stack's addresses and the operator's signing key, as an admin has them.
        env={**os.environ, **stack.env},
    )
    out, err = await process.communicate(f"{password}\n".encode())
    assert process.returncode == 0, err.decode()
    return out.decode()


@pytest.fixture(scope="session")
async def workspace(api: Api, storypost_stack: StackHandle) -> Workspace:
    """One workspace for the app tests (pages do not count against the API rate limit)."""
    org = await api.admin.create_org("Sunny Shop")
    email = "ana@sunny.example"
    printed = await create_user(storypost_stack, org.organization_id, email, PASSWORD)
    assert f'"email": "{email}"' in printed
    return Workspace(org, email, PASSWORD, f"{api.edge_url}/o/{org.organization_id}")


async def sign_in(page: Page, workspace: Workspace) -> None:
    """Fills the sign-in form the page is on and waits to leave it."""
    await page.get_by_label("Email").fill(workspace.email)
    await page.get_by_label("Password").fill(workspace.password)
    await page.get_by_role("button", name="Sign in").click()
    await expect(page).not_to_have_url(f"{workspace.app_url}/signin", timeout=15_000)


@pytest.fixture
async def context(browser: Browser) -> AsyncIterator[BrowserContext]:
    """A fresh browser profile (no cookies) at desktop size."""
    fresh = await browser.new_context(viewport=DESKTOP)
    fresh.set_default_timeout(20_000)
    yield fresh
    await fresh.close()


@pytest.fixture
async def page(context: BrowserContext, workspace: Workspace) -> Page:
    """A page signed in to the workspace, on its gallery. Confirmation dialogs are accepted."""
    opened = await context.new_page()
    opened.on("dialog", lambda dialog: asyncio.ensure_future(dialog.accept()))
    await opened.goto(f"{workspace.app_url}/gallery")
    await sign_in(opened, workspace)
    await expect(opened).to_have_url(f"{workspace.app_url}/gallery")
    return opened


async def shoot(page: Page, name: str) -> None:
    """Screenshots of the page at desktop (1280x800) and phone (390x844) widths."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    size = page.viewport_size or DESKTOP
    for label, viewport in (("desktop", DESKTOP), ("phone", PHONE)):
        await page.set_viewport_size(viewport)
        # Headless Chromium draws a sandboxed iframe (the editor's live preview) at a new
        # width only once it is on screen; a full-page shot captures the whole page anyway.
        for frame in await page.locator("iframe").all():
            await frame.scroll_into_view_if_needed()
        await page.wait_for_timeout(300)
        await page.screenshot(path=str(SCREENSHOTS / f"{name}-{label}.png"), full_page=True)
    await page.set_viewport_size(size)

"""One cell of the failure matrix on the test stack: its own organization and sandbox account,
its post, its switches, and the checks of where it ended."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

from sandbox_net.switches import Switch
from storypost.account.v1 import account_pb2 as pb
from storypost.testing.stack import StackHandle
from tests.integration.publish.conftest import IMAGE_STORY, username
from tests.support.accounts import connect_account, published, set_switch
from tests.support.api import Api, Org
from tests.support.failure_matrix import Cell, Driver, Expect, Mode

# Social posts use credits: each cell's organization starts with this many.
CREDITS = 5
# A kill cell's answer is held until the test releases it (after the kill).
HOLD_FOR_KILL_SECONDS = 600
# A late answer comes this long after publish-svc's platform timeout.
LATE_BY_SECONDS = 2.0
FINAL = ("executed", "failed")
PROCEDURES = {
    "story": ("schedule-photoapp-story", "status-photoapp-story", "storyPostUuid"),
    "reel": ("schedule-photoapp-reel", "status-photoapp-reel", "reelPostUuid"),
    "clipapp": ("schedule-clipapp-post", "status-clipapp-post", "clipappPostUuid"),
    "social": ("schedule-social-post", "status-social-post", "socialPostUuid"),
}


def video_design(url: str) -> str:
    return f"<photoapp-story src='{url}'></photoapp-story><h1>matrix</h1>"


@dataclass
class Run:
    cell: Cell
    org: Org
    username: str
    account: pb.ConnectedAccount
    uuid: str = field(default_factory=lambda: str(uuid.uuid4()))
    # Unique text of the post, and of the failure the cell's switch answers.
    text: str = field(default_factory=lambda: f"matrix {uuid.uuid4().hex[:10]}")
    # The status scheduling answered.
    scheduled_as: str = ""

    @property
    def driver(self) -> Driver:
        return self.cell.call.driver

    @property
    def record_id(self) -> str:
        return f"{self.driver.kind}:{self.org.organization_id}:{self.uuid}"

    @property
    def ref(self) -> dict[str, str]:
        return {PROCEDURES[self.driver.kind][2]: self.uuid}

    @property
    def failure(self) -> str:
        return f"refused by the matrix ({self.text})"

    @property
    def account_id(self) -> str:
        return str(self.account.platform_account_id)

    def body(self, video_url: str, date: str | None) -> dict[str, Any]:
        driver = self.driver
        html = video_design(video_url) if driver.media == "video" else IMAGE_STORY
        body: dict[str, Any] = {PROCEDURES[driver.kind][2]: self.uuid, "html": html}
        if driver.kind in ("story", "reel"):
            body["photoappUsername"] = self.username
            if driver.share_to_linknet:
                body["shareToLinknet"] = True
        elif driver.kind == "clipapp":
            body.update(
                clipappAccountId=self.account_id, title=self.text, privacyLevel=driver.privacy
            )
        else:
            body.update(
                socialAccountId=self.account.social_account_id,
                postType=driver.post_type,
                text=self.text,
            )
            if driver.privacy:
                body["options"] = {"privacyLevel": driver.privacy}
        if date:
            body["date"] = date
        return body


async def prepare(api: Api, stack: StackHandle, cell: Cell) -> Run:
    driver = cell.call.driver
    org = await api.admin.create_org(f"matrix {cell.name}")
    if driver.kind == "social":
        await api.admin.set_credits(org.organization_id, CREDITS)
    name = username()
    account = await connect_account(
        stack,
        org,
        driver.platform,
        name,
        connection="social" if driver.kind == "social" else "",
        linknet_destinations=["42:Page:page"] if driver.share_to_linknet else (),
    )
    return Run(cell, org, name, account)


def switch_body(run: Run, mode: Mode, endpoint: str, timeout: float) -> dict[str, Any]:
    """The switch that makes the next call to `endpoint` fail, answer late, or hold."""
    if mode is Mode.FAIL:
        # A refusal that ends the post stays on (a resumed attempt is refused too); one that
        # the post must get past answers once.
        once = {"times": 1} if run.cell.expect is Expect.EXECUTED else {}
        return {"mode": "fail", "message": run.failure, "endpoint": endpoint, **once}
    seconds = timeout + LATE_BY_SECONDS if mode is Mode.LATE else HOLD_FOR_KILL_SECONDS
    return {"mode": "late-answer", "seconds": seconds, "endpoint": endpoint, "times": 1}


async def arm(stack: StackHandle, run: Run, timeout: float) -> None:
    """The cell's first switch: its own, or for a look-up the lost answer it follows."""
    call = run.cell.call
    if call.after_lost:
        body = switch_body(run, Mode.LATE, call.after_lost, timeout)
    else:
        body = switch_body(run, run.cell.mode, call.endpoint, timeout)
    await set_switch(stack, run.driver.platform, account=run.account_id, **body)


async def arm_look_up(stack: StackHandle, run: Run, timeout: float) -> None:
    """Once the publishing call was performed (its answer held): the look-up's switch."""
    body = switch_body(run, run.cell.mode, run.cell.call.endpoint, timeout)
    await set_switch(stack, run.driver.platform, account=run.account_id, **body)


def holds(run: Run, items: list[dict[str, Any]], endpoint: str) -> list[dict[str, Any]]:
    """The held answers of this cell's account for `endpoint` (matched as switches are)."""
    matcher = Switch(run.driver.platform, run.account_id, "ok", endpoint=endpoint)
    return [
        item
        for item in items
        if item["platform"] == run.driver.platform
        and item["accountId"] == run.account_id
        and matcher.applies_to(item["path"])
    ]


@dataclass
class Stores:
    """The collections a cell's checks read."""

    posts: Any
    balances: Any
    consumptions: Any
    daily: Any
    quota: Any


def settled(doc: dict[str, Any] | None) -> bool:
    """Final, its events relayed, nothing owed to account-svc (credit, daily release)."""
    return (
        doc is not None
        and doc["status"] in FINAL
        and not doc.get("outbox")
        and "creditDueAt" not in doc
        and not doc.get("dailyReleaseDueAt")
    )


async def problems(api: Api, stack: StackHandle, stores: Stores, run: Run) -> list[str]:
    """Everything about the cell's end that is not as the matrix says (empty: all right)."""
    found: list[str] = []
    expect = run.cell.expect
    want = "executed" if expect is Expect.EXECUTED else "failed"
    answer = await api.call(run.org, PROCEDURES[run.driver.kind][1], run.ref)
    status: dict[str, Any] = answer.json() if answer.status_code == 200 else {}
    items = await published(stack, run.driver.platform, run.account_id)
    doc = await stores.posts.find_one({"_id": run.record_id}) or {}
    if status.get("status") != want:
        found.append(f"status {status or answer.text}, expected {want}")
    if len(items) > 1:
        found.append(f"{len(items)} posts on the platform")
    if expect is Expect.EXECUTED:
        if len(items) != 1 or doc.get("platformPostId") != items[0]["postId"]:
            found.append(f"record's post {doc.get('platformPostId')} is not the one published")
        permalink = status.get("permalink")
        # clipapp reports no permalink with its status (the spec: "when the platform
        # reports one"); the other platforms answer theirs.
        reported = run.driver.kind == "social" and run.driver.platform != "clipapp"
        if reported and (not items or permalink != items[0]["permalink"]):
            found.append(f"permalink {permalink!r} is not the published one")
    else:
        message = str(status.get("errorMessage") or "")
        if expect is Expect.FAILED:
            if items:
                found.append("failed, yet published")
            if run.failure not in message:
                found.append(f"errorMessage {message!r} does not give the platform's reason")
        elif "outcome is unknown" not in message or "check the" not in message:
            found.append(f"errorMessage {message!r} does not say the outcome is unknown")
    found += await counts(stores, run)
    return found


async def counts(stores: Stores, run: Run) -> list[str]:
    """Credits (taken when executed) and the daily count (kept unless it surely did not go
    out) of social posts; the story quota (every story scheduled counts)."""
    found: list[str] = []
    expect = run.cell.expect
    org = run.org.organization_id
    if run.driver.kind == "social":
        balance = await stores.balances.find_one({"_id": org})
        taken = await stores.consumptions.count_documents(
            {"organizationId": org, "state": "applied"}
        )
        want = (CREDITS - 1, 1) if expect is Expect.EXECUTED else (CREDITS, 0)
        if ((balance or {}).get("balance"), taken) != want:
            found.append(f"credits {(balance or {}).get('balance')}, taken {taken}; want {want}")
        # publish-svc reserves with the post's record id as its key.
        key = f"{org}:{run.record_id}"
        reserved = await stores.daily.count_documents({"keys": key})
        if reserved != (0 if expect is Expect.FAILED else 1):
            found.append(f"daily count holds the post {reserved} times")
    if run.driver.kind == "story":
        quota = await stores.quota.find_one({"_id": f"PHOTOAPP:{run.account_id}"}) or {}
        slots = [slot for slot in quota.get("slots", []) if slot["post"] == run.record_id]
        if len(slots) != 1:
            found.append(f"story quota counts the post {len(slots)} times")
    return found

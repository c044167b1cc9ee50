"""Operating the running components: metrics, health checks, graceful stop, crash recovery.

Each test runs against whatever the session's stack is: local processes, or containers of our
images (`make test-containers`), where a graceful stop is `docker stop` and a crash is
`docker kill`.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from storypost.testing.stack import StackHandle
from tests.support.accounts import connect_account, published, sandbox_switch
from tests.support.api import Api, Org
from tests.support.mongo import stack_mongo_url

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[3]
HEALTHCHECK = ROOT / "deploy" / "docker" / "healthcheck.py"
SERVICES = ("account", "render", "publish", "webhook")
# Stopped one by one; the stack's supervisor allows each 15 s before SIGKILL.
STOPPED = ("webhook", "publish", "account", "sandbox", "render", "edge")
GRACE_SECONDS = 15.0
STORY = (
    "<photoapp-story></photoapp-story>"
    "<div style='width:1080px;height:1920px;background:#36c'><h1>due</h1></div>"
)


def families(text: str) -> dict[str, list[str]]:
    """Metric family name → label sets of its samples (parsing fails on a malformed page);
    the pages of several replicas, one after the other, add up."""
    found: dict[str, list[str]] = {}
    for family in text_string_to_metric_families(text):
        found.setdefault(family.name, []).extend(
            str(sorted(s.labels.items())) for s in family.samples
        )
    return found


async def test_every_metrics_endpoint_answers_and_counts(
    api: Api, org: Org, storypost_stack: StackHandle
) -> None:
    assert (await api.call(org, "generate-uuid", {})).status_code == 200
    pages: dict[str, str] = {}
    async with httpx.AsyncClient(timeout=10, trust_env=False) as http:
        for component in ("edge", *SERVICES, "sandbox"):
            # Every replica's endpoint (one, except in the production shape): the call was
            # answered by one of them.
            for url in storypost_stack.metrics_urls(component):
                page = await http.get(url)
                assert page.status_code == 200, component
                assert page.headers["content-type"].startswith("text/plain"), component
                pages[component] = pages.get(component, "") + page.text
    edge = families(pages["edge"])
    assert any("generate-uuid" in labels for labels in edge["storypost_edge_requests"])
    assert "storypost_edge_request_seconds" in edge
    for component in SERVICES:
        service = families(pages[component])
        assert "storypost_grpc_requests" in service, component
        assert "storypost_grpc_request_seconds" in service, component
    # The edge authenticated the call with account-svc: its counter moved.
    account = families(pages["account"])["storypost_grpc_requests"]
    assert any("Authenticate" in labels or "Token" in labels for labels in account), account
    assert families(pages["sandbox"]), "the sandbox exposes no metric"


async def test_the_image_healthcheck_reports_each_component(storypost_stack: StackHandle) -> None:
    containers = storypost_stack.processes.containers
    if containers is not None and set(SERVICES) <= set(containers.components):
        # Docker runs each image's HEALTHCHECK; every one reaches `healthy`.
        deadline = time.monotonic() + 90
        pending = set(containers.components)
        while pending:
            pending = {c for c in pending if containers.health_status(c) != "healthy"}
            assert time.monotonic() < deadline, f"not healthy: {pending}"
            await asyncio.sleep(1)
        return
    # Local processes: the same script the images run, pointed at each process's port.
    ports = storypost_stack.ports

    def check(kind: str, env: dict[str, str]) -> int:
        result = subprocess.run(
            [sys.executable, str(HEALTHCHECK), kind],
            env={**os.environ, **env},
            capture_output=True,
            timeout=30,
            check=False,
        )
        return result.returncode

    for component in SERVICES:
        port = str(getattr(ports, component))
        assert check("grpc", {"STORYPOST_GRPC_PORT": port}) == 0, component
    assert check("edge", {"STORYPOST_EDGE_PORT": str(ports.edge)}) == 0
    assert check("sandbox", {"STORYPOST_SANDBOX_PORT": str(ports.sandbox)}) == 0
    mongo = stack_mongo_url(storypost_stack.env)
    assert check("mongo", {"MONGO_PORT": mongo.split(":")[2].split("/")[0]}) == 0
    # And it says no where nothing answers.
    assert check("grpc", {"STORYPOST_GRPC_PORT": "1"}) == 1


@pytest.mark.parametrize("component", STOPPED)
async def test_a_graceful_stop_exits_0_within_the_grace_period(
    api: Api, fresh_org: Org, storypost_stack: StackHandle, component: str
) -> None:
    started = time.monotonic()
    code = await storypost_stack.processes.stop_component(component, GRACE_SECONDS)
    elapsed = time.monotonic() - started
    try:
        assert code == 0, storypost_stack.processes.logs(component, 30)
        assert elapsed < GRACE_SECONDS, f"{component} took {elapsed:.1f} s to stop"
    finally:
        await storypost_stack.processes.start_component(component)
    # Serving again. The edge's channel to a restarted service reconnects on its own backoff
    # (at most 2 s, runtime/grpc_client.py); a call meanwhile gets the documented 503 with
    # Retry-After, never anything else. Behind the production shape's balancer, a keep-alive
    # connection to an edge that stopped is dropped once, as a load balancer's would be.
    deadline = time.monotonic() + 5
    while True:
        try:
            answer = await api.call(fresh_org, "generate-uuid", {})
        except httpx.TransportError:
            assert storypost_stack.mode == "production" and time.monotonic() < deadline
            continue
        if answer.status_code != 503:
            break
        assert "Retry-After" in answer.headers and time.monotonic() < deadline, answer.text
        await asyncio.sleep(0.2)
    assert answer.status_code == 200, answer.text


async def test_publish_killed_while_posts_are_due_publishes_each_once(
    api: Api, fresh_org: Org, storypost_stack: StackHandle
) -> None:
    """SIGKILL (`docker kill`) of publish-svc with due posts mid-publish, then a restart: every
    post is published exactly once, counted at the sandbox network."""
    user = f"k{uuid.uuid4().hex[:12]}"
    await connect_account(storypost_stack, fresh_org, "photoapp", user)
    posts = [
        {"storyPostUuid": str(uuid.uuid4()), "photoappUsername": user, "html": STORY}
        # The sandbox allows 3 story posts per account in 24 hours.
        for _ in range(3)
    ]
    # Every platform call takes 2 s: the kill lands while posts are being published.
    async with sandbox_switch(storypost_stack, "photoapp", "slow", account=user, seconds=2):
        for body in posts:
            answer = await api.call(fresh_org, "schedule-photoapp-story", body)
            assert answer.status_code == 200, answer.text
        await asyncio.sleep(4)
        await storypost_stack.processes.kill("publish")
        await storypost_stack.processes.start_component("publish")
    deadline = time.monotonic() + 150
    for body in posts:
        ref = {"storyPostUuid": body["storyPostUuid"]}
        while True:
            answer = await api.call(fresh_org, "status-photoapp-story", ref)
            # 503 + Retry-After while the edge reconnects to the restarted service: retry.
            assert answer.status_code in (200, 503), answer.text
            status = answer.json()
            if status.get("status") in {"executed", "failed"}:
                break
            assert time.monotonic() < deadline, status
            await asyncio.sleep(1)
        assert status["status"] == "executed", status
    items = await published(storypost_stack, "photoapp", user)
    assert len(items) == len(posts), items

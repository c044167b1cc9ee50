"""Issue #22 item 4: the production shape on containers (STORYPOST_TEST_STACK=production): two
replicas of every service and of the edge behind a balancer, STORYPOST_ENVIRONMENT=production
with keys made for the run. Calls reach both replicas of everything (their own metrics
endpoints count them), and killing one replica of each component in turn while schedule calls
stream in loses no accepted post and publishes none twice.

In the other stack modes there is one replica of everything: these tests run in the
production-shape pass of `make test` (docs/deploy.md).
"""

from __future__ import annotations

import asyncio
import time
import uuid
from typing import Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from storypost.testing.stack import StackHandle
from storypost.webhook.v1 import webhook_pb2 as wpb
from storypost.webhook.v1 import webhook_pb2_grpc
from tests.integration.deploy.conftest import REPLICA_COUNTERS
from tests.reliability.support import IMAGE_STORY, wait_status
from tests.support.accounts import connect_account, published
from tests.support.api import Api, Org

pytestmark = pytest.mark.integration

SERVICES = ("account", "render", "publish", "webhook")
COUNTERS = {"edge": "storypost_edge_requests", "default": "storypost_grpc_requests"}


@pytest.fixture(autouse=True)
def production_shape(storypost_stack: StackHandle) -> None:
    if storypost_stack.mode != "production":
        pytest.skip("runs against the production shape (STORYPOST_TEST_STACK=production)")


def requests_counted(page: str, family: str) -> float:
    """Calls a replica counted (health checks left out: every replica gets those)."""
    total = 0.0
    for metric in text_string_to_metric_families(page):
        if metric.name != family:
            continue
        for sample in metric.samples:
            if sample.name.endswith("_total") and "Health" not in str(sample.labels):
                total += sample.value
    return total


async def counters(stack: StackHandle) -> dict[str, list[float]]:
    found: dict[str, list[float]] = {}
    async with httpx.AsyncClient(timeout=10, trust_env=False) as http:
        for component in ("edge", *SERVICES):
            family = COUNTERS.get(component, COUNTERS["default"])
            pages = [(await http.get(url)).text for url in stack.metrics_urls(component)]
            found[component] = [requests_counted(page, family) for page in pages]
    return found


async def test_calls_reach_both_replicas_of_every_component(
    storypost_stack: StackHandle, fresh_org: Org
) -> None:
    assert all(len(storypost_stack.metrics_urls(c)) == 2 for c in ("edge", *SERVICES))
    headers = {"Authorization": f"Bearer {fresh_org.token}"}
    # A new connection per call: the balancer spreads connections over the edges.
    fresh = httpx.Limits(max_keepalive_connections=0)
    async with httpx.AsyncClient(timeout=130, limits=fresh, trust_env=False) as http:

        async def call(procedure: str, body: dict[str, Any]) -> int:
            answer = await http.post(
                f"{fresh_org.base_url}/{procedure}", json=body, headers=headers
            )
            return answer.status_code

        for _ in range(8):
            assert await call("generate-uuid", {}) == 200
            # An unknown post: publish-svc answers NOT_FOUND, the edge 400.
            missing = {"socialPostUuid": str(uuid.uuid4())}
            assert await call("status-social-post", missing) == 400
        for _ in range(4):
            draft = {"draftUuid": str(uuid.uuid4()), "html": IMAGE_STORY}
            assert await call("create-draft", draft) == 200
    # webhook-svc has no public procedure: internal callers balance over it the same way.
    async with storypost_stack.channel("webhook") as channel:
        webhooks = webhook_pb2_grpc.WebhookServiceStub(channel)
        for _ in range(8):
            await webhooks.ListWebhooks(
                wpb.ListWebhooksRequest(organization_id=fresh_org.organization_id)
            )
    counted = await counters(storypost_stack)
    REPLICA_COUNTERS.update(counted)
    for component, per_replica in counted.items():
        assert all(count > 0 for count in per_replica), (component, per_replica)


async def test_killing_one_replica_of_each_component_loses_and_doubles_no_post(
    storypost_stack: StackHandle, api: Api, fresh_org: Org
) -> None:
    # Four accounts (two per caller, in turn) stay far from linknet's 50 posts a day.
    names = [f"ps{uuid.uuid4().hex[:10]}" for _ in range(4)]
    accounts = [
        await connect_account(storypost_stack, fresh_org, "linknet", name, connection="social")
        for name in names
    ]
    accepted: list[str] = []
    retried = 0
    stop = asyncio.Event()
    headers = {"Authorization": f"Bearer {fresh_org.token}"}
    started = time.monotonic()
    # What a failure message shows: when each replica went down and came back.
    replicas: list[str] = []

    def now() -> str:
        return f"{time.monotonic() - started:.1f}s"

    async def caller(account_ids: list[str]) -> None:
        nonlocal retried
        fresh = httpx.Limits(max_keepalive_connections=0)
        async with httpx.AsyncClient(timeout=130, limits=fresh, trust_env=False) as http:
            turn = 0
            # At most 40 posts per account, under linknet's daily limit.
            while not stop.is_set() and turn < 40 * len(account_ids):
                turn += 1
                body = {
                    "socialPostUuid": str(uuid.uuid4()),
                    "socialAccountId": account_ids[turn % len(account_ids)],
                    "postType": "IMAGE_POST",
                    "html": IMAGE_STORY,
                    "text": "production shape",
                }
                deadline = time.monotonic() + 60
                attempts: list[str] = []
                # As the spec tells callers: retry 429/5xx and lost answers with the same UUID.
                while True:
                    sent = now()
                    try:
                        answer = await http.post(
                            f"{fresh_org.base_url}/schedule-social-post", json=body, headers=headers
                        )
                        status = answer.status_code
                        attempts.append(f"{sent}-{now()}: {status}")
                    except httpx.TransportError as error:
                        status = 0
                        attempts.append(f"{sent}-{now()}: {error!r}")
                    if status == 200:
                        accepted.append(body["socialPostUuid"])
                        break
                    assert status in (0, 429, 502, 503, 504), answer.text
                    assert time.monotonic() < deadline, (
                        f"never accepted: {status}; attempts {attempts[:3]} ... {attempts[-5:]}; "
                        f"replicas {replicas}"
                    )
                    retried += 1
                    await asyncio.sleep(0.5)

    ids = [account.social_account_id for account in accounts]
    callers = [asyncio.create_task(caller(ids[n::2])) for n in range(2)]
    try:
        for replica in (f"{component}-2" for component in (*SERVICES, "edge")):
            await asyncio.sleep(3)
            await storypost_stack.processes.kill(replica)
            replicas.append(f"{replica} killed {now()}")
            await asyncio.sleep(3)
            await storypost_stack.processes.start_component(replica)
            replicas.append(f"{replica} back {now()}")
        await asyncio.sleep(3)
    finally:
        stop.set()
        ended = await asyncio.gather(*callers, return_exceptions=True)
    failed = [result for result in ended if isinstance(result, BaseException)]
    if failed:
        # The stack goes with the run: what the edges and the services said is kept here.
        for component in ("edge", "publish", "account"):
            print(f"--- {component}\n{storypost_stack.processes.logs(component, 80)}")
        raise failed[0]
    assert len(accepted) >= 10, accepted
    for post_uuid in accepted:
        done = await wait_status(
            api,
            fresh_org,
            "status-social-post",
            {"socialPostUuid": post_uuid},
            {"executed", "failed"},
        )
        assert done["status"] == "executed", done
    platform_posts = [
        item for name in names for item in await published(storypost_stack, "linknet", name)
    ]
    assert len(platform_posts) == len(accepted), (len(platform_posts), len(accepted))
    REPLICA_COUNTERS["posts accepted while replicas were killed"] = [float(len(accepted))]
    REPLICA_COUNTERS["calls retried (503 or connection lost)"] = [float(retried)]

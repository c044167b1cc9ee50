"""list-posts latency at the edge over one organization's many posts.

Starts MongoDB, NATS, account-svc, publish-svc and the edge (the embedded stack; the rate
limit raised so that the bench measures the listing, not the bucket), makes an organization
and its token, stores `--posts` posts of every kind and status for it (20 accounts, dates
spread over a year; written straight to the posts collection as publish-svc stores them, so no
page is rendered), plus as many for another organization. Then it calls list-posts through
the edge, one call at a time: pages of 50 without a filter, by account, by status, by kind, in
a one-month range, each followed for a few pages by its cursor. Prints p50/p99 per query and,
last, over every call; the goal is p99 <= 50 ms.

    .venv/bin/python bench/list_posts.py [--posts 100000] [--calls 200] [--mongo-url URL]

`--mongo-url` runs against another MongoDB (e.g. a real one) instead of the embedded
mongoeco server (whose inserts take a while: about 1,000 posts/s here).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
from pymongo import AsyncMongoClient

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # the admin helper lives in tests/support/

from publish_svc.listing import LISTED_FIELD  # noqa: E402
from publish_svc.post_params import (  # noqa: E402
    ClipappParams,
    ReelParams,
    SocialParams,
    StoryParams,
    params_doc,
)
from storypost.publish.v1 import publish_pb2 as pb  # noqa: E402
from storypost.testing.stack import stack_channel  # noqa: E402
from storypost_cli.stack import EmbeddedStack, StackPorts  # noqa: E402
from tests.support.api import Admin  # noqa: E402
from tests.support.mongo import stack_database_name  # noqa: E402

START = datetime(2026, 1, 1, tzinfo=UTC)
KINDS = ("story", "reel", "clipapp", "social")
STATUSES = ("scheduled", "executed", "executed", "failed", "canceled")
ACCOUNTS = 20
BATCH = 1000
PARAMS = {
    "story": params_doc(StoryParams.of_request(pb.ScheduleStoryRequest())),
    "reel": params_doc(ReelParams.of_request(pb.ScheduleReelRequest())),
    "clipapp": params_doc(ClipappParams.of_request(pb.ScheduleClipappPostRequest())),
    "social": params_doc(SocialParams.of_request(pb.ScheduleSocialPostRequest(options_json="{}"))),
}


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def post_doc(organization_id: str, n: int) -> dict[str, Any]:
    """A post as publish-svc stores it (publish_svc.intake), minus what listing never reads."""
    kind = KINDS[n % len(KINDS)]
    status = STATUSES[n % len(STATUSES)]
    date = START + timedelta(seconds=(n * 7919) % (365 * 86400))
    post_uuid = str(uuid.UUID(int=n))
    doc: dict[str, Any] = {
        "_id": f"{kind}:{organization_id}:{post_uuid}",
        "organizationId": organization_id,
        "kind": kind,
        "postUuid": post_uuid,
        "status": status,
        "account": {
            "socialAccountId": f"sa_bench_{n % ACCOUNTS}",
            "platform": "LINKNET" if kind == "social" else "PHOTOAPP",
            "platformAccountId": str(1000 + n % ACCOUNTS),
            "username": f"bench{n % ACCOUNTS}",
        },
        "params": PARAMS[kind],
        "date": date,
        "dueAt": date,
        "futureDate": True,
        "media": "image",
        "warnings": [],
        "stickers": [],
        "createdAt": START,
        "updatedAt": START,
        "attempts": 0,
        "progress": {},
        LISTED_FIELD: date,
        "leaseUntil": START,
        "phase": None,
    }
    if status == "failed":
        doc["errorMessage"] = "the platform refused the post"
    return doc


async def fill(mongo_url: str, database: str, organizations: list[str], count: int) -> float:
    """Stores `count` posts for each organization; the seconds it took."""
    client: AsyncMongoClient[dict[str, Any]] = AsyncMongoClient(mongo_url)
    posts = client[database]["posts"]
    started = time.perf_counter()
    try:
        for organization_id in organizations:
            for first in range(0, count, BATCH):
                docs = [
                    post_doc(organization_id, n) for n in range(first, min(count, first + BATCH))
                ]
                await posts.insert_many(docs, ordered=False)
                done = first + len(docs)
                if done % (10 * BATCH) == 0 or done == count:
                    print(f"  {organization_id[:8]}: {done} posts", flush=True)
    finally:
        await client.close()
    return time.perf_counter() - started


QUERIES: dict[str, dict[str, Any]] = {
    "newest": {},
    "account": {"socialAccountId": "sa_bench_7"},
    "status": {"status": "failed"},
    "kind": {"kind": "clipapp"},
    "month": {"from": "2026-05-01T00:00:00Z", "to": "2026-06-01T00:00:00Z"},
    "account+status": {"socialAccountId": "sa_bench_3", "status": "scheduled"},
}


async def measure(
    http: httpx.AsyncClient, url: str, token: str, calls: int
) -> dict[str, list[float]]:
    """`calls` pages per query (5 pages deep each time, by cursor); milliseconds per call."""
    timings: dict[str, list[float]] = {name: [] for name in QUERIES}
    headers = {"Authorization": f"Bearer {token}"}
    for name, query in QUERIES.items():
        cursor: str | None = None
        for n in range(calls):
            body = {**query, "limit": 50, **({"cursor": cursor} if cursor else {})}
            started = time.perf_counter()
            answer = await http.post(f"{url}/list-posts", json=body, headers=headers)
            timings[name].append((time.perf_counter() - started) * 1000)
            if answer.status_code != 200:
                raise SystemExit(f"list-posts {body}: HTTP {answer.status_code} {answer.text}")
            cursor = answer.json().get("nextCursor") if n % 5 != 4 else None
    return timings


async def run(count: int, calls: int, mongo_url: str | None) -> None:
    env = {"STORYPOST_LOG_LEVEL": "warning", "STORYPOST_RATE_LIMIT_PER_MINUTE": "100000"}
    components = {"mongo", "nats", "account", "publish", "edge"}
    if mongo_url:
        env["STORYPOST_MONGO_URL"] = mongo_url
        env["STORYPOST_MONGO_DATABASE"] = f"bench{uuid.uuid4().hex[:8]}"
        components.discard("mongo")
    with tempfile.TemporaryDirectory() as tmp:
        stack = EmbeddedStack(Path(tmp) / "stack", StackPorts.free(), components=components,
                              extra_env=env)  # fmt: skip
        async with stack:
            stack_env = stack.env()
            async with stack_channel(stack_env, "account", 15) as channel:
                admin = Admin(channel, stack.edge_url)
                org = await admin.create_org("list-posts bench")
                other = await admin.create_org("list-posts bench, another organization")
            database = stack_database_name(stack_env)
            print(f"storing {count} posts for each of 2 organizations …", flush=True)
            seconds = await fill(
                stack_env["STORYPOST_MONGO_URL"],
                database,
                [org.organization_id, other.organization_id],
                count,
            )
            print(f"stored {2 * count} posts in {seconds:.0f} s", flush=True)
            async with httpx.AsyncClient(timeout=30.0) as http:
                await measure(http, org.base_url, org.token, 5)  # warm-up: connections, caches
                timings = await measure(http, org.base_url, org.token, calls)
    every: list[float] = []
    for name, values in timings.items():
        every += values
        print(
            f"{name:>15}: p50 {percentile(values, 0.5):6.1f} ms, "
            f"p99 {percentile(values, 0.99):6.1f} ms, mean {statistics.fmean(values):6.1f} ms"
        )
    print(
        f"list-posts over {count} posts ({len(every)} calls, pages of 50): "
        f"p50 {percentile(every, 0.5):.1f} ms, p99 {percentile(every, 0.99):.1f} ms "
        "(goal: p99 <= 50 ms)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--posts", type=int, default=100_000, help="posts per organization")
    parser.add_argument("--calls", type=int, default=200, help="calls per query shape")
    parser.add_argument("--mongo-url", help="a MongoDB to use instead of the embedded one")
    args = parser.parse_args()
    asyncio.run(run(args.posts, args.calls, args.mongo_url))


if __name__ == "__main__":
    main()

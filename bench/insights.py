"""Insight collection throughput: insight points collected per second by one publish-svc
replica against the sandbox network.

N posts are published directly on the sandbox network (microblog, over --accounts connected
social accounts), then stored as executed posts in publish-svc's `posts` collection, marked
for insights as the `executed` write marks them. publish-svc's collector plans each one and
reads --points points per post (STORYPOST_INSIGHTS_POINTS_SECONDS: 0, 1, 2, … seconds after
the moment they were marked; by default one, so the figure is the collector's pace, not the
points' spacing). Measured: seconds from the marking until every schedule is done. The last
line is the figure: points/s.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import parse_qsl, urlsplit

import httpx
from pymongo import AsyncMongoClient

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from storypost.account.v1 import account_pb2 as apb  # noqa: E402
from storypost.account.v1 import account_pb2_grpc  # noqa: E402
from storypost.testing.stack import stack_channel  # noqa: E402
from storypost_cli.sandbox import connect_account  # noqa: E402
from storypost_cli.stack import EmbeddedStack, StackPorts  # noqa: E402

COMPONENTS = ("mongo", "nats", "account", "publish", "sandbox")
PLATFORM = "microblog"
REDIRECT = "http://127.0.0.1:9/cb"


async def sandbox_token(http: httpx.AsyncClient, sandbox: str, username: str) -> str:
    """An access token of `username` straight from the sandbox (to publish without storypost)."""
    answer = await http.post(
        f"{sandbox}/{PLATFORM}/oauth/authorize",
        data={"redirect_uri": REDIRECT, "state": "s", "username": username, "action": "allow"},
    )
    code = dict(parse_qsl(urlsplit(answer.headers["location"]).query))["code"]
    tokens = await http.post(
        f"{sandbox}/{PLATFORM}/oauth/token",
        data={"grant_type": "authorization_code", "code": code, "redirect_uri": REDIRECT},
    )
    token: str = tokens.json()["access_token"]
    return token


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--posts", type=int, default=300)
    parser.add_argument("--points", type=int, default=1, help="points per post (1 s apart)")
    parser.add_argument("--accounts", type=int, default=10)
    parser.add_argument("--workers", type=int, default=16, help="STORYPOST_INSIGHTS_WORKERS")
    parser.add_argument("--limit", type=float, default=300.0, help="give up after this long")
    args = parser.parse_args()
    extra = {
        "STORYPOST_LOG_LEVEL": "warning",
        "STORYPOST_INSIGHTS_WORKERS": str(args.workers),
        "STORYPOST_INSIGHTS_POINTS_SECONDS": ",".join(str(n) for n in range(args.points)),
        "STORYPOST_INSIGHTS_MAX_IDLE_SECONDS": "0.2",
    }
    with tempfile.TemporaryDirectory() as tmp:
        stack = EmbeddedStack(Path(tmp), StackPorts.free(), components=COMPONENTS, extra_env=extra)
        await stack.start()
        try:
            await run(stack.env(), args)
        finally:
            await stack.stop()


async def run(env: dict[str, str], args: argparse.Namespace) -> None:
    sandbox = env["STORYPOST_SANDBOX_URL"].rstrip("/")
    async with httpx.AsyncClient(timeout=60) as http:
        channel = stack_channel(env, "account", 30)
        accounts = account_pb2_grpc.AccountServiceStub(channel)
        org = await accounts.CreateOrganization(apb.CreateOrganizationRequest(name="bench"))
        connected = []
        for n in range(args.accounts):
            name = f"ins{n:03d}{uuid.uuid4().hex[:6]}"
            account = await connect_account(accounts, http, org.organization_id, PLATFORM, name)
            connected.append((account, await sandbox_token(http, sandbox, name)))
        await channel.close()
        docs = []
        for n in range(args.posts):
            account, token = connected[n % len(connected)]
            body = {"media_url": f"{sandbox}/_sandbox/media/sample.png", "media_type": "image"}
            post = (
                await http.post(
                    f"{sandbox}/{PLATFORM}/v1/posts",
                    json=body,
                    headers={"Authorization": f"Bearer {token}"},
                )
            ).json()
            post_uuid = str(uuid.uuid4())
            docs.append(
                {
                    "_id": f"social:{org.organization_id}:{post_uuid}",
                    "organizationId": org.organization_id,
                    "kind": "social",
                    "postUuid": post_uuid,
                    "status": "executed",
                    "account": {
                        "socialAccountId": account.social_account_id,
                        "platform": account.platform,
                        "platformAccountId": account.platform_account_id,
                        "username": account.username,
                    },
                    "platformPostId": post["id"],
                }
            )
    print(f"published {args.posts} posts on the sandbox over {args.accounts} accounts", flush=True)
    mongo: AsyncMongoClient[dict[str, object]] = AsyncMongoClient(
        env["STORYPOST_MONGO_URL"], tz_aware=True
    )
    db = mongo[env.get("STORYPOST_MONGO_DATABASE", "storypost")]
    now = datetime.now(UTC)
    started = time.perf_counter()
    await db["posts"].insert_many(
        [{**doc, "finishedAt": now, "insightsDueAt": now} for doc in docs]
    )
    wanted = args.posts * args.points
    mine = {"organizationId": org.organization_id}
    collected = 0
    while time.perf_counter() - started < args.limit:
        collected = await db["insight_points"].count_documents(mine)
        planned = await db["post_insights"].count_documents(mine)
        collecting = await db["post_insights"].count_documents({**mine, "state": "collecting"})
        # Done when every post is planned and none has a point left (a collector that falls
        # behind reads an overdue post once, not once per missed point: docs/insights.md).
        if planned == args.posts and collecting == 0:
            break
        await asyncio.sleep(0.2)
    seconds = time.perf_counter() - started
    # Counted again: a point is stored before its schedule moves on.
    collected = await db["insight_points"].count_documents(mine)
    errors = await db["post_insights"].count_documents({**mine, "lastError": {"$ne": None}})
    unread = await db["post_insights"].count_documents({**mine, "latest": {"$exists": False}})
    await mongo.close()
    # The last points are due (points - 1) s after the marking: that wait is not throughput.
    busy = max(seconds, 0.001)
    print(
        f"{collected}/{wanted} points in {seconds:.1f} s (the last due {args.points - 1} s after "
        f"the start), {errors} schedules with a platform error, {unread} never read"
    )
    print(f"bench insights: points/s {collected / busy:.1f}")


if __name__ == "__main__":
    asyncio.run(main())

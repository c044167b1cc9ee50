"""Scheduler throughput: N stories due at one instant, two publish-svc replicas, the sandbox.

Stories are scheduled through publish-svc's gRPC API (rendering included, not timed), then
all are made due at the same instant. Measured: seconds until every one is executed, how
many the sandbox published twice, how many were posted more than 60 minutes late.
The last line: published/s, duplicates, late (the goal: all within 60 s, 0, 0).

The stories are spread over as many sandbox accounts as keep each within the daily limits of
the sandbox network and of the story quota (tests/support/accounts_pool.py; at least
--accounts): 40 for 1,000 stories.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
import sys
import tempfile
import time
import uuid
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
from pymongo import AsyncMongoClient

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # the account pool lives in tests/support/

from storypost.account.v1 import account_pb2 as apb  # noqa: E402
from storypost.account.v1 import account_pb2_grpc  # noqa: E402
from storypost.publish.v1 import publish_pb2 as pb  # noqa: E402
from storypost.publish.v1 import publish_pb2_grpc  # noqa: E402
from storypost.render.v1 import render_pb2 as rpb  # noqa: E402
from storypost.testing.stack import stack_channel  # noqa: E402
from storypost_cli.sandbox import connect_account  # noqa: E402
from storypost_cli.stack import EmbeddedStack, StackPorts  # noqa: E402
from tests.support.accounts_pool import STORY, AccountPool  # noqa: E402

DESIGN = (
    "<photoapp-story></photoapp-story><div style='width:1080px;height:1920px;background:#357'>"
    "<h1 style='font:bold 90px sans-serif;color:#fff;padding:300px 40px'>due now</h1></div>"
)
COMPONENTS = ("mongo", "nats", "s3", "account", "render", "publish", "sandbox")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--stories", type=int, default=1000)
    parser.add_argument(
        "--accounts", type=int, default=20, help="at least this many (more when the limits ask)"
    )
    parser.add_argument("--concurrency", type=int, default=6, help="concurrent schedule calls")
    parser.add_argument("--limit", type=float, default=180.0, help="give up after this long")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        extra = {"STORYPOST_LOG_LEVEL": "warning", "STORYPOST_SCHEDULER_WORKERS": "16"}
        stack = EmbeddedStack(Path(tmp), StackPorts.free(), components=COMPONENTS, extra_env=extra)
        await stack.start()
        second: asyncio.subprocess.Process | None = None
        try:
            env = stack.env()
            # The second replica signs as publish-svc: one signed as the operator (the
            # client's env) is refused every call to account-svc and render-svc, and the
            # posts it claims wait out growing retries (seen: 2 of 3 executed in 120 s).
            second = await asyncio.create_subprocess_exec(
                sys.executable,
                "-m",
                "publish_svc",
                env={
                    **os.environ,
                    **stack.component_env("publish"),
                    "STORYPOST_GRPC_PORT": str(free_port()),
                    "STORYPOST_METRICS_PORT": "-1",
                },
                stdout=asyncio.subprocess.DEVNULL,
            )
            await run(stack, env, args)
        finally:
            if second is not None:
                second.terminate()
                await second.wait()
            await stack.stop()


async def run(stack: EmbeddedStack, env: dict[str, str], args: argparse.Namespace) -> None:
    sandbox = env["STORYPOST_SANDBOX_URL"]
    # Enough accounts that none meets a daily limit of the stack's settings.
    pool = AccountPool("photoapp", env=env)
    count = max(args.accounts, pool.accounts_for({STORY: args.stories}))
    async with httpx.AsyncClient(timeout=60) as http:
        account_channel = stack_channel(env, "account", 30)
        accounts = account_pb2_grpc.AccountServiceStub(account_channel)
        org = await accounts.CreateOrganization(apb.CreateOrganizationRequest(name="bench"))
        names = [pool.add(f"bench{n:03d}{uuid.uuid4().hex[:6]}") for n in range(count)]
        for name in names:
            await connect_account(accounts, http, org.organization_id, "photoapp", name)
        publish = publish_pb2_grpc.PublishServiceStub(stack_channel(env, "publish", 120))
        later = datetime.now(UTC) + timedelta(hours=1)
        gate = asyncio.Semaphore(args.concurrency)
        started = time.perf_counter()

        async def schedule(n: int) -> None:
            account = pool.take(STORY)
            assert account is not None, pool.describe()
            request = pb.ScheduleStoryRequest(
                organization_id=org.organization_id,
                story_post_uuid=str(uuid.uuid4()),
                design=rpb.Design(html=DESIGN),
                photoapp_username=account,
            )
            request.date.FromDatetime(later)
            async with gate:
                await publish.ScheduleStory(request, timeout=120)

        await asyncio.gather(*(schedule(n) for n in range(args.stories)))
        print(
            f"scheduled {args.stories} stories in {time.perf_counter() - started:.1f} s", flush=True
        )
        mongo: AsyncMongoClient[dict[str, object]] = AsyncMongoClient(
            env["STORYPOST_MONGO_URL"], tz_aware=True
        )
        posts = mongo[env.get("STORYPOST_MONGO_DATABASE", "storypost")]["posts"]
        mine = {"organizationId": org.organization_id, "kind": "story"}
        # Let rendering finish first: the bench measures publishing, not rendering.
        await asyncio.sleep(5)
        now = datetime.now(UTC)
        await posts.update_many(mine, {"$set": {"dueAt": now, "date": now}})
        due = time.perf_counter()
        executed = 0
        while time.perf_counter() - due < args.limit:
            executed = await posts.count_documents({**mine, "status": "executed"})
            failed = await posts.count_documents({**mine, "status": "failed"})
            if executed + failed >= args.stories:
                break
            await asyncio.sleep(0.5)
        seconds = time.perf_counter() - due
        if executed + failed < args.stories:
            # Say where the unfinished ones stand, so a run that gives up can be read.
            fields = {"status": 1, "dueAt": 1, "attempts": 1, "progress": 1, "leaseUntil": 1}
            async for doc in posts.find(
                {**mine, "status": {"$nin": ["executed", "failed"]}}, fields
            ):
                print(f"unfinished: {doc}", flush=True)
        late = 0
        async for doc in posts.find({**mine, "status": "executed"}, {"date": 1, "finishedAt": 1}):
            finished, date = doc["finishedAt"], doc["date"]
            assert isinstance(finished, datetime) and isinstance(date, datetime)
            if finished - date > timedelta(minutes=60):
                late += 1
        retried = await posts.count_documents({**mine, "attempts": {"$gt": 0}})
        failures = Counter(
            [d.get("errorMessage") async for d in posts.find({**mine, "status": "failed"})]
        )
        listing = (
            await http.get(f"{sandbox}/_sandbox/published", params={"platform": "photoapp"})
        ).json()
        published = [p for p in listing["published"] if p["username"] in set(names)]
        containers = Counter(p["containerId"] for p in published)
        duplicates = len(published) - len(containers) + max(0, len(containers) - executed)
        await mongo.close()
        await account_channel.close()
    print(f"stories per account: {pool.describe()}")
    print(f"attempts retried (a replica refused or a platform error): {retried}")
    if failures:
        print("failed:", dict(failures))
    rate = executed / seconds if seconds else 0.0
    print(
        f"bench scheduler: {executed}/{args.stories} executed {seconds:.1f} s after becoming due "
        f"(2 replicas) | published/s {rate:.1f} | duplicates {duplicates} | late {late}"
    )


if __name__ == "__main__":
    asyncio.run(main())

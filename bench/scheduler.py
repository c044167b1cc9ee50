"""Scheduler throughput: N stories due at one instant, two publish-svc replicas, the sandbox.

Stories are scheduled through publish-svc's gRPC API (rendering included, not timed), then
all are made due at the same instant. Measured: seconds until every one is executed, how
many the sandbox published twice, how many were posted more than 60 minutes late.
The last line: published/s, duplicates, late (the goal: all within 60 s, 0, 0).
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

from storypost.account.v1 import account_pb2 as apb
from storypost.account.v1 import account_pb2_grpc
from storypost.publish.v1 import publish_pb2 as pb
from storypost.publish.v1 import publish_pb2_grpc
from storypost.render.v1 import render_pb2 as rpb
from storypost.testing.stack import stack_channel
from storypost_cli.sandbox import connect_account
from storypost_cli.stack import EmbeddedStack, StackPorts

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
    parser.add_argument("--accounts", type=int, default=20)
    parser.add_argument("--concurrency", type=int, default=6, help="concurrent schedule calls")
    parser.add_argument("--limit", type=float, default=180.0, help="give up after this long")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        extra = {
            "STORYPOST_LOG_LEVEL": "warning",
            "STORYPOST_STORY_QUOTA_PER_DAY": str(args.stories),
            "STORYPOST_SCHEDULER_WORKERS": "16",
        }
        stack = EmbeddedStack(Path(tmp), StackPorts.free(), components=COMPONENTS, extra_env=extra)
        await stack.start()
        second: asyncio.subprocess.Process | None = None
        try:
            env = stack.env()
            second = await asyncio.create_subprocess_exec(
                sys.executable,
                "-m",
                "publish_svc",
                env={
                    **os.environ,
                    **env,
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
    async with httpx.AsyncClient(timeout=60) as http:
        (
            await http.put(f"{sandbox}/_sandbox/config", json={"photoappPublishLimit": 10**6})
        ).raise_for_status()
        account_channel = stack_channel(env, "account", 30)
        accounts = account_pb2_grpc.AccountServiceStub(account_channel)
        org = await accounts.CreateOrganization(apb.CreateOrganizationRequest(name="bench"))
        names = [f"bench{n:03d}{uuid.uuid4().hex[:6]}" for n in range(args.accounts)]
        for name in names:
            await connect_account(accounts, http, org.organization_id, "photoapp", name)
        publish = publish_pb2_grpc.PublishServiceStub(stack_channel(env, "publish", 120))
        later = datetime.now(UTC) + timedelta(hours=1)
        gate = asyncio.Semaphore(args.concurrency)
        started = time.perf_counter()

        async def schedule(n: int) -> None:
            request = pb.ScheduleStoryRequest(
                organization_id=org.organization_id,
                story_post_uuid=str(uuid.uuid4()),
                design=rpb.Design(html=DESIGN),
                photoapp_username=names[n % len(names)],
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
        late = 0
        async for doc in posts.find({**mine, "status": "executed"}, {"date": 1, "finishedAt": 1}):
            finished, date = doc["finishedAt"], doc["date"]
            assert isinstance(finished, datetime) and isinstance(date, datetime)
            if finished - date > timedelta(minutes=60):
                late += 1
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
    if failures:
        print("failed:", dict(failures))
    rate = executed / seconds if seconds else 0.0
    print(
        f"bench scheduler: {executed}/{args.stories} executed {seconds:.1f} s after becoming due "
        f"(2 replicas) | published/s {rate:.1f} | duplicates {duplicates} | late {late}"
    )


if __name__ == "__main__":
    asyncio.run(main())

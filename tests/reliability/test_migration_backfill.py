"""The migrate Job on a large database (docs/migrations.md): 200,000 posts from before
`listedAt` (under `make reliability`; 3,000 in every `make test`) on the embedded stand-in.
A production publish-svc refuses them; `storypost migrate`, stopped by SIGTERM mid-backfill,
resumes where it stopped and gives every post its `listedAt` exactly once; then the services
start in seconds (their start only reads the schema record)."""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import sys
import time
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from pymongo import AsyncMongoClient
from pymongo.asynchronous.database import AsyncDatabase

from publish_svc import migrations as publish_migrations
from publish_svc.model import listed_at
from storypost_cli.migrate import PLANS, MigrateSettings
from storypost_cli.stack import EmbeddedStack, StackPorts
from storypost_runtime.migrations import SCHEMA_COLLECTION, missing
from storypost_runtime.mongo import Document
from tests.reliability.support import FIGURES, long_run
from tests.support.migrations import production_env, run, schema_checked

pytestmark = [
    pytest.mark.integration,
    pytest.mark.reliability_long,
    pytest.mark.reliability_short,
]
POSTS = int(os.environ.get("STORYPOST_MIGRATION_POSTS", "200000" if long_run() else "3000"))
INSERT_BATCH = 5_000
START = datetime(2025, 1, 1, tzinfo=UTC)
# What "starts in seconds" means here: from the process's start to its schema checked
# (imports included, on a loaded test machine).
START_LIMIT_SECONDS = 20.0
DATABASE = "storypost"


@pytest.fixture(scope="module")
async def stand_in(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[str]:
    """The embedded stack's MongoDB alone (the stand-in as `make run` runs it): its URL."""
    data_dir: Path = tmp_path_factory.mktemp("migration-stand-in")
    async with EmbeddedStack(data_dir, StackPorts.free(), components={"mongo"}) as stack:
        yield stack.env()["STORYPOST_MONGO_URL"]


def legacy_post(n: int) -> Document:
    """A post stored before `listedAt` existed (some without a date: listed by creation)."""
    created = START + timedelta(seconds=n)
    date = None if n % 5 == 0 else created + timedelta(hours=n % 48)
    return {
        "_id": f"story:org{n % 50}:{n:08d}",
        "organizationId": f"org{n % 50}",
        "kind": "story",
        "postUuid": f"{n:08d}",
        "status": "executed" if n % 3 else "scheduled",
        "date": date,
        "dueAt": date or created,
        "createdAt": created,
        "account": {"socialAccountId": f"sa_{n % 20}", "platform": "PHOTOAPP"},
    }


async def seed(db: AsyncDatabase[Document]) -> float:
    started = time.monotonic()
    for first in range(0, POSTS, INSERT_BATCH):
        batch = [legacy_post(n) for n in range(first, min(POSTS, first + INSERT_BATCH))]
        await db["posts"].insert_many(batch, ordered=False)
    return time.monotonic() - started


@pytest.mark.timeout(7200)
async def test_a_large_backfill_resumes_after_sigterm_and_services_start_in_seconds(
    stand_in: str,
) -> None:
    client: AsyncMongoClient[Document] = AsyncMongoClient(
        stand_in, timeoutMS=600_000, tz_aware=True
    )
    db = client[DATABASE]
    env = production_env(stand_in, DATABASE)
    try:
        seeded = await seed(db)
        # Production refuses this database, naming the command.
        code, _, err = await run(env, "-m", "publish_svc")
        assert code == 2 and "Run `storypost migrate`" in err, err

        # The Job, stopped (SIGTERM: deleted, or its deadline) once a few batches are in.
        started = time.monotonic()
        first = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "storypost_cli.migrate",
            env=env,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        assert first.stderr is not None
        progress, seen = 0, []
        async with asyncio.timeout(600):
            async for line in first.stderr:
                seen.append(line.decode())
                if b'"backfill progress"' in line:
                    progress += 1
                    if progress == 2:
                        first.send_signal(signal.SIGTERM)
                        break
        assert progress == 2, "".join(seen)
        assert first.stdout is not None
        rest = (await first.stderr.read()).decode()
        output = (await first.stdout.read()).decode()
        assert await first.wait() == 3, f"{output}\n{rest}"
        assert "stopped by SIGTERM; what was done is kept" in rest
        state = await db[SCHEMA_COLLECTION].find_one({"_id": publish_migrations.SERVICE})
        assert state is not None and state.get("version", 0) == 0
        done_before = state["cursors"]["1"]["changed"]
        assert 1_000 <= done_before < POSTS
        # Its lock was given back: the next run starts at once and resumes.
        code, out, err = await run(
            env, "-m", "storypost_cli.migrate", "--timeout", "5400", limit_seconds=5500
        )
        migrate_seconds = time.monotonic() - started
        assert code == 0, err
        assert "waiting for another migrator" not in err
        (publish,) = [r for r in json.loads(out) if r["service"] == "publish-svc"]
        assert publish["changed"] == POSTS - done_before  # each post exactly once
        assert await db["posts"].count_documents({"listedAt": {"$exists": False}}) == 0
        for n in (0, 1, POSTS // 2, POSTS - 1):
            doc = await db["posts"].find_one({"_id": legacy_post(n)["_id"]})
            assert doc is not None
            assert doc["listedAt"] == listed_at(doc.get("date"), doc["createdAt"])
        rates = [float(m) for m in re.findall(r'"per_second": (\d+)', err)]

        # The services' start: the schema read, nothing else (each plan's check, timed), and
        # publish-svc's whole start from a cold process to its schema checked.
        settings = MigrateSettings(
            mongo_url=stand_in, mongo_database=DATABASE, environment="production"
        )
        checks = {}
        for name, plan_of in PLANS.items():
            began = time.monotonic()
            assert await missing(plan_of(db, settings)) is None, name
            checks[name] = time.monotonic() - began
        began = time.monotonic()
        await schema_checked(env)
        start_seconds = time.monotonic() - began
    finally:
        await client.close()
    assert max(checks.values()) < 2.0, checks
    assert start_seconds < START_LIMIT_SECONDS
    FIGURES["migration: posts backfilled"] = (
        f"{POSTS:,} (inserted in {seeded:.0f} s), listedAt in {migrate_seconds:.0f} s "
        f"({max(rates, default=0):.0f} posts/s), resumed after SIGTERM at {done_before:,}"
    )
    FIGURES["migration: start after it"] = (
        f"schema check {max(checks.values()) * 1000:.0f} ms per service; publish-svc from "
        f"exec to schema checked {start_seconds:.1f} s"
    )

"""kill -9 of publish-svc mid-publish: the post is taken over and published exactly once."""

from __future__ import annotations

import asyncio
import time
import uuid

from storypost.testing.stack import StackHandle
from tests.integration.publish.conftest import IMAGE_STORY
from tests.reliability.support import wait_status
from tests.support.accounts import published, sandbox_switch
from tests.support.api import Api, Org
from tests.support.mongo import stack_database


async def test_kill_9_mid_publish_publishes_exactly_once(
    api: Api, fresh_org: Org, photoapp_user: str, storypost_stack: StackHandle
) -> None:
    body = {
        "storyPostUuid": str(uuid.uuid4()),
        "photoappUsername": photoapp_user,
        "html": IMAGE_STORY,
    }
    record_id = f"story:{fresh_org.organization_id}:{body['storyPostUuid']}"
    async with stack_database(storypost_stack.env) as database:
        posts = database["posts"]
        # Every photoapp call takes 3 s: the replica is killed between container and publish.
        async with sandbox_switch(
            storypost_stack, "photoapp", "slow", account=photoapp_user, seconds=3
        ):
            assert (await api.call(fresh_org, "schedule-photoapp-story", body)).status_code == 200
            deadline = time.monotonic() + 60
            while True:
                doc = await posts.find_one({"_id": record_id})
                if doc and (doc.get("progress") or {}).get("containerId"):
                    break
                assert time.monotonic() < deadline, doc
                await asyncio.sleep(0.2)
            await storypost_stack.processes.kill("publish")
            await storypost_stack.processes.start_component("publish")
        ref = {"storyPostUuid": body["storyPostUuid"]}
        done = await wait_status(
            api, fresh_org, "status-photoapp-story", ref, {"executed", "failed"}, within=120
        )
        assert done["status"] == "executed", done
        items = await published(storypost_stack, "photoapp", photoapp_user)
        assert len(items) == 1
        final = await posts.find_one({"_id": record_id})
        assert (
            final is not None and final["progress"]["containerId"] == doc["progress"]["containerId"]
        )

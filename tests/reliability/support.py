"""Helpers of the reliability suite: a webhook receiver on 127.0.0.2, test media, polling."""

from __future__ import annotations

import datetime as dt
import os
import random
import uuid
from dataclasses import field
from pathlib import Path
from typing import Any

from aiohttp import web
from pymongo.asynchronous.database import AsyncDatabase

from storypost.testing.certificates import Certificates, make_certificates
from storypost_runtime.component import component
from tests.support.api import Api, Org
from tests.support.polling import wait_until
from tests.support.webhook_receiver import Receiver

# High enough that racing calls and the fuzzer never meet the bucket (the limit has its
# own tests on the shared stack).
RELIABILITY_LIMIT_PER_MINUTE = 100_000
# The only loopback address webhook-svc of the reliability stack may deliver to.
RECEIVER_HOST = "127.0.0.2"
# Figures the tests measured (name -> text); printed at the end of the run for
# docs/reliability.md.
FIGURES: dict[str, str] = {}
# Turns the long tests on without `-m`: STORYPOST_RELIABILITY_LONG=1 pytest tests/reliability
LONG_SWITCH = "STORYPOST_RELIABILITY_LONG"


# The seed of every randomized test of a run (each test's own variable wins, e.g.
# STORYPOST_CRASH_SEED): STORYPOST_RELIABILITY_SEED=7 make reliability
SEED_SWITCH = "STORYPOST_RELIABILITY_SEED"


def long_run() -> bool:
    """True under `make reliability`; otherwise the `reliability_short` tests run shortened."""
    return os.environ.get(LONG_SWITCH) == "1"


def run_seed(name: str) -> int:
    """The seed of the randomized test `name`: STORYPOST_<NAME>_SEED, else the run's
    STORYPOST_RELIABILITY_SEED, else a new random one. Printed with the figures, so a run
    can be repeated (`<name>: seed`)."""
    chosen = os.environ.get(f"STORYPOST_{name.upper()}_SEED") or os.environ.get(SEED_SWITCH)
    value = int(chosen) if chosen else random.randrange(1 << 30)
    FIGURES[f"{name}: seed"] = str(value)
    return value


IMAGE_STORY = (
    "<photoapp-story></photoapp-story>"
    "<div style='width:1080px;height:1920px;background:#36c;display:flex;flex-direction:column;"
    "align-items:center;gap:40px;padding:300px 40px;box-sizing:border-box'>"
    "<h1 style='font:bold 96px sans-serif;color:#fff'>Reliable</h1>"
    "<photoapp-hashtag hashtag='storypost'></photoapp-hashtag></div>"
)


def video_story(src: str) -> str:
    return (
        "<style>body{margin:0;width:1080px;height:1920px}</style>"
        f'<photoapp-story src="{src}"><h1 style="font:bold 80px sans-serif;color:#fff;'
        'margin:300px 40px">Video</h1></photoapp-story>'
    )


def username() -> str:
    """A sandbox user of its own (quotas and limits are per platform account)."""
    return f"r{uuid.uuid4().hex[:12]}"


def future(seconds: float) -> str:
    return (dt.datetime.now(dt.UTC) + dt.timedelta(seconds=seconds)).strftime(
        "%Y-%m-%dT%H:%M:%S.%fZ"
    )


def make_receiver_certificates(directory: Path) -> Certificates:
    """A throwaway CA and a server certificate for RECEIVER_HOST (127.0.0.2)."""
    return make_certificates(directory, RECEIVER_HOST)


@component
class LoopbackReceiver(Receiver):
    """The webhook tests' HTTPS receiver, listening on 127.0.0.2 (the one address the
    reliability stack's webhook-svc may reach). Paths in `redirects` answer 302 to their
    target (webhook-svc must not follow)."""

    host: str = field(init=False, default=RECEIVER_HOST)
    redirects: dict[str, str] = field(init=False, default_factory=dict)

    async def _handle(self, request: web.Request) -> web.Response:
        target = self.redirects.get(request.path)
        answer = await super()._handle(request)
        if target is None:
            return answer
        return web.Response(status=302, headers={"Location": target})


async def wait_status(
    api: Api, org: Org, procedure: str, body: dict[str, Any], want: set[str], within: float = 120
) -> dict[str, Any]:
    """Polls a status procedure (as callers do, retrying 429/503) until the status is in `want`."""

    async def check() -> dict[str, Any] | None:
        answer = await api.call(org, procedure, body)
        if answer.status_code in (429, 502, 503, 504):
            return None
        assert answer.status_code == 200, answer.text
        result: dict[str, Any] = answer.json()
        return result if result["status"] in want else None

    return await wait_until(check, within, f"{procedure} {body} in {want}")


async def unfinished(db: AsyncDatabase[dict[str, Any]], key: str) -> str:
    """A post that never finished as the database holds it (status, attempts, last error,
    due time, lease) and its rendering: what a test that timed out waiting says."""
    record = await db["posts"].find_one({"_id": {"$regex": f"{key}$"}}, {"outbox": 0})
    rendering = await db["renderings"].find_one({"renderingId": {"$regex": key}}, {"outbox": 0})
    return f"its record {record}; its rendering {rendering}"


async def stream_events(nats_url: str, event_types: list[str], organization_id: str) -> list[Any]:
    """Every event of these types of one organization on the bus, from the stream's start
    (id, type, data), in stream order."""
    import json

    import nats

    client = await nats.connect(nats_url, max_reconnect_attempts=-1, reconnect_time_wait=0.3)
    found: list[Any] = []
    try:
        js = client.jetstream()
        for event_type in event_types:
            sub = await js.subscribe(f"events.{event_type}", ordered_consumer=True)
            try:
                while True:
                    try:
                        message = await sub.next_msg(timeout=2.0)
                    except TimeoutError:
                        break
                    body = json.loads(message.data)
                    if body.get("organizationId") == organization_id:
                        found.append(body)
            finally:
                await sub.unsubscribe()
    finally:
        await client.close()
    return found

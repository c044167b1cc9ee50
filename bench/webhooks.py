"""Webhook delivery lag: status event on the bus -> receipt at a local HTTPS receiver.

Starts MongoDB, NATS and webhook-svc (the embedded stack), a local HTTPS receiver with a
throwaway CA that webhook-svc is told to trust, and one webhook URL. Then publishes story
events at a steady rate exactly as the publishers' outbox relay does (storypost_runtime
.outbox.Event, JetStream with Nats-Msg-Id) and records, per event, the time from just
before its publish to its first receipt. Prints p50/p99/max lag last; targets (issue #52: at
500 events/s, `make bench`): p50 < 1 s, p99 < 5 s.

    .venv/bin/python bench/webhooks.py [--rate 100] [--seconds 20] [--mongo-url URL]

`--mongo-url` runs against another MongoDB (e.g. a real one) instead of the embedded
mongoeco server.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

import nats

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # the test receiver lives in tests/support/

from storypost.testing.certificates import make_certificates  # noqa: E402
from storypost.testing.stack import stack_channel  # noqa: E402
from storypost.webhook.v1 import webhook_pb2 as pb  # noqa: E402
from storypost.webhook.v1 import webhook_pb2_grpc  # noqa: E402
from storypost_cli.stack import EmbeddedStack, StackPorts  # noqa: E402
from tests.support.events import publish, story_event  # noqa: E402
from tests.support.webhook_receiver import Received, Receiver  # noqa: E402

PATH = "/bench"


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def run(rate: float, seconds: float, mongo_url: str | None) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        certs = make_certificates(Path(tmp) / "certs")
        env = {
            "STORYPOST_WEBHOOK_ALLOWED_NETWORKS": "127.0.0.0/8",
            "STORYPOST_WEBHOOK_CA_FILE": str(certs.ca_file),
            "STORYPOST_LOG_LEVEL": "warning",
        }
        components = {"mongo", "nats", "webhook"}
        if mongo_url:
            env["STORYPOST_MONGO_URL"] = mongo_url
            env["STORYPOST_MONGO_DATABASE"] = f"bench{uuid.uuid4().hex[:8]}"
            components.discard("mongo")
        receiver = Receiver(certs)
        await receiver.start()
        stack = EmbeddedStack(Path(tmp) / "stack", StackPorts.free(), components=components,
                              extra_env=env)  # fmt: skip
        try:
            async with stack:
                stack_env = stack.env()
                connection = await nats.connect(stack_env["STORYPOST_NATS_URL"])
                js = connection.jetstream()
                async with stack_channel(stack_env, "webhook", 15) as channel:
                    stub = webhook_pb2_grpc.WebhookServiceStub(channel)
                    org = f"bench-{uuid.uuid4().hex[:8]}"
                    await stub.AddWebhook(
                        pb.AddWebhookRequest(organization_id=org, url=receiver.url(PATH))
                    )
                    await measure(js, receiver, org, 20, 20.0)  # warm-up (connections, JIT)
                    lags, missing = await measure(js, receiver, org, int(rate * seconds), rate)
                await connection.close()
        finally:
            await receiver.close()
    lags_ms = [lag * 1000 for lag in lags]
    print(f"events: {len(lags) + missing} at {rate:g}/s, received: {len(lags)}, missing: {missing}")
    print(f"mean {statistics.fmean(lags_ms):.0f} ms, max {max(lags_ms):.0f} ms")
    print(
        f"webhook delivery lag at {rate:g} events/s: p50 {percentile(lags_ms, 0.5):.0f} ms, "
        f"p99 {percentile(lags_ms, 0.99):.0f} ms (targets: p50 < 1000 ms, p99 < 5000 ms)"
    )


async def measure(
    js: nats.js.JetStreamContext, receiver: Receiver, org: str, count: int, rate: float
) -> tuple[list[float], int]:
    """Publishes `count` events at `rate`/s; returns the lag of each received one and how many
    never arrived (within 60 s of the last publish)."""
    sent: dict[str, float] = {}
    start = time.perf_counter()
    offset = time.time() - start  # receipts are stamped with time.time()
    for n in range(count):
        due = start + n / rate
        pause = due - time.perf_counter()
        if pause > 0:
            await asyncio.sleep(pause)
        event = story_event(org)
        sent[event.data["storyPostUuid"]] = time.perf_counter() + offset
        await publish(js, event)

    # Checked at every receipt: reads only the receipts that are new since the last check
    # (re-reading them all made the receiver itself the bottleneck once publishing ended).
    waiting = set(sent)
    seen = 0

    def arrived(got: list[Received]) -> bool:
        nonlocal seen
        for received in got[seen:]:
            waiting.discard(received.json["storyPostUuid"])
        seen = len(got)
        return not waiting

    with contextlib.suppress(TimeoutError):
        await receiver.wait_for(PATH, arrived, timeout=60)
    first: dict[str, float] = {}
    for got in receiver.received(PATH):
        post = got.json["storyPostUuid"]
        if post in sent and post not in first:
            first[post] = got.at
    lags = [first[post] - sent[post] for post in first]
    return lags, len(sent) - len(first)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rate", type=float, default=100.0, help="events per second")
    parser.add_argument("--seconds", type=float, default=20.0, help="how long to publish")
    parser.add_argument("--mongo-url", help="use this MongoDB instead of the embedded one")
    args = parser.parse_args()
    asyncio.run(run(args.rate, args.seconds, args.mongo_url))


if __name__ == "__main__":
    main()

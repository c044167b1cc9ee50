"""What a running stack's dependencies have done so far, read from the dependencies themselves:
MongoDB's `serverStatus` opcounters, nats-server's monitoring endpoint (`/varz`, `/jsz`) and
the media bucket's objects. Two snapshots taken around a window give what happened in it
(`Counts.since`); tests/integration/test_capacity_counts.py turns that into costs per post.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import httpx

from storypost_runtime.mongo import Document, mongo_client
from storypost_runtime.settings import MongoSettings
from tests.support.mongo import stack_database_name

MONGO_OPS = ("insert", "query", "update", "delete", "getmore", "command")
# What one `snapshot` adds to the stand-in's `command` counter (dbStats and serverStatus).
SNAPSHOT_COMMANDS = 2
NATS_FIGURES = ("in_msgs", "out_msgs", "in_bytes", "out_bytes")


@dataclass(frozen=True)
class Counts:
    """Counters of the stack's dependencies at one moment, or their difference over a window."""

    mongo: Mapping[str, int]
    # /varz: messages and bytes the server received from and sent to clients (JetStream API
    # calls, acks and pull requests included: every message a client library exchanges).
    nats: Mapping[str, int]
    # Messages stored in each JetStream stream (its last sequence: it does not fall when the
    # stream's limits or retention remove messages), by stream name.
    streams: Mapping[str, int]
    # Objects in the media bucket by top-level prefix (`renderings`, `temp-blobs`, …).
    # The storypost database's documents, in bytes (dbStats dataSize; indexes not included).
    db_bytes: int = 0
    s3_objects: Mapping[str, int] = field(default_factory=dict)
    s3_bytes: Mapping[str, int] = field(default_factory=dict)

    def since(self, before: Counts) -> Counts:
        return Counts(
            mongo={k: self.mongo.get(k, 0) - before.mongo.get(k, 0) for k in MONGO_OPS},
            nats={k: self.nats.get(k, 0) - before.nats.get(k, 0) for k in NATS_FIGURES},
            streams=_minus(self.streams, before.streams),
            db_bytes=self.db_bytes - before.db_bytes,
            s3_objects=_minus(self.s3_objects, before.s3_objects),
            s3_bytes=_minus(self.s3_bytes, before.s3_bytes),
        )

    def plus(self, other: Counts) -> Counts:
        """Two windows' counts together (a window with a gap left out of it)."""
        return Counts(
            mongo=_plus(self.mongo, other.mongo),
            nats=_plus(self.nats, other.nats),
            streams=_plus(self.streams, other.streams),
            db_bytes=self.db_bytes + other.db_bytes,
            s3_objects=_plus(self.s3_objects, other.s3_objects),
            s3_bytes=_plus(self.s3_bytes, other.s3_bytes),
        )

    @property
    def stream_messages(self) -> int:
        return sum(self.streams.values())

    @property
    def mongo_writes(self) -> int:
        """Documents inserted, updated and deleted (a multi-document insert counts each)."""
        return sum(self.mongo.get(k, 0) for k in ("insert", "update", "delete"))


def _plus(one: Mapping[str, int], other: Mapping[str, int]) -> dict[str, int]:
    return {k: one.get(k, 0) + other.get(k, 0) for k in sorted(set(one) | set(other))}


def _minus(after: Mapping[str, int], before: Mapping[str, int]) -> dict[str, int]:
    keys = set(after) | set(before)
    return {k: after.get(k, 0) - before.get(k, 0) for k in sorted(keys)}


class StackCounters:
    """Reads the counters of one stack (its client environment `env` and NATS monitor port)."""

    def __init__(self, env: Mapping[str, str], nats_monitor_port: int) -> None:
        self._env = dict(env)
        self._monitor = f"http://127.0.0.1:{nats_monitor_port}"
        settings = MongoSettings(mongo_url=env["STORYPOST_MONGO_URL"])
        self._mongo = mongo_client(settings, "capacity-counts")
        self._database = stack_database_name(env)
        self._http = httpx.AsyncClient(timeout=10.0)

    async def close(self) -> None:
        await self._mongo.close()
        await self._http.aclose()

    async def snapshot(self, *, with_s3: bool = True) -> Counts:
        """Every counter now. Its dbStats and serverStatus calls count as `command`s (2 per
        snapshot, see SNAPSHOT_COMMANDS); the bucket listing goes to S3 only."""
        stats: Document = await self._mongo[self._database].command("dbStats")
        status: Document = await self._mongo.admin.command("serverStatus")
        opcounters = status["opcounters"]
        varz = (await self._http.get(f"{self._monitor}/varz")).json()
        jsz = (await self._http.get(f"{self._monitor}/jsz", params={"streams": "true"})).json()
        objects: dict[str, int] = {}
        sizes: dict[str, int] = {}
        if with_s3:
            objects, sizes = await self._bucket()
        return Counts(
            mongo={k: int(opcounters.get(k, 0)) for k in MONGO_OPS},
            nats={k: int(varz.get(k, 0)) for k in NATS_FIGURES},
            streams=_streams(jsz),
            db_bytes=int(stats.get("dataSize", 0)),
            s3_objects=objects,
            s3_bytes=sizes,
        )

    async def _bucket(self) -> tuple[dict[str, int], dict[str, int]]:
        """Objects and bytes in the media bucket, by the first segment of their keys."""
        import aioboto3

        env = self._env
        objects: Counter[str] = Counter()
        sizes: Counter[str] = Counter()
        async with aioboto3.Session().client(
            "s3",
            endpoint_url=env["STORYPOST_S3_ENDPOINT_URL"],
            aws_access_key_id=env["STORYPOST_S3_ACCESS_KEY"],
            aws_secret_access_key=env["STORYPOST_S3_SECRET_KEY"],
            region_name=env.get("STORYPOST_S3_REGION", "us-east-1"),
        ) as client:
            pages = client.get_paginator("list_objects_v2").paginate(
                Bucket=env["STORYPOST_S3_BUCKET"]
            )
            async for page in pages:
                for item in page.get("Contents", []):
                    prefix = str(item["Key"]).split("/", 1)[0]
                    objects[prefix] += 1
                    sizes[prefix] += int(item["Size"])
        return dict(objects), dict(sizes)


def _streams(jsz: Mapping[str, Any]) -> dict[str, int]:
    """Each JetStream stream's last sequence: the messages it ever stored."""
    found: dict[str, int] = {}
    for account in jsz.get("account_details") or []:
        for stream in account.get("stream_detail") or []:
            found[str(stream.get("name", ""))] = int(stream.get("state", {}).get("last_seq", 0))
    return found

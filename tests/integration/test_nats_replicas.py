"""Issue #22 item 5: the events stream keeps `STORYPOST_NATS_STREAM_REPLICAS` copies. A
three-server JetStream cluster on loopback: the stream is made with three replicas, and with
one server killed the outbox's publishes are still acknowledged (no event lost)."""

from __future__ import annotations

import asyncio
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import nats
import pytest
from nats.js.errors import APIError

from storypost_cli.stack.ports import free_ports
from storypost_runtime.bus import EVENTS_SUBJECT_PREFIX, JetStreamPublisher, ensure_events_stream
from storypost_runtime.settings import NatsSettings

pytestmark = pytest.mark.integration

NATS_SERVER = shutil.which("nats-server") or shutil.which("nats-server", path="/usr/sbin:/sbin")


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[tuple[list[str], list[subprocess.Popen[bytes]]]]:
    assert NATS_SERVER, "nats-server is installed by `make deps` (scripts/ensure-apt.sh)"
    ports = free_ports(6)
    clients, routes = ports[:3], ports[3:]
    servers = []
    try:
        for n in range(3):
            others = ",".join(f"nats://127.0.0.1:{p}" for p in routes if p != routes[n])
            log = (tmp_path / f"nats{n}.log").open("wb")
            argv = [
                NATS_SERVER, "-a", "127.0.0.1", "-p", str(clients[n]),
                "-js", "-sd", str(tmp_path / f"store{n}"), "--server_name", f"n{n}",
                "--cluster_name", "storypost-test",
                "--cluster", f"nats://127.0.0.1:{routes[n]}", "--routes", others,
            ]  # fmt: skip
            servers.append(subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT))
        yield [f"nats://127.0.0.1:{port}" for port in clients], servers
    finally:
        for server in servers:
            server.terminate()
        for server in servers:
            server.wait(10)


async def test_the_events_stream_keeps_three_copies_and_survives_a_lost_server(
    cluster: tuple[list[str], list[subprocess.Popen[bytes]]],
) -> None:
    urls, servers = cluster
    settings = NatsSettings(nats_url=",".join(urls), nats_stream_replicas=3)
    connection = await nats.connect(urls, connect_timeout=2, max_reconnect_attempts=-1)
    try:
        js = connection.jetstream()
        # The cluster elects its meta leader a few seconds after the routes connect.
        deadline = asyncio.get_running_loop().time() + 30
        while True:
            try:
                await ensure_events_stream(js, settings)
                break
            except (APIError, TimeoutError, nats.errors.Error):
                assert asyncio.get_running_loop().time() < deadline, "no JetStream leader"
                await asyncio.sleep(0.5)
        info = await js.stream_info(settings.nats_stream)
        assert info.config.num_replicas == 3
        assert info.cluster is not None and len(info.cluster.replicas or []) == 2
        # One server down: the other two still acknowledge every publish.
        leader = info.cluster.leader
        victim = next(s for n, s in enumerate(servers) if f"n{n}" != leader)
        victim.kill()
        victim.wait(10)
        # The relay retries a publish that timed out (the client may be reconnecting from the
        # killed server); the message id makes a retried publish count once.
        publisher = JetStreamPublisher(js=js, timeout_seconds=2)
        deadline = asyncio.get_running_loop().time() + 30
        for n in range(5):
            while True:
                try:
                    await publisher.publish(
                        f"{EVENTS_SUBJECT_PREFIX}test.{n}", b"{}", {"Nats-Msg-Id": str(n)}
                    )
                    break
                except (TimeoutError, nats.errors.Error):
                    assert asyncio.get_running_loop().time() < deadline, "publishes not acked"
                    await asyncio.sleep(0.5)
        info = await js.stream_info(settings.nats_stream)
        assert info.state.messages == 5
    finally:
        await connection.close()

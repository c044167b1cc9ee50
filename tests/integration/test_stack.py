"""The embedded stack with the real processes: MongoDB (mongoeco), NATS JetStream, SeaweedFS S3."""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import socket
import subprocess
import sys
import textwrap
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager
from pathlib import Path

import aioboto3
import httpx
import nats
import pytest
from pymongo.asynchronous.database import AsyncDatabase

from storypost_cli.stack import EmbeddedStack, StackError, StackPorts
from storypost_runtime.mongo import Document
from tests.support.mongo import stack_database

pytestmark = pytest.mark.integration

DEPENDENCIES = ("mongo", "nats", "s3")


def alive(pid: int) -> bool:
    """True while `pid` runs (a zombie waiting to be reaped counts as gone)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, IndexError):
        return False
    return state not in {"Z", "X"}


async def gone_within(pids: list[int], seconds: float) -> bool:
    for _ in range(int(seconds / 0.1)):
        if not any(alive(pid) for pid in pids):
            return True
        await asyncio.sleep(0.1)
    return False


def mongo_database(stack: EmbeddedStack) -> AbstractAsyncContextManager[AsyncDatabase[Document]]:
    return stack_database(stack.env(), serverSelectionTimeoutMS=5000)


@pytest.fixture(scope="module")
async def deps(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[EmbeddedStack]:
    stack = EmbeddedStack(
        tmp_path_factory.mktemp("deps"), StackPorts.free(), components=DEPENDENCIES
    )
    await stack.start()
    yield stack
    await stack.stop()


async def test_mongo_answers_ping(deps: EmbeddedStack) -> None:
    async with mongo_database(deps) as database:
        assert (await database.client.admin.command("ping"))["ok"] == 1
        collection = database["stack_test"]
        await collection.insert_one({"_id": "a", "n": 1})
        assert await collection.find_one({"_id": "a"}) == {"_id": "a", "n": 1}


async def test_nats_jetstream_takes_a_stream_and_a_message(deps: EmbeddedStack) -> None:
    connection = await nats.connect(deps.env()["STORYPOST_NATS_URL"], connect_timeout=5)
    try:
        stream = connection.jetstream()
        await stream.add_stream(name="STACK_TEST", subjects=["stacktest.>"])
        ack = await stream.publish("stacktest.one", b"hello")
        assert ack.stream == "STACK_TEST"
        assert ack.seq >= 1
    finally:
        await connection.close()


async def test_s3_creates_a_bucket_and_round_trips_an_object(deps: EmbeddedStack) -> None:
    env = deps.env()
    session = aioboto3.Session()
    async with session.client(
        "s3",
        endpoint_url=env["STORYPOST_S3_ENDPOINT_URL"],
        aws_access_key_id=env["STORYPOST_S3_ACCESS_KEY"],
        aws_secret_access_key=env["STORYPOST_S3_SECRET_KEY"],
        region_name=env["STORYPOST_S3_REGION"],
    ) as s3:
        await s3.create_bucket(Bucket=env["STORYPOST_S3_BUCKET"])
        await s3.put_object(
            Bucket=env["STORYPOST_S3_BUCKET"],
            Key="stack/hello.txt",
            Body=b"hello seaweed",
            ContentType="text/plain",
        )
        got = await s3.get_object(Bucket=env["STORYPOST_S3_BUCKET"], Key="stack/hello.txt")
        assert await got["Body"].read() == b"hello seaweed"
        assert got["ContentType"] == "text/plain"
        # A wrong secret is refused: the gateway really checks signatures.
    async with session.client(
        "s3",
        endpoint_url=env["STORYPOST_S3_ENDPOINT_URL"],
        aws_access_key_id=env["STORYPOST_S3_ACCESS_KEY"],
        aws_secret_access_key="wrong-secret",
        region_name=env["STORYPOST_S3_REGION"],
    ) as intruder:
        with pytest.raises(intruder.exceptions.ClientError):
            await intruder.list_buckets()


async def test_env_names_every_setting_a_child_needs(deps: EmbeddedStack) -> None:
    env = deps.env()
    ports = deps.ports
    assert env["STORYPOST_MONGO_URL"] == (
        f"mongodb://127.0.0.1:{ports.mongo}/?directConnection=true"
    )
    assert env["STORYPOST_NATS_URL"] == f"nats://127.0.0.1:{ports.nats}"
    assert env["STORYPOST_S3_ENDPOINT_URL"] == f"http://127.0.0.1:{ports.s3}"
    assert env["STORYPOST_ACCOUNT_ADDR"] == f"127.0.0.1:{ports.account}"
    assert env["STORYPOST_PUBLIC_URL"] == deps.edge_url == f"http://127.0.0.1:{ports.edge}"
    assert deps.log_path("s3") == deps.data_dir / "logs" / "s3.log"
    assert "starting s3" in deps.log_path("s3").read_text()


async def test_a_killed_component_starts_again_with_its_data(deps: EmbeddedStack) -> None:
    connection = await nats.connect(deps.env()["STORYPOST_NATS_URL"], connect_timeout=5)
    await connection.jetstream().add_stream(name="STACK_RESTART", subjects=["restart.>"])
    await connection.close()
    before = deps.pids()["nats"]
    await deps.kill("nats")
    assert not alive(before)
    assert "nats" not in deps.pids()
    await deps.start_component("nats")
    assert deps.pids()["nats"] != before
    connection = await nats.connect(deps.env()["STORYPOST_NATS_URL"], connect_timeout=5)
    try:
        # The stream lives in the JetStream store on disk, so it outlives the process.
        info = await connection.jetstream().stream_info("STACK_RESTART")
        assert info.config.name == "STACK_RESTART"
    finally:
        await connection.close()


async def test_stop_leaves_no_process_and_no_socket(deps: EmbeddedStack) -> None:
    # Runs last in this module: the fixture's own stop() is then a no-op (idempotent).
    pids = list(deps.pids().values())
    assert len(pids) == len(DEPENDENCIES)
    await deps.stop()
    assert not any(alive(pid) for pid in pids)
    assert deps.pids() == {}
    assert not list(Path("/tmp").glob(f"seaweedfs-*-{deps.ports.s3}.sock"))
    await deps.stop()


async def test_mongo_data_survives_a_restart(tmp_path: Path) -> None:
    async with (
        EmbeddedStack(tmp_path, StackPorts.free(), components={"mongo"}) as first,
        mongo_database(first) as database,
    ):
        await database.things.insert_one({"_id": "kept", "v": 42})
    # Other ports on purpose: only the data directory carries over.
    async with (
        EmbeddedStack(tmp_path, StackPorts.free(), components={"mongo"}) as second,
        mongo_database(second) as database,
    ):
        assert await database.things.find_one({"_id": "kept"}) == {"_id": "kept", "v": 42}


async def test_a_component_that_crashes_at_start_raises_with_its_log(tmp_path: Path) -> None:
    # SQLite cannot open a directory as its database file: the launcher dies at once.
    (tmp_path / "mongo.sqlite").mkdir()
    stack = EmbeddedStack(tmp_path, StackPorts.free(), components={"mongo", "nats"})
    with pytest.raises(StackError) as raised:
        await stack.start()
    error = raised.value
    assert error.component == "mongo"
    assert "exited with code 1 during start-up" in str(error)
    assert "unable to open database file" in error.log_tail
    assert error.log_tail in str(error)
    assert len(error.log_tail.splitlines()) <= 20
    # What did start (nats) was stopped again.
    assert stack.pids() == {}


async def test_a_taken_port_is_named_before_anything_starts(tmp_path: Path) -> None:
    ports = StackPorts.free()
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", ports.nats_monitor))
        squatter.listen()
        stack = EmbeddedStack(tmp_path, ports, components={"nats"})
        with pytest.raises(StackError, match=rf"nats: port {ports.nats_monitor} .* is taken"):
            await stack.start()
    assert not stack.log_path("nats").exists()


async def test_a_component_that_never_gets_healthy_times_out(tmp_path: Path) -> None:
    closed = StackPorts.free().mongo
    stack = EmbeddedStack(
        tmp_path,
        StackPorts.free(),
        components={"mongo"},
        # The launcher runs, but the probe asks a port where nobody listens.
        extra_env={"STORYPOST_MONGO_URL": f"mongodb://127.0.0.1:{closed}/?directConnection=true"},
        start_timeout=2.0,
    )
    with pytest.raises(StackError, match=r"mongo: not healthy after 2 s") as raised:
        await stack.start()
    # The log tail comes with the error (whether the launcher got to listen in 2 s depends on
    # the machine's load, so only its start is certain).
    assert "starting mongo" in raised.value.log_tail
    assert stack.pids() == {}


async def test_a_dependency_dying_during_start_fails_the_start(tmp_path: Path) -> None:
    stack = EmbeddedStack(tmp_path, StackPorts.free(), components={"nats", "s3"})
    starting = asyncio.create_task(stack.start())
    while "nats" not in stack.startup_seconds:
        await asyncio.sleep(0.05)
    os.kill(stack.pids()["nats"], signal.SIGKILL)
    with pytest.raises(StackError, match="nats: exited unexpectedly"):
        await asyncio.wait_for(starting, 30)
    assert stack.pids() == {}


async def test_an_unexpected_exit_is_reported(tmp_path: Path) -> None:
    async with EmbeddedStack(tmp_path, StackPorts.free(), components={"nats"}) as stack:
        os.kill(stack.pids()["nats"], signal.SIGKILL)
        error = await asyncio.wait_for(stack.wait_for_failure(), 5)
        assert error.component == "nats"
        assert "exited unexpectedly" in str(error)


async def test_children_die_with_the_supervisor(tmp_path: Path) -> None:
    script = textwrap.dedent(
        """
        import asyncio, json, sys
        from pathlib import Path
        from storypost_cli.stack import EmbeddedStack, StackPorts

        async def main() -> None:
            stack = EmbeddedStack(Path(sys.argv[1]), StackPorts.free(), components={"nats"})
            await stack.start()
            print(json.dumps(stack.pids()), flush=True)
            await asyncio.sleep(600)

        asyncio.run(main())
        """
    )
    supervisor = await asyncio.create_subprocess_exec(
        sys.executable, "-c", script, str(tmp_path), stdout=subprocess.PIPE
    )
    try:
        assert supervisor.stdout is not None
        line = await asyncio.wait_for(supervisor.stdout.readline(), 30)
        pids = list(json.loads(line).values())
        assert pids and all(alive(pid) for pid in pids)
    finally:
        supervisor.kill()
        await supervisor.wait()
    assert await gone_within(pids, 5), "a child outlived its SIGKILLed supervisor"


def child_pids(pid: int) -> list[int]:
    children: list[int] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        children += [int(child) for child in (task / "children").read_text().split()]
    return children


DEV_UP = textwrap.dedent(
    """
    import asyncio, sys
    from pathlib import Path
    from storypost_cli.dev import dev_up
    from storypost_cli.stack import StackPorts

    ports = StackPorts.free()
    raise SystemExit(asyncio.run(dev_up(Path(sys.argv[1]), "info", ports=ports)))
    """
)
READY = re.compile(
    r"storypost ready: (http://127\.0\.0\.1:\d+/o/([0-9a-f]{24})/api/v1) token (sp_\S+)\n"
)


async def test_dev_up_prints_one_ready_line_and_stops_cleanly(tmp_path: Path) -> None:
    """What `make run` does, on free ports: the whole stack, the line, SIGTERM, nothing left."""
    errors = tmp_path / "dev-up.err"
    with errors.open("wb") as stderr:
        dev_up = await asyncio.create_subprocess_exec(
            sys.executable, "-c", DEV_UP, str(tmp_path / "data"), stdout=subprocess.PIPE,
            stderr=stderr,
        )  # fmt: skip
    try:
        assert dev_up.stdout is not None
        line = (await asyncio.wait_for(dev_up.stdout.readline(), 90)).decode()
        ready = READY.fullmatch(line)
        assert ready, f"no ready line: {line!r}\n{errors.read_text()}"
        base_url, organization_id, token = ready.groups()
        remembered = json.loads((tmp_path / "data" / "dev-organization.json").read_text())
        assert remembered == {"organizationId": organization_id}
        async with httpx.AsyncClient(timeout=10, trust_env=False) as client:
            response = await client.post(
                f"{base_url}/generate-uuid", json={}, headers={"Authorization": f"Bearer {token}"}
            )
        assert response.status_code == 200, response.text
        children = child_pids(dev_up.pid)
        assert len(children) == 9
        dev_up.send_signal(signal.SIGTERM)
        assert await asyncio.wait_for(dev_up.wait(), 60) == 0
        assert await dev_up.stdout.read() == b"", "more than one line on stdout"
        assert not any(alive(pid) for pid in children)
    finally:
        if dev_up.returncode is None:
            dev_up.kill()
            await dev_up.wait()


def test_unknown_components_are_rejected(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="unknown components"):
        EmbeddedStack(tmp_path, StackPorts.free(), components={"mongo", "redis"})
    stack = EmbeddedStack(tmp_path, StackPorts.free(), components={"nats"})
    with pytest.raises(ValueError, match="unknown component"):
        stack.log_path("redis")

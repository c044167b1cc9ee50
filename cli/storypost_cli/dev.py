"""`storypost dev up`: the whole embedded stack in the foreground, a dev organization, a token."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import signal
import sys
from collections.abc import Awaitable
from pathlib import Path
from typing import TextIO

import grpc

from storypost.account.v1 import account_pb2 as pb
from storypost.account.v1 import account_pb2_grpc
from storypost_cli.config import default_data_dir
from storypost_cli.parsers import command_group
from storypost_cli.stack import EmbeddedStack, StackError, StackPorts
from storypost_client.cli.parsing import Subparsers, example
from storypost_runtime.grpc_client import aio_channel
from storypost_runtime.service_auth import caller_signer

# Development conveniences of `make run` only (tests choose their own settings).
DEV_SETTINGS = {
    # Webhook receivers on http://127.0.0.1 are allowed (production keeps https and refuses
    # loopback and private addresses).
    "STORYPOST_WEBHOOK_ALLOW_HTTP_LOOPBACK": "true",
}
DEV_ORGANIZATION_FILE = "dev-organization.json"
DEV_ORGANIZATION_NAME = "storypost dev"
# Account calls right after start-up: the first one may wait for MongoDB indexes.
_ACCOUNT_DEADLINE_SECONDS = 15.0


def register(subparsers: Subparsers) -> None:
    commands = command_group(
        subparsers, "dev", "the embedded development stack", "storypost dev up"
    )
    up = commands.add_parser(
        "up",
        help="start every component on 127.0.0.1 in the foreground (Ctrl-C stops them)",
        description=(
            "Starts MongoDB (mongoeco), NATS, SeaweedFS S3, the four services, the sandbox "
            "network and the edge; prints `storypost ready: <base URL> token <token>` once "
            "all answer their health checks. Logs go to <data-dir>/logs/."
        ),
        epilog=example("storypost dev up --data-dir /tmp/storypost-data --log-level debug"),
    )
    up.add_argument(
        "--data-dir",
        type=Path,
        default=None,
        help="where every component keeps its data and logs (default: .data/ in the repo root)",
    )
    up.add_argument("--log-level", choices=("debug", "info", "warning", "error"), default="info")
    up.set_defaults(handler=run_dev_up)


def run_dev_up(args: argparse.Namespace) -> None:
    data_dir: Path = args.data_dir or default_data_dir()
    raise SystemExit(asyncio.run(dev_up(data_dir, args.log_level)))


async def dev_up(
    data_dir: Path,
    log_level: str,
    *,
    ports: StackPorts | None = None,
    out: TextIO = sys.stdout,
    err: TextIO = sys.stderr,
) -> int:
    """Runs the stack until SIGINT/SIGTERM/SIGHUP; returns the process exit code."""
    stack = EmbeddedStack(
        data_dir, ports or StackPorts.defaults(), log_level=log_level, extra_env=DEV_SETTINGS
    )
    stopping = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        loop.add_signal_handler(sig, stopping.set)
    print(
        f"storypost dev up: starting in {stack.data_dir} (logs in {stack.data_dir / 'logs'})",
        file=err,
    )
    try:
        if not await _until_stopped(_ready(stack, out), stopping):
            print("storypost dev up: interrupted during start-up", file=err)
            return 0
        timings = ", ".join(f"{name} {sec:.1f}s" for name, sec in stack.startup_seconds.items())
        print(f"storypost dev up: healthy ({timings}); Ctrl-C stops", file=err)
        failure = asyncio.create_task(stack.wait_for_failure())
        if not await _until_stopped(failure, stopping):
            return 0
        print(f"storypost dev up: {failure.result()}", file=err)
        return 1
    except StackError as error:
        print(f"storypost dev up: {error}", file=err)
        return 1
    finally:
        print("storypost dev up: stopping", file=err)
        await stack.stop()
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            loop.remove_signal_handler(sig)
        print("storypost dev up: stopped", file=err)


async def _until_stopped(work: Awaitable[object], stopping: asyncio.Event) -> bool:
    """Runs `work` until it finishes (True) or `stopping` is set first (False, work cancelled)."""
    task = asyncio.ensure_future(work)
    stop = asyncio.create_task(stopping.wait())
    try:
        await asyncio.wait({task, stop}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        stop.cancel()
    if task.done():
        task.result()  # re-raises a start-up failure
        return True
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
    return False


async def _ready(stack: EmbeddedStack, out: TextIO) -> None:
    """Starts the stack, ensures the dev organization, prints the one ready line."""
    await stack.start()
    env = stack.env()
    signer = caller_signer(env["STORYPOST_SERVICE_KEY"])
    async with aio_channel(
        env["STORYPOST_ACCOUNT_ADDR"], _ACCOUNT_DEADLINE_SECONDS, signer
    ) as channel:
        accounts = account_pb2_grpc.AccountServiceStub(channel)
        try:
            organization_id = await ensure_dev_organization(
                accounts, stack.data_dir / DEV_ORGANIZATION_FILE
            )
            issued = await accounts.CreateApiCredential(
                pb.CreateApiCredentialRequest(organization_id=organization_id, name="dev up")
            )
        except grpc.aio.AioRpcError as error:
            message = f"cannot set up the dev organization: {error.code().name} {error.details()}"
            raise StackError("account", message) from None
    base_url = f"{stack.edge_url}/o/{organization_id}/api/v1"
    print(f"storypost ready: {base_url} token {issued.token}", file=out, flush=True)


async def ensure_dev_organization(
    accounts: account_pb2_grpc.AccountServiceAsyncStub, record: Path
) -> str:
    """The id of the dev organization, created once and remembered in `record`.

    Created again when the record names an organization the database does not have (the
    data directory was partly wiped); otherwise the base URL stays the same across restarts.
    """
    remembered = _read_record(record)
    if remembered is not None:
        try:
            found = await accounts.GetOrganization(
                pb.GetOrganizationRequest(organization_id=remembered)
            )
            return found.organization_id
        except grpc.aio.AioRpcError as error:
            # NOT_FOUND: the database was wiped; INVALID_ARGUMENT: the file was edited by hand.
            if error.code() not in (grpc.StatusCode.NOT_FOUND, grpc.StatusCode.INVALID_ARGUMENT):
                raise
    created = await accounts.CreateOrganization(
        pb.CreateOrganizationRequest(name=DEV_ORGANIZATION_NAME)
    )
    _write_record(record, created.organization_id)
    return created.organization_id


def _read_record(record: Path) -> str | None:
    try:
        value = json.loads(record.read_text()).get("organizationId")
    except (FileNotFoundError, json.JSONDecodeError, AttributeError):
        return None
    return value if isinstance(value, str) and value else None


def _write_record(record: Path, organization_id: str) -> None:
    # Written beside and renamed, so a crash never leaves half a file.
    partial = record.with_suffix(".tmp")
    partial.write_text(json.dumps({"organizationId": organization_id}, indent=2) + "\n")
    partial.replace(record)

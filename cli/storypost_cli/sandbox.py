"""`storypost sandbox …`: connect accounts through the sandbox network without a browser, flip
its switches, list what it published."""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Sequence
from typing import Any, TypedDict, Unpack
from urllib.parse import parse_qsl, urlsplit, urlunsplit

import grpc
import httpx
from google.protobuf.json_format import MessageToDict
from pydantic_settings import SettingsConfigDict

from storypost.account.v1 import account_pb2 as pb
from storypost.account.v1 import account_pb2_grpc
from storypost_cli.config import CliSettings
from storypost_cli.output import EXIT_UNAVAILABLE, fail, fail_rpc, print_json
from storypost_cli.parsers import add_org, command_group, subcommand
from storypost_client.cli.parsing import Subparsers
from storypost_runtime.grpc_client import aio_channel
from storypost_runtime.settings import load_settings
from storypost_runtime.vocabulary import PLATFORM_KEYS as PLATFORMS
from storypost_runtime.vocabulary import SWITCH_MODES as MODES

CONNECTIONS = {"direct": pb.CONNECTION_DIRECT, "social": pb.CONNECTION_SOCIAL}


class SandboxCliSettings(CliSettings):
    model_config = SettingsConfigDict(env_prefix="STORYPOST_", frozen=True, extra="ignore")

    sandbox_url: str = "http://127.0.0.1:8090"


class ConnectOptions(TypedDict, total=False):
    """How an account is connected (left out: the default). `connection`: "direct" or
    "social" (default: direct for photoapp and clipapp, social for the others);
    `display_name`: the sandbox account's; `linknet_destinations`: `id:name:type` strings
    (photoapp)."""

    connection: str
    display_name: str
    linknet_destinations: Sequence[str]


class ConnectFailed(Exception):
    """The sandbox's sign-in page did not redirect back with a code."""


async def connect_account(
    accounts: account_pb2_grpc.AccountServiceAsyncStub,
    http: httpx.AsyncClient,
    organization_id: str,
    platform: str,
    username: str,
    **options: Unpack[ConnectOptions],
) -> pb.ConnectedAccount:
    """Runs the OAuth-like connect flow as a browser would: account-svc starts it, the
    sandbox's authorize form is submitted, account-svc completes it with the code."""
    connection = options.get("connection", "")
    display_name = options.get("display_name", "")
    linknet_destinations = options.get("linknet_destinations", ())
    started: pb.StartConnectResponse = await accounts.StartConnect(
        pb.StartConnectRequest(
            organization_id=organization_id,
            platform=platform.upper(),
            connection=CONNECTIONS.get(connection, pb.CONNECTION_UNSPECIFIED),
        )
    )
    page = await http.get(started.authorize_url)
    if page.status_code != 200:
        raise ConnectFailed(f"the sign-in page answered HTTP {page.status_code}: {page.text[:200]}")
    parts = urlsplit(started.authorize_url)
    form: dict[str, str] = dict(parse_qsl(parts.query))
    form |= {"username": username, "display_name": display_name, "action": "allow"}
    if platform.lower() == "photoapp":
        form["linknet_destinations"] = "\n".join(linknet_destinations)
    answer = await http.post(
        urlunsplit((parts.scheme, parts.netloc, parts.path, "", "")),
        data=form,
        follow_redirects=False,
    )
    location = answer.headers.get("location")
    if answer.status_code not in (302, 303) or not location:
        raise ConnectFailed(
            f"the sign-in was refused (HTTP {answer.status_code}): {answer.text[:300]}"
        )
    query = dict(parse_qsl(urlsplit(location).query))
    done: pb.CompleteConnectResponse = await accounts.CompleteConnect(
        pb.CompleteConnectRequest(
            state=query.get("state", ""), code=query.get("code", ""), error=query.get("error", "")
        )
    )
    return done.account


def account_json(account: pb.ConnectedAccount) -> dict[str, Any]:
    """The account as JSON (proto field names in camelCase); it never holds tokens."""
    return MessageToDict(account, always_print_fields_with_no_presence=True)


def run_connect(args: argparse.Namespace, settings: SandboxCliSettings) -> None:
    async def go() -> pb.ConnectedAccount:
        channel = aio_channel(
            settings.account_addr, max(settings.grpc_deadline_seconds, 15.0), settings.signer()
        )
        try:
            async with httpx.AsyncClient(timeout=30.0) as http:
                return await connect_account(
                    account_pb2_grpc.AccountServiceStub(channel),
                    http,
                    args.org,
                    args.platform,
                    args.username,
                    connection=args.connection or "",
                    display_name=args.display_name or "",
                    linknet_destinations=args.linknet_destination or (),
                )
        finally:
            await channel.close()

    try:
        account = asyncio.run(go())
    except grpc.RpcError as error:
        fail_rpc(error, "sandbox connect")
    except ConnectFailed as error:
        fail(f"sandbox connect: {error}")
    except httpx.HTTPError as error:
        fail(f"sandbox connect: the sandbox network is not answering ({error})", EXIT_UNAVAILABLE)
    print_json(account_json(account))


def _sandbox_call(settings: SandboxCliSettings, method: str, path: str, **kwargs: Any) -> Any:
    try:
        answer = httpx.request(
            method, settings.sandbox_url.rstrip("/") + path, timeout=10.0, **kwargs
        )
    except httpx.HTTPError as error:
        fail(
            f"the sandbox network is not answering at {settings.sandbox_url} ({error})",
            EXIT_UNAVAILABLE,
        )
    body = answer.json() if answer.content else {}
    if answer.status_code >= 400:
        message = body.get("error", {}).get("message") if isinstance(body, dict) else None
        fail(f"sandbox: {message or answer.text}")
    return body


def run_set(args: argparse.Namespace, settings: SandboxCliSettings) -> None:
    switch: dict[str, Any] = {"platform": args.platform, "mode": args.mode}
    if args.account:
        switch["account"] = args.account
    if args.message:
        switch["message"] = args.message
    if args.status is not None:
        switch["status"] = args.status
    if args.seconds is not None:
        switch["seconds"] = args.seconds
    if args.retry_after is not None:
        switch["retryAfterSeconds"] = args.retry_after
    if args.endpoint:
        switch["endpoint"] = args.endpoint
    if args.times is not None:
        switch["times"] = args.times
    print_json(_sandbox_call(settings, "PUT", "/_sandbox/switches", json=switch))


def _filter(args: argparse.Namespace) -> dict[str, str]:
    """The query of --platform and --account, those given."""
    return {k: v for k, v in (("platform", args.platform), ("account", args.account)) if v}


def _platform_filter(args: argparse.Namespace, command: str) -> dict[str, str]:
    """The query of a command whose --account is named within its --platform."""
    if args.account and not args.platform:
        fail(f"sandbox {command}: --account needs --platform")
    return _filter(args)


def run_reset(args: argparse.Namespace, settings: SandboxCliSettings) -> None:
    params = _platform_filter(args, "reset")
    print_json(_sandbox_call(settings, "DELETE", "/_sandbox/switches", params=params))


def run_held(args: argparse.Namespace, settings: SandboxCliSettings) -> None:
    params = _platform_filter(args, "held")
    method = "DELETE" if args.release else "GET"
    print_json(_sandbox_call(settings, method, "/_sandbox/held", params=params))


def run_published(args: argparse.Namespace, settings: SandboxCliSettings) -> None:
    print_json(_sandbox_call(settings, "GET", "/_sandbox/published", params=_filter(args)))


def register(subparsers: Subparsers) -> None:
    commands = command_group(
        subparsers,
        "sandbox",
        "the sandbox social networks",
        "storypost sandbox connect --org org_1f2e3d --platform photoapp --username alice",
        handler=run_sandbox,
    )
    _add_connect(commands)
    _add_set(commands)
    _add_filtered(commands)


def _add_connect(commands: Subparsers) -> None:
    p = subcommand(
        commands,
        "connect",
        run_connect,
        "connect a sandbox account to an organization (the OAuth-like flow, no browser)",
        "storypost sandbox connect --org org_1f2e3d --platform photoapp --username alice",
    )
    add_org(p)
    p.add_argument("--platform", required=True, choices=PLATFORMS)
    p.add_argument("--username", required=True, help="the account's username on the platform")
    p.add_argument("--display-name", help="display name (default: the username)")
    p.add_argument(
        "--connection",
        choices=tuple(CONNECTIONS),
        help="direct or social (default: direct for photoapp and clipapp, else social)",
    )
    p.add_argument(
        "--linknet-destination",
        action="append",
        metavar="ID:NAME:TYPE",
        help="a linknet destination of a photoapp account (repeatable)",
    )


def _add_set(commands: Subparsers) -> None:
    p = subcommand(
        commands,
        "set",
        run_set,
        "switch a platform (or one account) to a mode",
        "storypost sandbox set --platform photoapp --account alice --mode fail "
        "--message 'media rejected'",
    )
    p.add_argument("--platform", required=True, choices=PLATFORMS)
    p.add_argument("--account", help="one account (id or username); default: every account")
    p.add_argument("--mode", required=True, choices=MODES)
    p.add_argument("--message", help="fail: the error message")
    p.add_argument("--status", type=int, help="fail: the HTTP status (default 400)")
    p.add_argument(
        "--seconds",
        type=float,
        help="slow: seconds before each call is performed; late-answer: seconds its answer is "
        "held after it was performed",
    )
    p.add_argument("--retry-after", type=int, help="rate-limited: Retry-After seconds (default 60)")
    p.add_argument(
        "--endpoint",
        help="only the calls whose path ends with this (e.g. post/publish/video/init)",
    )
    p.add_argument(
        "--times", type=int, help="only the next N matching calls (default: until removed)"
    )


def _add_filtered(commands: Subparsers) -> None:
    """reset, held and published: each over every account, a platform's or one account's."""
    p = subcommand(
        commands,
        "reset",
        run_reset,
        "remove the switches (all, a platform's, or one account's)",
        "storypost sandbox reset --platform photoapp",
    )
    _add_filter(p, "only this account's switch (id or username)")

    p = subcommand(
        commands,
        "held",
        run_held,
        "list the answers a late-answer switch holds back (or release them)",
        "storypost sandbox held --platform photoapp --release",
    )
    _add_filter(p, "only this account's (id or username)")
    p.add_argument("--release", action="store_true", help="answer them now")

    p = subcommand(
        commands,
        "published",
        run_published,
        "list what the sandbox published",
        "storypost sandbox published --platform photoapp --account alice",
    )
    _add_filter(p, "account id or username")


def _add_filter(parser: argparse.ArgumentParser, account_help: str) -> None:
    """--platform and --account, as `_filter` reads them."""
    parser.add_argument("--platform", choices=PLATFORMS)
    parser.add_argument("--account", help=account_help)


def run_sandbox(args: argparse.Namespace) -> None:
    settings = load_settings(SandboxCliSettings)
    args.run(args, settings)

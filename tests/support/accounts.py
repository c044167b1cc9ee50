"""Connected accounts for tests: connect one through the sandbox's OAuth-like flow, flip the
sandbox's switches, read what it published.

    account = await connect_account(storypost_stack, org, "photoapp", "alice")
    async with sandbox_switch(storypost_stack, "photoapp", "fail", account="alice"):
        ...  # photoapp answers errors for @alice here; restored afterwards
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Unpack
from urllib.parse import parse_qsl, urlsplit

import falcon.testing
import httpx
from pydantic import SecretStr
from pymongo.asynchronous.database import AsyncDatabase

from account_svc.app import connected_parts
from account_svc.config import AccountSettings
from account_svc.connections.connected_accounts import ConnectedAccount
from account_svc.identity.organizations import Organizations
from account_svc.records import AccountCollections
from account_svc.servicer import ConnectedAccountParts
from sandbox_net.app import Sandbox, create_sandbox
from sandbox_net.config import SandboxSettings
from storypost.account.v1 import account_pb2 as pb
from storypost.account.v1 import account_pb2_grpc
from storypost.testing.stack import StackHandle
from storypost_cli.sandbox import ConnectOptions
from storypost_cli.sandbox import connect_account as run_connect_flow
from storypost_runtime.clock import FrozenClock
from storypost_runtime.mongo import Document
from tests.support.api import Org


def sandbox_url(stack: StackHandle) -> str:
    return stack.env["STORYPOST_SANDBOX_URL"].rstrip("/")


async def connect_account(
    stack: StackHandle,
    org: Org | str,
    platform: str,
    username: str,
    **options: Unpack[ConnectOptions],
) -> pb.ConnectedAccount:
    """Connects `username` on `platform` (photoapp, clipapp, pinboard, …) to the organization,
    exactly as `storypost sandbox connect` does (`options`: ConnectOptions). Returns the
    stored account (no tokens)."""
    organization_id = org if isinstance(org, str) else org.organization_id
    channel = stack.channel("account", 15.0)
    try:
        async with httpx.AsyncClient(timeout=30.0) as http:
            return await run_connect_flow(
                account_pb2_grpc.AccountServiceStub(channel),
                http,
                organization_id,
                platform,
                username,
                **options,
            )
    finally:
        await channel.close()


async def set_switch(
    stack: StackHandle, platform: str, mode: str, *, account: str | None = None, **extra: Any
) -> dict[str, Any]:
    """mode: ok, fail (message=, status=), slow (seconds=), late-answer (seconds=), offline,
    rate-limited (retryAfterSeconds=), token-expired; endpoint= and times= limit it to some
    calls. `account`: id or username; None: the whole platform."""
    body: dict[str, Any] = {"platform": platform, "mode": mode, **extra}
    if account:
        body["account"] = account
    result: dict[str, Any] = (await _control(stack, "PUT", "switches", json=body)).json()
    return result


async def reset_switches(
    stack: StackHandle, platform: str | None = None, account: str | None = None
) -> None:
    """Removes switches: all, a platform's (and its accounts'), or one account's."""
    await _control(stack, "DELETE", "switches", params=_scope(platform, account))


@asynccontextmanager
async def sandbox_switch(
    stack: StackHandle, platform: str, mode: str, *, account: str | None = None, **extra: Any
) -> AsyncIterator[dict[str, Any]]:
    """A switch for the duration of the block; removed afterwards."""
    switch = await set_switch(stack, platform, mode, account=account, **extra)
    try:
        yield switch
    finally:
        if account:
            await reset_switches(stack, platform, account)
        else:
            await set_switch(stack, platform, "ok")


async def published(
    stack: StackHandle, platform: str, account: str | None = None
) -> list[dict[str, Any]]:
    """Everything the sandbox published on `platform` (for one account id or username)."""
    answer = await _control(stack, "GET", "published", params=_scope(platform, account))
    items: list[dict[str, Any]] = answer.json()["published"]
    return items


async def switches(stack: StackHandle) -> list[dict[str, Any]]:
    """The sandbox's switches now (a switch with `times` is gone once used up)."""
    items: list[dict[str, Any]] = (await _control(stack, "GET", "switches")).json()["switches"]
    return items


async def held(stack: StackHandle) -> list[dict[str, Any]]:
    """The calls the sandbox performed whose answers a late-answer switch holds right now."""
    items: list[dict[str, Any]] = (await _control(stack, "GET", "held")).json()["held"]
    return items


async def release_held(
    stack: StackHandle, platform: str | None = None, account: str | None = None
) -> int:
    """Answers held calls at once (all, a platform's, or one account's)."""
    answer = await _control(stack, "DELETE", "held", params=_scope(platform, account))
    released: int = answer.json()["released"]
    return released


async def _control(
    stack: StackHandle,
    method: str,
    what: str,
    *,
    params: dict[str, str] | None = None,
    json: dict[str, Any] | None = None,
) -> httpx.Response:
    """One call to the sandbox's control API (/_sandbox/…); an error answer raises."""
    async with httpx.AsyncClient(timeout=10.0) as http:
        answer = await http.request(
            method, f"{sandbox_url(stack)}/_sandbox/{what}", params=params, json=json
        )
    answer.raise_for_status()
    return answer


def _scope(platform: str | None, account: str | None) -> dict[str, str]:
    """Query parameters naming a platform and an account, each where given."""
    return {k: v for k, v in (("platform", platform), ("account", account)) if v}


def in_process_sandbox(**settings: Any) -> Sandbox:
    """The sandbox network as an in-process app (no port): pass it to `sandbox_transport`.
    Media is not downloaded unless `fetch_media=True`."""
    return create_sandbox(SandboxSettings(**{"fetch_media": False, **settings}))


def sandbox_transport(sandbox: Sandbox) -> httpx.MockTransport:
    """An httpx transport that answers from the in-process sandbox, for unit tests of code
    that speaks to the platforms (`httpx.AsyncClient(transport=…, base_url=SANDBOX_BASE)`)."""
    client = falcon.testing.TestClient(sandbox.app)

    def handle(request: httpx.Request) -> httpx.Response:
        result = client.simulate_request(
            request.method,
            request.url.path,
            query_string=request.url.query.decode() or None,
            headers={k: v for k, v in request.headers.items() if k.lower() != "host"},
            body=request.content,
        )
        return httpx.Response(
            result.status_code, headers=list(result.headers.items()), content=result.content
        )

    return httpx.MockTransport(handle)


# A Fernet key for unit tests (not the development default, so tests notice a wrong key).
TEST_TOKEN_KEY = "dGVzdC10b2tlbi1rZXktZm9yLXVuaXQtdGVzdHMtMDA="


@dataclass
class AccountWorld:
    """account-svc's connected-account objects over one test database and an in-process
    sandbox network (for unit tests)."""

    records: AccountCollections
    clock: FrozenClock
    sandbox: Sandbox
    http: httpx.AsyncClient
    parts: ConnectedAccountParts
    organizations: Organizations

    async def organization(self, name: str = "Acme") -> str:
        return (await self.organizations.create(name)).organization_id

    async def connect(
        self,
        organization_id: str,
        platform: str,
        username: str,
        *,
        connection: str = "",
        linknet_destinations: str = "",
    ) -> ConnectedAccount:
        """The whole connect flow: start, the sandbox's authorize form, complete."""
        started = await self.parts.connect.start(
            link_token=None,
            organization_id=organization_id,
            platform_name=platform,
            connection=connection,
            redirect_uri="http://127.0.0.1:9/connect/callback",
        )
        code, state = await self.authorize(started.authorize_url, username, linknet_destinations)
        done = await self.parts.connect.complete(state, code, "")
        return done.account

    async def authorize(
        self, authorize_url: str, username: str, linknet_destinations: str = ""
    ) -> tuple[str, str]:
        """Submits the sandbox's sign-in form as the account owner; returns (code, state)."""
        parts = urlsplit(authorize_url)
        form = dict(parse_qsl(parts.query)) | {
            "username": username,
            "action": "allow",
            "linknet_destinations": linknet_destinations,
        }
        answer = await self.http.post(parts.path, data=form)
        assert answer.status_code == 302, answer.text
        query = dict(parse_qsl(urlsplit(answer.headers["location"]).query))
        return query["code"], query["state"]


@asynccontextmanager
async def account_world(
    db: AsyncDatabase[Document], start: datetime | None = None, **sandbox_settings: Any
) -> AsyncIterator[AccountWorld]:
    records = AccountCollections.of(db)
    await records.ensure_indexes()
    clock = FrozenClock(start or datetime.now(UTC).replace(microsecond=0))
    sandbox = in_process_sandbox(**sandbox_settings)
    settings = AccountSettings(
        account_token_key=SecretStr(TEST_TOKEN_KEY), sandbox_url=SANDBOX_BASE
    )
    organizations = Organizations(records, clock)
    async with httpx.AsyncClient(
        transport=sandbox_transport(sandbox), base_url=SANDBOX_BASE
    ) as http:
        parts = connected_parts(settings, records, organizations, http, clock)
        yield AccountWorld(records, clock, sandbox, http, parts, organizations)
    sandbox.processor.close()


SANDBOX_BASE = "http://sandbox.test"

"""Test clients of a running stack: the HTTP API and the admin gRPC calls."""

from __future__ import annotations

import base64
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import grpc
import httpx
import pytest
from tenacity import AsyncRetrying, retry_if_exception, stop_after_delay, wait_fixed

from storypost.account.v1 import account_pb2 as pb
from storypost.account.v1 import account_pb2_grpc
from storypost.testing.stack import Organization, StackHandle
from storypost_runtime.component import component

# What storypost.testing makes for a test: an organization, an API token, its base URL.
Org = Organization


@dataclass(frozen=True)
class IssuedToken:
    credential_id: str
    token: str


def _unavailable(error: BaseException) -> bool:
    return isinstance(error, grpc.aio.AioRpcError) and error.code() == grpc.StatusCode.UNAVAILABLE


# As every caller is told to: UNAVAILABLE (a service or its database restarting, e.g. right
# after a test that killed one) is retried for a while. A repeat may make a second test
# organization; nothing reads it.
def retrying_unavailable() -> AsyncRetrying:
    return AsyncRetrying(
        retry=retry_if_exception(_unavailable),
        stop=stop_after_delay(30),
        wait=wait_fixed(0.5),
        reraise=True,
    )


@component
class Admin:
    """account-svc calls a test needs (what `storypost admin` does)."""

    channel: grpc.aio.Channel
    edge_url: str
    _accounts: account_pb2_grpc.AccountServiceAsyncStub = field(init=False)

    def __post_init__(self) -> None:
        self._accounts = account_pb2_grpc.AccountServiceStub(self.channel)

    async def create_org(self, name: str = "test org") -> Org:
        async for attempt in retrying_unavailable():
            with attempt:
                org = await self._accounts.CreateOrganization(
                    pb.CreateOrganizationRequest(name=name)
                )
        issued = await self.create_token(org.organization_id)
        return Org(
            org.organization_id, issued.token, f"{self.edge_url}/o/{org.organization_id}/api/v1"
        )

    async def create_token(self, organization_id: str, name: str = "tests") -> IssuedToken:
        async for attempt in retrying_unavailable():
            with attempt:
                reply = await self._accounts.CreateApiCredential(
                    pb.CreateApiCredentialRequest(organization_id=organization_id, name=name)
                )
        return IssuedToken(reply.credential.credential_id, reply.token)

    async def set_credits(self, organization_id: str, credits: int) -> None:
        await self._accounts.SetCredits(
            pb.SetCreditsRequest(organization_id=organization_id, credits=credits)
        )

    async def revoke_token(self, organization_id: str, credential_id: str) -> None:
        await self._accounts.RevokeApiCredential(
            pb.RevokeApiCredentialRequest(
                organization_id=organization_id, credential_id=credential_id
            )
        )


@component
class Api:
    """An HTTP client of the edge with a shortcut for procedure calls."""

    edge_url: str
    admin: Admin
    http: httpx.AsyncClient = field(init=False)

    def __post_init__(self) -> None:
        self.http = httpx.AsyncClient(base_url=self.edge_url, timeout=130.0)

    @staticmethod
    def auth(org: Org, token: str | None = None) -> dict[str, str]:
        return {"Authorization": f"Bearer {token or org.token}"}

    async def call(
        self,
        org: Org,
        procedure: str,
        body: Any,
        *,
        token: str | None = None,
        headers: dict[str, str] | None = None,
    ) -> httpx.Response:
        return await self.http.post(
            f"{org.base_url}/{procedure}",
            json=body,
            headers={**self.auth(org, token), **(headers or {})},
        )

    async def post(self, url: str, **kwargs: Any) -> httpx.Response:
        return await self.http.post(url, **kwargs)

    async def get(self, url: str, **kwargs: Any) -> httpx.Response:
        return await self.http.get(url, **kwargs)

    async def close(self) -> None:
        await self.http.aclose()


@asynccontextmanager
async def stack_api(stack: StackHandle) -> AsyncIterator[Api]:
    """An HTTP client of the stack's edge whose admin calls go to its account-svc."""
    async with stack.channel("account", 10.0) as channel:
        client = Api(stack.edge_url, Admin(channel, stack.edge_url))
        yield client
        await client.close()


async def upload_inline(api: Api, org: Org, data: bytes, content_type: str) -> httpx.Response:
    """An inline temp blob upload (the content in the call itself), answered as it is."""
    return await api.call(
        org,
        "upload-temp-blob",
        {
            "tempBlobUuid": str(uuid.uuid4()),
            "contentBase64": base64.b64encode(data).decode(),
            "contentType": content_type,
        },
    )


async def upload_blob(api: Api, org: Org, data: bytes, content_type: str) -> str:
    """An inline temp blob upload that must succeed; its stable `url`."""
    answer = await upload_inline(api, org, data, content_type)
    assert answer.status_code == 200, answer.text
    url: str = answer.json()["url"]
    return url


def only_in_passes(request: pytest.FixtureRequest, *modes: str, why: str) -> None:
    """Skips a test outside the named stack modes of `make test`'s passes (processes,
    containers, production); `why` says which pass covers what it proves."""
    mode = request.config.getoption("--storypost-stack")
    if mode not in modes:
        pytest.skip(f"runs in the {' and '.join(modes)} pass: {why}")

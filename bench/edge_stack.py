"""What the edge's overhead benches share (edge_vs_bare.py, mcp_overhead.py): their arguments,
and an edge with account-svc and an organization whose rate limit does not bind (the benches
measure overhead, not the limit)."""

from __future__ import annotations

import argparse
import tempfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

from storypost.account.v1 import account_pb2 as pb
from storypost.account.v1 import account_pb2_grpc
from storypost.testing.stack import stack_channel
from storypost_cli.stack import EmbeddedStack, StackPorts


def overhead_arguments(description: str | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--requests", type=int, default=1500, help="per target per round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--concurrency", type=int, default=8)
    return parser.parse_args()


@dataclass(frozen=True)
class EdgeWithOrg:
    stack: EmbeddedStack
    organization_id: str
    token: str

    @property
    def auth(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"}


@asynccontextmanager
async def edge_with_org() -> AsyncIterator[EdgeWithOrg]:
    """MongoDB, account-svc and the edge, and an organization with an API token."""
    with tempfile.TemporaryDirectory() as tmp:
        stack = EmbeddedStack(
            Path(tmp),
            StackPorts.free(),
            components=("mongo", "account", "edge"),
            extra_env={
                "STORYPOST_RATE_LIMIT_PER_MINUTE": "100000",
                "STORYPOST_LOG_LEVEL": "warning",
            },
        )
        async with stack:
            async with stack_channel(stack.env(), "account", 15) as channel:
                accounts = account_pb2_grpc.AccountServiceStub(channel)
                org = await accounts.CreateOrganization(pb.CreateOrganizationRequest(name="bench"))
                issued = await accounts.CreateApiCredential(
                    pb.CreateApiCredentialRequest(organization_id=org.organization_id)
                )
            yield EdgeWithOrg(stack, org.organization_id, issued.token)

"""A stack of its own for the webhook tests (MongoDB, NATS, account-svc, webhook-svc), set up
for local HTTPS receivers and a retry schedule of seconds; a receiver; a harness."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import nats
import pytest

from storypost.testing.certificates import Certificates, make_certificates
from storypost.testing.stack import stack_channel
from storypost.webhook.v1 import webhook_pb2_grpc
from storypost_cli.stack import EmbeddedStack, StackPorts
from tests.integration.webhooks.harness import Harness
from tests.support.webhook_receiver import Receiver

# Waits 0.4, 0.8, 1.2 s (jitter 10 %): four attempts within about 3 s.
RETRY_SCHEDULE = "0.4,0.8,1.2"
ATTEMPT_TIMEOUT = 1.5


def webhook_env(certs: Certificates) -> dict[str, str]:
    """What this stack's webhook-svc needs for the tests (see docs/webhooks.md)."""
    return {
        "STORYPOST_WEBHOOK_ALLOWED_NETWORKS": "127.0.0.0/8",
        "STORYPOST_WEBHOOK_CA_FILE": str(certs.ca_file),
        "STORYPOST_WEBHOOK_RETRY_SCHEDULE_SECONDS": RETRY_SCHEDULE,
        "STORYPOST_WEBHOOK_RETRY_JITTER": "0.1",
        "STORYPOST_WEBHOOK_ATTEMPT_TIMEOUT_SECONDS": str(ATTEMPT_TIMEOUT),
        "STORYPOST_WEBHOOK_LEASE_SECONDS": "4",
        "STORYPOST_WEBHOOK_ACK_WAIT_SECONDS": "5",
        "STORYPOST_WEBHOOK_POLL_SECONDS": "0.2",
    }


@pytest.fixture(scope="session")
def webhook_certs(tmp_path_factory: pytest.TempPathFactory) -> Certificates:
    return make_certificates(tmp_path_factory.mktemp("webhook-certs"))


@pytest.fixture(scope="session")
async def webhook_stack(
    tmp_path_factory: pytest.TempPathFactory, webhook_certs: Certificates
) -> AsyncIterator[EmbeddedStack]:
    stack = EmbeddedStack(
        Path(tmp_path_factory.mktemp("webhook-stack")),
        StackPorts.free(),
        components={"mongo", "nats", "account", "webhook"},
        extra_env=webhook_env(webhook_certs),
    )
    async with stack:
        yield stack


@pytest.fixture(scope="session")
async def receiver(webhook_certs: Certificates) -> AsyncIterator[Receiver]:
    async with Receiver(webhook_certs) as server:
        yield server


@pytest.fixture(scope="session")
async def harness(webhook_stack: EmbeddedStack, receiver: Receiver) -> AsyncIterator[Harness]:
    env = webhook_stack.env()
    channel = stack_channel(env, "webhook", 10.0)
    connection = await nats.connect(
        env["STORYPOST_NATS_URL"], max_reconnect_attempts=-1, reconnect_time_wait=0.3
    )
    yield Harness(
        stub=webhook_pb2_grpc.WebhookServiceStub(channel),
        js=connection.jetstream(),
        receiver=receiver,
    )
    await connection.close()
    await channel.close()


@pytest.fixture
def org_id() -> str:
    """An organization id of its own (webhook-svc scopes by it; it need not exist elsewhere)."""
    return f"org{uuid.uuid4().hex[:16]}"


@pytest.fixture
def path() -> str:
    """A receiver path of its own."""
    return f"/hooks/{uuid.uuid4().hex}"

"""One attempt against a real local HTTPS receiver: headers, outcomes, time limit, refusals."""

from __future__ import annotations

import ipaddress
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest

from storypost.testing.certificates import Certificates, make_certificates
from storypost_runtime.clock import SystemClock
from tests.support.webhook_receiver import Answer, Receiver
from webhook_svc.sender import Sender, http_client
from webhook_svc.signing import verify
from webhook_svc.targets import AddressPolicy

LOCAL = AddressPolicy(allowed_networks=(ipaddress.ip_network("127.0.0.0/8"),))
EVENT = "photoapp_story_post.status_changed"


@pytest.fixture
async def certs(tmp_path: Path) -> Certificates:
    return make_certificates(tmp_path)


@pytest.fixture
async def receiver(certs: Certificates) -> AsyncIterator[Receiver]:
    async with Receiver(certs) as server:
        yield server


@pytest.fixture
async def client(certs: Certificates) -> AsyncIterator[aiohttp.ClientSession]:
    async with http_client(LOCAL, str(certs.ca_file), 8, 1.0) as http:
        yield http


async def test_a_2xx_is_success_and_carries_the_headers(
    client: aiohttp.ClientSession, receiver: Receiver
) -> None:
    receiver.answer("/h", Answer(202))
    sender = Sender(client=client, clock=SystemClock(), timeout_seconds=1.0)
    result = await sender.attempt(receiver.url("/h"), "d-1", EVENT, '{"event":"x"}', None)
    assert result.ok and result.status_code == 202 and result.error == ""
    [got] = receiver.received("/h")
    assert got.body == b'{"event":"x"}'
    assert got.header("content-type") == "application/json"
    assert got.header("x-service-event") == EVENT
    assert got.header("x-service-delivery") == "d-1"
    assert got.header("x-service-signature") is None


async def test_signed_attempts_verify(client: aiohttp.ClientSession, receiver: Receiver) -> None:
    sender = Sender(client=client, clock=SystemClock(), timeout_seconds=1.0)
    await sender.attempt(receiver.url("/s"), "d-1", EVENT, '{"a":1}', "secret-0123456789ab")
    [got] = receiver.received("/s")
    header = got.header("x-service-signature")
    assert header is not None and verify("secret-0123456789ab", header, got.body)


async def test_non_2xx_and_slow_answers_are_failed_attempts(
    client: aiohttp.ClientSession, receiver: Receiver
) -> None:
    receiver.answer("/f", Answer(500), Answer(301), Answer(200, delay=1.5))
    sender = Sender(client=client, clock=SystemClock(), timeout_seconds=1.0)
    failed = await sender.attempt(receiver.url("/f"), "d", EVENT, "{}", None)
    assert not failed.ok and failed.status_code == 500 and failed.error == "HTTP 500"
    redirect = await sender.attempt(receiver.url("/f"), "d", EVENT, "{}", None)
    assert not redirect.ok and redirect.error == "HTTP 301"  # redirects are not followed
    slow = await sender.attempt(receiver.url("/f"), "d", EVENT, "{}", None)
    assert not slow.ok and slow.status_code == 0 and slow.error.startswith("timed out")
    assert 900 <= slow.latency_ms < 1500


async def test_refused_and_untrusted_targets_get_nothing(
    certs: Certificates, receiver: Receiver
) -> None:
    async with http_client(AddressPolicy(), str(certs.ca_file), 8, 1.0) as production:
        result = await Sender(client=production, clock=SystemClock(), timeout_seconds=1.0).attempt(
            receiver.url("/r"), "d", EVENT, "{}", None
        )
    assert not result.ok and result.error.startswith("refused: 127.0.0.1")
    async with http_client(AddressPolicy(), str(certs.ca_file), 8, 1.0) as production:
        by_name = await Sender(client=production, clock=SystemClock(), timeout_seconds=1.0).attempt(
            f"https://localhost:{receiver.port}/r", "d", EVENT, "{}", None
        )
    assert not by_name.ok and by_name.error.startswith("refused: localhost resolves to")
    async with http_client(LOCAL, None, 8, 1.0) as public_cas_only:
        result = await Sender(
            client=public_cas_only, clock=SystemClock(), timeout_seconds=1.0
        ).attempt(receiver.url("/r"), "d", EVENT, "{}", None)
    assert not result.ok and result.error.startswith("connection failed")
    assert "CERTIFICATE_VERIFY_FAILED" in result.error
    assert receiver.received("/r") == []
    async with http_client(LOCAL, None, 8, 1.0) as client:
        closed_port = await Sender(client=client, clock=SystemClock(), timeout_seconds=1.0).attempt(
            "https://127.0.0.1:1/", "d", EVENT, "{}", None
        )
    assert not closed_port.ok and closed_port.error.startswith("connection failed")

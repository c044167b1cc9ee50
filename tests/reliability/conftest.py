"""The reliability suite's own stack (one for the whole suite), its clients and servers, and
its figures (the `reliability_long` marker that keeps long tests for `make reliability` is
tests/conftest.py's: tests outside this folder use it too).

The shared session stack keeps production-like limits that other tests depend on (60
requests per minute, webhooks to any loopback URL). This suite needs the opposite on a few
switches — a rate limit that does not stop 50 racing calls or a fuzzer, webhook SSRF rules
that refuse loopback while one receiver on 127.0.0.2 is allowed, a short settle time and a
redirecting page server the render sandbox treats as public — so it starts one stack of its
own, next to the shared one, once per session.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
from pymongo.asynchronous.database import AsyncDatabase

from storypost.testing.plugin import stack_as_asked
from storypost.testing.stack import StackHandle
from tests.reliability.support import (
    FIGURES,
    RELIABILITY_LIMIT_PER_MINUTE,
    LoopbackReceiver,
    make_receiver_certificates,
)
from tests.support.api import Api, Org, stack_api
from tests.support.mongo import stack_database
from tests.support.pages import PageServer, running_page_server


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """The figures the reliability tests measured (for docs/reliability.md)."""
    if FIGURES:
        terminalreporter.section("reliability figures")
        for name, text in sorted(FIGURES.items()):
            terminalreporter.write_line(f"{name}: {text}")


@pytest.fixture(scope="session")
def redirector() -> Iterator[PageServer]:
    """A page server the render sandbox of this stack treats as a public host (it is named in
    STORYPOST_RENDER_ALLOWED_HOSTS): it serves pages and redirects anywhere, like a hostile
    site on the internet would."""
    with running_page_server() as server:
        yield server


@pytest.fixture(scope="session")
def receiver_certs(tmp_path_factory: pytest.TempPathFactory) -> Any:
    return make_receiver_certificates(tmp_path_factory.mktemp("reliability-certs"))


@pytest.fixture(scope="session")
def reliability_env(redirector: PageServer, receiver_certs: Any) -> dict[str, str]:
    return {
        "STORYPOST_RATE_LIMIT_PER_MINUTE": str(RELIABILITY_LIMIT_PER_MINUTE),
        "STORYPOST_AUTH_CACHE_SECONDS": "1",
        # A crashed publish-svc's posts are taken over after 10 s (production: 60 s).
        "STORYPOST_SCHEDULER_LEASE_SECONDS": "10",
        # A crashed publish-svc's series occurrence is taken over after 10 s (production: 120 s).
        "STORYPOST_SERIES_LEASE_SECONDS": "10",
        "STORYPOST_RENDER_SETTLE_SECONDS": "5",
        "STORYPOST_RENDER_ALLOWED_HOSTS": f"127.0.0.1:{redirector.port}",
        "STORYPOST_RENDER_RESUME_INTERVAL_SECONDS": "2",
        # Webhooks: loopback and private addresses stay refused; only the receiver's
        # 127.0.0.2 is exempt, over HTTPS with the session's CA.
        "STORYPOST_WEBHOOK_ALLOWED_NETWORKS": "127.0.0.2/32",
        "STORYPOST_WEBHOOK_CA_FILE": str(receiver_certs.ca_file),
        "STORYPOST_WEBHOOK_RETRY_SCHEDULE_SECONDS": "0.5,1,2,2,2,2,2,2",
        "STORYPOST_WEBHOOK_RETRY_JITTER": "0.1",
        "STORYPOST_WEBHOOK_ATTEMPT_TIMEOUT_SECONDS": "3",
        "STORYPOST_WEBHOOK_LEASE_SECONDS": "6",
        "STORYPOST_WEBHOOK_ACK_WAIT_SECONDS": "10",
        "STORYPOST_WEBHOOK_POLL_SECONDS": "0.2",
    }


@pytest.fixture(scope="session")
async def rel_stack(
    request: pytest.FixtureRequest,
    tmp_path_factory: pytest.TempPathFactory,
    reliability_env: dict[str, str],
) -> AsyncIterator[StackHandle]:
    """The reliability suite's stack (started on first use, removed at the end)."""
    data_dir = tmp_path_factory.mktemp("reliability-stack")
    async with stack_as_asked(request.config, data_dir, reliability_env) as handle:
        yield handle


@pytest.fixture(scope="session")
async def rel_api(rel_stack: StackHandle) -> AsyncIterator[Api]:
    async with stack_api(rel_stack) as client:
        yield client


@pytest.fixture
async def rel_org(rel_api: Api) -> Org:
    """A fresh organization on the reliability stack."""
    return await rel_api.admin.create_org("reliability org")


@pytest.fixture(scope="session")
async def rel_db(rel_stack: StackHandle) -> AsyncIterator[AsyncDatabase[dict[str, Any]]]:
    """The stack's MongoDB database, read directly to count records."""
    async with stack_database(rel_stack.env, timeoutMS=30_000) as db:
        yield db


@pytest.fixture(scope="session")
async def receiver(receiver_certs: Any) -> AsyncIterator[LoopbackReceiver]:
    async with LoopbackReceiver(receiver_certs) as server:
        yield server

"""The one test stack every test directory shares (integration, e2e): its settings, an admin
client, organizations; the canary server no stack may reach; and the `reliability_long`
marker: long tests (in tests/reliability and elsewhere) run only under `make reliability`."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Iterator

import pytest

from storypost.testing.stack import StackHandle
from tests.reliability.support import LONG_SWITCH
from tests.support.api import Api, Org, stack_api
from tests.support.pages import PageServer, running_page_server

LONG = "reliability_long"
# A long test that also runs in every `make test`, in a shorter form (see `long_run`).
SHORT = "reliability_short"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{LONG}: long reliability test (crashes, restarts, long fuzzing); runs only under "
        f"`make reliability` (`-m {LONG}`) or with {LONG_SWITCH}=1",
    )
    config.addinivalue_line(
        "markers",
        f"{SHORT}: a {LONG} test that every run includes, shortened unless {LONG_SWITCH}=1 "
        "(one kill per component, fewer calls)",
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Leaves the long tests out of a plain run (`make test`) unless asked for."""
    if LONG in (config.getoption("markexpr") or "") or os.environ.get(LONG_SWITCH) == "1":
        return

    def long_only(item: pytest.Item) -> bool:
        return item.get_closest_marker(LONG) is not None and item.get_closest_marker(SHORT) is None

    long = [item for item in items if long_only(item)]
    if long:
        config.hook.pytest_deselected(items=long)
        items[:] = [item for item in items if not long_only(item)]


@pytest.fixture(scope="session")
def storypost_stack_env() -> dict[str, str]:
    """STORYPOST_* settings for the session's stack. It lives here, at the root, because the
    first test that asks for `storypost_stack` starts it for every directory."""
    return {
        # Short auth cache so revocation is seen within a second.
        "STORYPOST_AUTH_CACHE_SECONDS": "1",
        # A small story quota so the 429 is reached with a few posts (production: 100).
        "STORYPOST_STORY_QUOTA_PER_DAY": "3",
        # A crashed publish-svc's posts are taken over after 10 s (production: 60 s).
        "STORYPOST_SCHEDULER_LEASE_SECONDS": "10",
        # The failure matrix (tests/integration/publish/test_failure_matrix.py) keeps ~70
        # posts in platform calls at once, each held up to the platform timeout (production: 8).
        "STORYPOST_SCHEDULER_WORKERS": "128",
        # Insight points seconds apart instead of hours (tests/integration/insights/; the
        # sandbox's figures step hourly, so every point of a test reads the same figures).
        "STORYPOST_INSIGHTS_POINTS_SECONDS": "0,6,12",
        "STORYPOST_INSIGHTS_STORY_POINTS_SECONDS": "0,6,12",
        "STORYPOST_INSIGHTS_BACKOFF_SECONDS": "1",
        "STORYPOST_INSIGHTS_MAX_BACKOFF_SECONDS": "2",
        "STORYPOST_INSIGHTS_REFRESH_MIN_SECONDS": "1",
        "STORYPOST_INSIGHTS_MAX_IDLE_SECONDS": "0.5",
        # Webhook receivers of the tests listen on http://127.0.0.1.
        "STORYPOST_WEBHOOK_ALLOW_HTTP_LOOPBACK": "true",
    }


@pytest.fixture(scope="session")
def canary() -> Iterator[PageServer]:
    """A server on loopback that nothing of any stack may ever reach (no stack exempts its
    port): the render and reliability suites look for requests that arrive anyway."""
    with running_page_server() as server:
        yield server


@pytest.fixture(scope="session")
async def api(storypost_stack: StackHandle) -> AsyncIterator[Api]:
    async with stack_api(storypost_stack) as client:
        yield client


@pytest.fixture(scope="session")
async def org(api: Api) -> Org:
    """One organization shared by the tests that stay far below the rate limit."""
    return await api.admin.create_org("shared test org")


@pytest.fixture(scope="session")
async def other_org(api: Api) -> Org:
    return await api.admin.create_org("other test org")


@pytest.fixture
async def fresh_org(api: Api) -> Org:
    """An organization of its own (a full rate-limit bucket, no records)."""
    return await api.admin.create_org("fresh test org")

"""pytest plugin: the `storypost_stack` fixture (one running stack per test session).

Choose how the stack runs with `--storypost-stack` or STORYPOST_TEST_STACK: `processes`
(default; every component a local process), `containers` (every component a container of
our images, built by `make images`) or `production` (those containers in the production
shape: two replicas of every service and of the edge behind a balancer, production keys).
In `processes` mode, `--storypost-deps` or STORYPOST_TEST_DEPS says where MongoDB/NATS/S3
come from (`auto`: containers where Docker answers and the images exist, else local
processes). Override `storypost_stack_env` in a conftest to pass STORYPOST_* settings to
every component. See docs/testing.md.
"""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from types import FrameType
from typing import cast

import pytest

from storypost.testing.dependencies import DepsMode, StackMode
from storypost.testing.stack import StackHandle, running_stack


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("storypost", "the storypost test stack")
    group.addoption(
        "--storypost-stack",
        choices=["processes", "containers", "production"],
        default=os.environ.get("STORYPOST_TEST_STACK", "processes"),
        help="run the stack's components as local processes or as containers of our images",
    )
    group.addoption(
        "--storypost-deps",
        choices=["auto", "embedded", "containers"],
        default=os.environ.get("STORYPOST_TEST_DEPS", "auto"),
        help="where a `processes` stack gets MongoDB, NATS and S3",
    )


def _interrupt(signum: int, _frame: FrameType | None) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def pytest_configure(config: pytest.Config) -> None:
    # SIGTERM (a CI time limit, `kill`) ends the run like Ctrl-C: fixtures tear down, so the
    # stack's processes and containers are removed. Only where nobody else handles it.
    if signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
        signal.signal(signal.SIGTERM, _interrupt)


def pytest_report_header(config: pytest.Config) -> str:
    stack = config.getoption("--storypost-stack")
    deps = config.getoption("--storypost-deps")
    where = f" (dependencies: {deps})" if stack == "processes" else ""
    return f"storypost stack: {stack}{where}"


@pytest.fixture(scope="session")
def storypost_stack_env() -> dict[str, str]:
    """STORYPOST_* settings for every component of the test stack (override to change)."""
    return {}


@pytest.fixture(scope="session")
async def storypost_stack(
    request: pytest.FixtureRequest,
    tmp_path_factory: pytest.TempPathFactory,
    storypost_stack_env: dict[str, str],
) -> AsyncIterator[StackHandle]:
    """The whole storypost stack, started once per session and removed at its end."""
    data_dir = tmp_path_factory.mktemp("storypost-stack")
    async with stack_as_asked(request.config, data_dir, storypost_stack_env) as handle:
        yield handle


def stack_as_asked(
    config: pytest.Config, data_dir: Path, extra_env: Mapping[str, str]
) -> contextlib.AbstractAsyncContextManager[StackHandle]:
    """`running_stack` in the mode this run's options ask for: a suite that needs a stack of
    its own (other settings, next to the shared one) starts it with this."""
    return running_stack(
        data_dir,
        stack=cast(StackMode, config.getoption("--storypost-stack")),
        deps=cast(DepsMode, config.getoption("--storypost-deps")),
        extra_env=extra_env,
    )

"""Every bench in bench/ still starts, runs and prints its result line (issue #52 item 7).

A bench runs by hand (`make bench`, `make load`, `.venv/bin/python bench/….py`), so nothing
else notices when one breaks: `bench/bare_server.py` could not import `edge` for as long as
`bench/edge.py` (now `bench/edge_vs_bare.py`) sat first on its sys.path. Here each is started
as a script, as by hand, with its quickest arguments (`--smoke` where the shortest run of the
normal ones is long): exit status 0 and its result line last. Their figures mean nothing here.
The load bench runs against the session's stack instead of starting one of its own.
"""

from __future__ import annotations

import asyncio
import importlib.util
import os
import re
import sys
import time
from pathlib import Path

import pytest

from storypost.testing.stack import StackHandle
from tests.support.api import only_in_passes

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "bench"

# Bench -> its quickest arguments and the pattern of its last line (its result).
BENCHES: dict[str, tuple[list[str], str]] = {
    "cli_startup.py": (["--runs", "2"], r"^caller storypost --help / python -c pass: [\d.]+x$"),
    "connections.py": (
        ["--seconds", "1", "--few", "2", "--many", "8", "--rounds", "1"],
        r"^CPU per request, 8 over 2 open connections: edge server [\d.]+x, waitress [\d.]+x$",
    ),
    "capture.py": (["--rounds", "1", "--per-round", "1"], r"^RESULT ours vs Playwright's"),
    "documents.py": (["--rounds", "1", "--per-round", "1"], r"^RESULT CPU per render: "),
    "edge_vs_bare.py": (
        ["--requests", "40", "--rounds", "1", "--concurrency", "2"],
        r"^edge/bare: throughput [\d.]+x .* edge/bare\+auth: throughput [\d.]+x",
    ),
    "webhooks.py": (
        ["--rate", "20", "--seconds", "1"],
        r"^webhook delivery lag at 20 events/s: p50 \d+ ms, p99 \d+ ms",
    ),
    "scheduler.py": (
        ["--stories", "3", "--accounts", "1", "--limit", "120"],
        r"^bench scheduler: 3/3 executed .* duplicates 0 \| late 0$",
    ),
    "mcp_overhead.py": (
        ["--requests", "40", "--rounds", "1", "--concurrency", "2"],
        r"^MCP extra CPU [\d.]+ ms/request; MCP/API [\d.]+x",
    ),
    "list_posts.py": (["--posts", "60", "--calls", "2"], r"^list-posts over 60 posts .* p99 "),
    "insights.py": (
        ["--posts", "4", "--accounts", "1", "--limit", "120"],
        r"^bench insights: points/s [\d.]+$",
    ),
    "render.py": (["--smoke", "--skip-schedule"], r"^RESULT prepare p50 [\d.]+x .* memory peak"),
    # Against the session's stack (below): --edge-url and --account-addr are added.
    "load.py": (["--smoke"], r"^all +\d+ +0 +\d+ +\d+ +\d+$"),
}
# Scripts that are not benches: started by one (bare_server.py by edge_vs_bare.py) or imported
# by some (edge_stack.py by edge_vs_bare.py and mcp_overhead.py).
HELPERS = {"bare_server.py", "edge_stack.py"}
# Each bench may take this long on the 2-core development machine with other suites running.
BENCH_TIMEOUT = 240.0


@pytest.fixture(autouse=True)
def processes_pass_only(request: pytest.FixtureRequest) -> None:
    only_in_passes(
        request,
        "processes",
        why="the benches start their own processes; the production pass adds nothing but time",
    )


def test_every_bench_is_smoked() -> None:
    found = {path.name for path in BENCH.glob("*.py")}
    assert found - HELPERS == set(BENCHES), "a bench without a smoke test (or one gone)"


@pytest.mark.parametrize("name", sorted(path.stem for path in BENCH.glob("*.py")))
def test_no_bench_hides_a_module(name: str) -> None:
    """A script's folder comes first on its sys.path: a bench named like an importable
    module (bench/edge.py and the `edge` package) hides it from every script in bench/."""
    assert importlib.util.find_spec(name) is None, f"bench/{name}.py hides the module {name}"


async def run_bench(name: str, *extra: str, env: dict[str, str] | None = None) -> str:
    """Runs bench/<name> as a script from the repository root; returns its last line."""
    arguments, pattern = BENCHES[name]
    started = time.monotonic()
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        str(BENCH / name),
        *arguments,
        *extra,
        cwd=ROOT,
        env={**os.environ, **(env or {})},
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    try:
        output, _ = await asyncio.wait_for(process.communicate(), BENCH_TIMEOUT)
    except TimeoutError:
        process.kill()
        await process.wait()
        raise AssertionError(f"bench/{name} still running after {BENCH_TIMEOUT:.0f} s") from None
    text = output.decode(errors="replace")
    lines = [line for line in text.splitlines() if line.strip()]
    assert process.returncode == 0, f"bench/{name} exited {process.returncode}:\n{text[-3000:]}"
    assert lines, f"bench/{name} printed nothing"
    assert re.search(pattern, lines[-1]), f"bench/{name}'s last line: {lines[-1]!r}"
    print(f"bench/{name} in {time.monotonic() - started:.0f} s: {lines[-1]}")
    return lines[-1]


@pytest.mark.timeout(BENCH_TIMEOUT + 60)
@pytest.mark.parametrize("name", sorted(set(BENCHES) - {"load.py"}))
async def test_bench_runs_and_prints_its_result(name: str) -> None:
    await run_bench(name)


@pytest.mark.timeout(BENCH_TIMEOUT + 60)
async def test_load_bench_runs_against_a_running_stack(storypost_stack: StackHandle) -> None:
    # The stack's settings (its story quota among them) reach the bench's account pool.
    await run_bench(
        "load.py",
        "--edge-url",
        storypost_stack.edge_url,
        "--account-addr",
        storypost_stack.account_addr,
        env=storypost_stack.env,
    )

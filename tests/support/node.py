"""Node.js for the tests of the TypeScript SDK and of the OpenAPI generators: where `node` is,
the SDK's locked devDependencies installed (scripts/ensure-node.sh) and the SDK built."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SDK = ROOT / "sdk-ts"
BIN = SDK / "node_modules" / ".bin"
# `make test` sets it (the Makefile installs Node first): a missing node is then a failure.
REQUIRED = os.environ.get("STORYPOST_REQUIRE_NODE") == "1"


def node_ready() -> str:
    """The `node` on PATH, with sdk-ts/node_modules installed from its lock; skips the test
    where there is no Node (fails under STORYPOST_REQUIRE_NODE=1)."""
    node = shutil.which("node")
    if node is None or shutil.which("npm") is None:
        message = "Node.js and npm are not installed (scripts/ensure-node.sh installs them)"
        if REQUIRED:
            pytest.fail(message)
        pytest.skip(message)
    # Installs nothing when node_modules is the lock's; `npm ci` otherwise (the npm registry).
    run([str(ROOT / "scripts" / "ensure-node.sh")], timeout=600)
    return node


def build_sdk() -> None:
    """Compiles sdk-ts/src into sdk-ts/dist with the locked TypeScript (`npm run build`)."""
    node_ready()
    run([str(BIN / "tsc"), "-p", str(SDK / "tsconfig.json")], timeout=300)


def run(
    args: list[str], *, timeout: float, cwd: Path = SDK, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Runs a command; a failure shows its output."""
    result = subprocess.run(
        args,
        cwd=cwd,
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    assert result.returncode == 0, f"{' '.join(args)}:\n{result.stdout}\n{result.stderr}"
    return result

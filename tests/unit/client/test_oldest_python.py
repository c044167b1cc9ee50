"""The SDK and its caller CLI install and run on the oldest Python they claim.

A venv of that Python gets `pip install ./client[cli]` (pip's cache and the configured
index: a few seconds once cached); then the CLI's `--version` and `--help` run, every module
of the package compiles, and the SDK is imported and used a little (ISO dates with Z, the
generated types' optional keys). Nothing of the server is installed there.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
CLIENT = ROOT / "client"


def oldest_python() -> tuple[str, str]:
    """(version, interpreter) of client/pyproject.toml's requires-python floor: a pyenv
    build, else one on PATH (a pyenv shim on PATH may name a Python it cannot run)."""
    claimed = tomllib.loads((CLIENT / "pyproject.toml").read_text())["project"]["requires-python"]
    version = claimed.removeprefix(">=").strip()
    candidates = [
        *sorted(str(p) for p in Path("/root/.pyenv/versions").glob(f"{version}.*/bin/python3")),
        *filter(None, [shutil.which(f"python{version}")]),
    ]
    for candidate in candidates:
        ran = subprocess.run([candidate, "-c", "pass"], capture_output=True, check=False)
        if ran.returncode == 0:
            return version, candidate
    pytest.skip(f"no Python {version} on this machine (requires-python {claimed})")


SDK_USE = """
import importlib.util, sys
from datetime import timezone
import storypost_client
from storypost_client import AsyncStorypostClient, KINDS, PollPolicy, StorypostClient
from storypost_client.bulk import parse_date
from storypost_client.generated.types import StatusDraftResponse
from storypost_client.isodate import parse_iso
from storypost_client.transport import iso_date

assert parse_date("2026-12-01T09:00:00Z").tzinfo is not None
assert parse_iso("2026-12-01T09:00:00.5+01:00").microsecond == 500000
assert iso_date(parse_iso("2026-12-01T10:00:00+01:00")) == "2026-12-01T09:00:00Z"
assert StatusDraftResponse.__optional_keys__ == {"previewUrl", "editorUrl"}
assert "draftUuid" in StatusDraftResponse.__required_keys__
with StorypostClient("http://127.0.0.1:9/o/x/api/v1", "sp_t") as client:
    assert client.base_url.endswith("/api/v1")
for server in ("grpc", "pymongo", "aioboto3", "mongoeco", "storypost_cli"):
    assert importlib.util.find_spec(server) is None, server
print(sys.version_info[:2], storypost_client.__version__)
"""


def test_the_sdk_and_cli_install_and_run_on_the_oldest_python(tmp_path: Path) -> None:
    version, python = oldest_python()
    venv = tmp_path / "venv"
    subprocess.run([python, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=60)
    # This venv's pip installs into the other (pip --python), with the client built from source.
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "install",
         "--quiet", f"{CLIENT}[cli]"],
        check=True,
        timeout=240,
    )  # fmt: skip
    storypost = venv / "bin" / "storypost"

    def run(*command: str) -> str:
        ran = subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)
        assert ran.returncode == 0, ran.stderr
        return ran.stdout

    assert run(str(storypost), "--version").startswith(f"storypost-client 0.1.0 (Python {version}.")
    assert "story" in run(str(storypost), "--help")
    assert "example:" in run(str(storypost), "story", "bulk", "--help")
    site = next((venv / "lib").glob("python*/site-packages"))
    run(str(venv / "bin" / "python"), "-m", "compileall", "-q", str(site / "storypost_client"))
    assert run(str(venv / "bin" / "python"), "-c", SDK_USE).startswith(
        f"({version.replace('.', ', ')})"
    )

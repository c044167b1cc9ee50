"""The caller CLI's help: an example at the end of every command's, `--version`, and a start
that imports nothing heavy (the SDK's clients, httpx, rich, pydantic, gRPC) to print it."""

from __future__ import annotations

import argparse
import ast
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import storypost_client
from storypost_cli.__main__ import build_parser as server_parser
from storypost_client import polling
from storypost_client.cli.app import build_parser
from storypost_client.cli.parsing import EXAMPLE_HEADING
from storypost_client.kinds import KIND_NAMES
from storypost_client.version import __version__

ROOT = Path(__file__).resolve().parents[3]
# Modules `storypost --help` must not import: each costs tens of milliseconds at every start.
HEAVY = ("httpx", "rich", "pydantic", "grpc", "storypost_client.sync_client", "storypost_cli")


def commands(
    parser: argparse.ArgumentParser, path: str = "storypost"
) -> Iterator[tuple[str, argparse.ArgumentParser]]:
    """Every parser of the tree: `storypost`, its commands, their actions."""
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from commands(sub, f"{path} {name}")


def caller_commands() -> list[tuple[str, argparse.ArgumentParser]]:
    return list(commands(build_parser()))


def example_at_the_end(parser: argparse.ArgumentParser) -> bool:
    """The help's last paragraph is `example:` and commands, each on its own line."""
    lines = parser.format_help().rstrip().splitlines()
    heading = max(i for i, line in enumerate(lines) if not line.startswith(" "))
    commands = lines[heading + 1 :]
    return (
        lines[heading] == EXAMPLE_HEADING
        and bool(commands)
        and all(line.startswith("  ") and "storypost " in line for line in commands)
    )


def test_every_caller_command_has_help_ending_with_an_example() -> None:
    missing = [path for path, parser in caller_commands() if not example_at_the_end(parser)]
    assert len(caller_commands()) > 30
    assert not missing, f"no example at the end of the help of: {', '.join(missing)}"


def test_every_command_of_the_server_has_help_ending_with_an_example() -> None:
    """admin, dev, sandbox and keys too (the server's `storypost`)."""
    missing = [path for path, parser in commands(server_parser()) if not example_at_the_end(parser)]
    assert not missing, f"no example at the end of the help of: {', '.join(missing)}"


def test_the_server_command_has_every_caller_command() -> None:
    server = {path for path, _ in commands(server_parser())}
    assert {path for path, _ in caller_commands()} <= server
    assert {"storypost admin", "storypost dev", "storypost dev up"} <= server


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "storypost_client.cli", *args],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )


def test_version_names_the_sdk_and_python() -> None:
    ran = run_cli("--version")
    python = ".".join(map(str, sys.version_info[:3]))
    assert ran.returncode == 0
    assert ran.stdout.strip() == f"storypost-client {__version__} (Python {python})"


def test_help_imports_none_of_the_heavy_modules() -> None:
    """What keeps `storypost --help` within a few times `python -c pass` (bench/cli_startup.py
    measures it): the modules behind a command are imported when it runs."""
    probe = (
        "import json, sys\n"
        "from storypost_client.cli.app import main\n"
        "try:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
        "sys.stderr.write(json.dumps(sorted(sys.modules)))\n"
    )
    ran = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60
    )
    loaded = json.loads(ran.stderr)
    heavy = [m for m in loaded if m.split(".")[0] in HEAVY or m in HEAVY]
    assert "usage: storypost" in ran.stdout
    assert not heavy, f"--help imported {heavy}"


def test_the_sdk_package_gives_every_public_name_from_its_module() -> None:
    """storypost_client imports its names lazily: the modules the type checker reads
    (`if TYPE_CHECKING:`) are the ones they come from at run time."""
    tree = ast.parse(Path(storypost_client.__file__).read_text())
    checked = next(n for n in tree.body if isinstance(n, ast.If))
    typed = {
        alias.name: node.module
        for node in checked.body
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
    }
    assert set(typed) == set(storypost_client.__all__) - {"__version__"}
    for name, module in typed.items():
        assert getattr(storypost_client, name) is getattr(sys.modules[str(module)], name)
    assert set(dir(storypost_client)) >= set(storypost_client.__all__)
    with pytest.raises(AttributeError):
        _ = storypost_client.NoSuchName


def test_the_kind_names_are_the_kinds_polled() -> None:
    assert tuple(polling.KINDS) == KIND_NAMES

"""Shell completion: the candidates `storypost __complete` gives, the bash script in a real
bash, and `completion SHELL --install`."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from storypost_client.cli.app import build_parser, main
from storypost_client.cli.completion import SHELLS, candidates, install_path, script


def names(words: list[str]) -> list[str] | None:
    found = candidates(build_parser(), words)
    return None if found is None else [name for name, _ in found]


def test_commands_actions_options_and_choices_are_completed() -> None:
    assert names(["st"]) == ["story", "status"]
    assert names(["story", ""]) == ["schedule", "cancel", "bulk"]
    assert "--account" in (names(["story", "schedule", "--a"]) or [])
    assert names(["accounts", "list", "--kind", ""]) == ["all", "photoapp", "clipapp"]
    assert names(["status", "d"]) == ["draft"]
    assert names(["completion", ""]) == list(SHELLS)
    # An option's value is skipped: what follows is completed as before it.
    assert "--wait" in (names(["story", "schedule", "--account", "alice", "--w"]) or [])
    # No candidates for a free value (an account, a UUID).
    assert names(["story", "schedule", "--account", ""]) == []
    assert names(["story", "cancel", ""]) == []


def test_file_arguments_are_left_to_the_shell() -> None:
    assert names(["story", "schedule", "--html", "pa"]) is None
    assert names(["story", "bulk", "--data", ""]) is None
    assert names(["blob", "upload", ""]) is None


def test_descriptions_come_with_the_candidates(capsys: pytest.CaptureFixture[str]) -> None:
    main(["__complete", "dr"])
    assert capsys.readouterr().out.strip() == "draft\tcreate, inspect and delete drafts"
    main(["__complete", "story", "schedule", "--html", ""])
    assert capsys.readouterr().out.strip() == "__files__"


def complete_in_bash(tmp_path: Path, line: str) -> list[str]:
    """COMPREPLY of the bash script for the command line `line` (the cursor at its end)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    command = bin_dir / "storypost"
    command.write_text(f'#!/bin/sh\nexec {sys.executable} -m storypost_client.cli "$@"\n')
    command.chmod(0o755)
    (tmp_path / "storypost.bash").write_text(script("bash"))
    (tmp_path / "rows.csv").write_text("a\n")
    words = line.split(" ")
    program = (
        f"source {tmp_path / 'storypost.bash'}\n"
        f"COMP_WORDS=({' '.join(repr(w) for w in words)})\n"
        f"COMP_CWORD={len(words) - 1}\n"
        "_storypost\n"
        'printf "%s\\n" "${COMPREPLY[@]}"\n'
    )
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"}
    ran = subprocess.run(
        ["bash", "--norc", "-c", program],
        capture_output=True,
        text=True,
        check=True,
        cwd=tmp_path,
        env=env,
        timeout=60,
    )
    return [line for line in ran.stdout.splitlines() if line]


@pytest.mark.skipif(shutil.which("bash") is None, reason="no bash here")
def test_the_bash_script_completes_in_bash(tmp_path: Path) -> None:
    assert complete_in_bash(tmp_path, "storypost dr") == ["draft"]
    assert complete_in_bash(tmp_path, "storypost story schedule --acc") == ["--account"]
    assert complete_in_bash(tmp_path, "storypost story bulk --data ro") == ["rows.csv"]


def test_install_writes_the_script_where_the_shell_loads_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("XDG_DATA_HOME", raising=False)
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    monkeypatch.delenv("BASH_COMPLETION_USER_DIR", raising=False)
    for shell in SHELLS:
        main(["completion", shell, "--install"])
        path = install_path(shell, os.environ)
        assert path.read_text() == script(shell)
        assert f"installed {path}" in capsys.readouterr().out
    assert install_path("bash", os.environ) == (
        tmp_path / ".local/share/bash-completion/completions/storypost"
    )
    assert install_path("fish", os.environ) == tmp_path / ".config/fish/completions/storypost.fish"


def test_completion_prints_the_script(capsys: pytest.CaptureFixture[str]) -> None:
    main(["completion", "zsh"])
    assert capsys.readouterr().out.startswith("#compdef storypost")

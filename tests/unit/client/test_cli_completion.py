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


def shell_run(tmp_path: Path, shell: list[str], program: str) -> list[str]:
    """Runs `program` in `shell` in tmp_path (which has rows.csv), with a `storypost` on PATH
    that runs this checkout's caller CLI; the lines it printed."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    command = bin_dir / "storypost"
    command.write_text(f'#!/bin/sh\nexec {sys.executable} -m storypost_client.cli "$@"\n')
    command.chmod(0o755)
    (tmp_path / "rows.csv").write_text("a\n")
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"}
    ran = subprocess.run(
        [*shell, program],
        capture_output=True,
        text=True,
        check=True,
        cwd=tmp_path,
        env=env,
        timeout=60,
    )
    return [line for line in ran.stdout.splitlines() if line]


def with_script(tmp_path: Path, shell: str) -> Path:
    path = tmp_path / f"storypost.{shell}"
    path.write_text(script(shell))
    return path


def complete_in_bash(tmp_path: Path, line: str) -> list[str]:
    """COMPREPLY of the bash script for the command line `line` (the cursor at its end)."""
    words = line.split(" ")
    program = (
        f"source {with_script(tmp_path, 'bash')}\n"
        f"COMP_WORDS=({' '.join(repr(w) for w in words)})\n"
        f"COMP_CWORD={len(words) - 1}\n"
        "_storypost\n"
        'printf "%s\\n" "${COMPREPLY[@]}"\n'
    )
    return shell_run(tmp_path, ["bash", "--norc", "-c"], program)


def complete_in_zsh(tmp_path: Path, line: str) -> list[str]:
    """What the zsh script offers for `line`, zsh's completion system stubbed: `_describe`
    prints its `name:description` pairs, `_files` prints __FILES__."""
    words = line.split(" ")
    program = (
        "compdef() { :; }\n"
        '_describe() { print -rl -- "${(@P)${@[-1]}}"; }\n'
        "_files() { print -r -- __FILES__; }\n"
        f"source {with_script(tmp_path, 'zsh')}\n"
        f"words=({' '.join(repr(w) for w in words)}); CURRENT={len(words)}\n"
        "_storypost\n"
    )
    return shell_run(tmp_path, ["zsh", "-f", "-c"], program)


def complete_in_fish(tmp_path: Path, line: str) -> list[str]:
    program = f"source {with_script(tmp_path, 'fish')}; complete -C {line!r}"
    return shell_run(tmp_path, ["fish", "--no-config", "-c"], program)


def needs(shell: str) -> pytest.MarkDecorator:
    return pytest.mark.skipif(shutil.which(shell) is None, reason=f"no {shell} here")


@needs("bash")
def test_the_bash_script_completes_in_bash(tmp_path: Path) -> None:
    assert complete_in_bash(tmp_path, "storypost dr") == ["draft"]
    assert complete_in_bash(tmp_path, "storypost story schedule --acc") == ["--account"]
    assert complete_in_bash(tmp_path, "storypost story bulk --data ro") == ["rows.csv"]


@needs("zsh")
def test_the_zsh_script_completes_in_zsh(tmp_path: Path) -> None:
    assert complete_in_zsh(tmp_path, "storypost dr") == ["draft:create, inspect and delete drafts"]
    assert complete_in_zsh(tmp_path, "storypost story bulk --data ro") == ["__FILES__"]


@needs("fish")
def test_the_fish_script_completes_in_fish(tmp_path: Path) -> None:
    assert complete_in_fish(tmp_path, "storypost dr") == [
        "draft\tcreate, inspect and delete drafts"
    ]
    assert complete_in_fish(tmp_path, "storypost story bulk --data ro") == ["rows.csv"]


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

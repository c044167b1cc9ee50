"""Runs `storypost` in-process for the CLI tests (no test cases of its own)."""

from __future__ import annotations

import pytest

from storypost_cli.__main__ import main


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """Runs `storypost ARGV` in-process: (exit code, stdout, stderr)."""
    try:
        main(argv)
        code: object = 0
    except SystemExit as exited:
        code = exited.code
    out, err = capsys.readouterr()
    return (code if isinstance(code, int) else 1), out, err

"""The spinner of the render calls: the elapsed time on a terminal's stderr while the call is
in flight (also without --wait), nothing when stderr is not a terminal."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

import pytest

from storypost_client.cli.app import main
from tests.unit.client.support import Reply, scripted

TOKEN = "sp_spinner-test-token"
UUID = "bc604f8c-650a-46ed-8726-def3cdf9d0c0"
# Long enough that the spinner, redrawn ten times a second, shows a second elapsed.
RENDER_SECONDS = 1.3


class Terminal(io.StringIO):
    """A stderr that says it is a terminal."""

    def isatty(self) -> bool:
        return True


def schedule(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[int, str, str]:
    """`story schedule` against a server that renders for RENDER_SECONDS: (code, out, err)."""
    page = tmp_path / "page.html"
    page.write_text("<photoapp-story><h1>Hi</h1></photoapp-story>")
    answer = {"storyPostUuid": UUID, "status": "scheduled", "previewUrl": "https://x.test/p"}
    with scripted([Reply(200, answer, delay=RENDER_SECONDS)]) as server:
        config = tmp_path / "config.json"
        config.write_text(json.dumps({"baseUrl": server.base_url, "token": TOKEN}))
        config.chmod(0o600)
        monkeypatch.setenv("STORYPOST_CONFIG", str(config))
        out = io.StringIO()
        monkeypatch.setattr(sys, "stdout", out)
        try:
            main(["story", "schedule", "--html", str(page), "--account", "alice"])
            code: object = 0
        except SystemExit as exited:
            code = exited.code
    err = sys.stderr.getvalue() if isinstance(sys.stderr, io.StringIO) else ""
    return (code if isinstance(code, int) else 1), out.getvalue(), err


def test_a_render_call_shows_the_elapsed_time_on_a_terminal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TERM", "xterm-256color")
    for name in ("NO_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE", "CI"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(sys, "stderr", Terminal())
    code, out, err = schedule(tmp_path, monkeypatch)
    assert code == 0, err
    assert "schedule-photoapp-story: rendering the page" in err
    assert "0:00:01" in err  # the elapsed time, while the call was in flight
    assert UUID in out and "0:00" not in out  # stdout stays the answer alone


def test_nothing_is_shown_when_stderr_is_not_a_terminal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "stderr", io.StringIO())
    code, out, err = schedule(tmp_path, monkeypatch)
    assert code == 0, err
    assert err == ""
    assert UUID in out

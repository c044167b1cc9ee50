"""Printing answers (JSON for scripts, plain lines and tables for people) and failures."""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, NoReturn

if TYPE_CHECKING:
    from storypost_client.errors import ApiError, StorypostError

# Wide enough that URLs and UUIDs in tables are not wrapped when output goes to a pipe.
PIPE_WIDTH = 200


def as_json(value: Any) -> None:
    print(json.dumps(value, indent=2, ensure_ascii=False))


def result(value: Mapping[str, Any], *, json_output: bool) -> None:
    """One answer: the JSON object, or aligned `key  value` lines."""
    if json_output:
        as_json(value)
        return
    width = max((len(key) for key in value), default=0)
    for key, item in value.items():
        lines = _text(item)
        print(f"{key:<{width}}  {lines[0]}".rstrip())
        for line in lines[1:]:
            print(f"{'':<{width}}  {line}")


def table(
    answer: Mapping[str, Any],
    rows: Sequence[Mapping[str, Any]],
    columns: Sequence[tuple[str, str]],
    *,
    json_output: bool,
    empty: str,
) -> None:
    """A list answer: the whole JSON object, or a table of `rows` with (title, key) columns."""
    if json_output:
        as_json(answer)
        return
    if not rows:
        print(empty)
        return
    from rich.console import Console
    from rich.table import Table

    console = Console(width=None if sys.stdout.isatty() else PIPE_WIDTH)
    grid = Table(box=None, header_style="bold", pad_edge=False)
    for title, _ in columns:
        grid.add_column(title, overflow="fold")
    for row in rows:
        grid.add_row(*(" ".join(_text(row.get(key))) for _, key in columns))
    console.print(grid)


def message(text: str) -> None:
    print(f"storypost: {text}", file=sys.stderr)


def fail(text: str, code: int) -> NoReturn:
    message(text)
    raise SystemExit(code)


def api_error(error: ApiError, *, json_output: bool) -> None:
    """An error answer: its message (and validation explanations) on stderr; with --json,
    also the error body on stdout."""
    from storypost_client.errors import BadRequestError

    message(f"{error.procedure}: {error.error_message} (HTTP {error.status})")
    if isinstance(error, BadRequestError) and error.validation_error_explanation:
        for key, explanations in error.validation_error_explanation.items():
            print(f"  {key}: {'; '.join(explanations)}", file=sys.stderr)
    if error.retry_after is not None and error.status in (429, 503):
        print(f"  retry after {error.retry_after:g} s", file=sys.stderr)
    if json_output:
        as_json({"httpStatus": error.status, **error.body})


def retrying(attempt: int, delay: float, error: StorypostError) -> None:
    """The client's retry hook: one line per retry, so a slow command explains itself."""
    from storypost_client.errors import ApiError

    reason = f"HTTP {error.status}" if isinstance(error, ApiError) else "no answer"
    message(f"{reason} ({_short(error)}); attempt {attempt + 1} in {delay:.1f} s")


def _short(error: StorypostError) -> str:
    from storypost_client.errors import ApiError

    return error.error_message if isinstance(error, ApiError) else str(error)


def _text(value: Any) -> list[str]:
    if value is None:
        return [""]
    if isinstance(value, bool):
        return ["true" if value else "false"]
    if isinstance(value, list):
        if all(isinstance(item, str) for item in value):
            return [str(item) for item in value] or [""]
        return [json.dumps(item, ensure_ascii=False) for item in value] or [""]
    if isinstance(value, dict):
        return [json.dumps(value, ensure_ascii=False)]
    return [str(value)]

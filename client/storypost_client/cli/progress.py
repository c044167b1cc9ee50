"""`--progress MODE` of the commands that report progress: none, a rich bar, or plain lines."""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Callable, Iterator
from typing import TypeVar

MODES = ("auto", "bar", "plain", "none")

# What a command calls as its work goes on (an upload's bytes, a bulk run's rows).
Report = TypeVar("Report")


def add_progress_option(parser: argparse.ArgumentParser, plain: str) -> None:
    """`--progress`; `plain` says what is printed when stderr is not a terminal."""
    parser.add_argument(
        "--progress",
        choices=MODES,
        default="auto",
        help=f"auto: a bar on a terminal, {plain} otherwise (on stderr)",
    )


@contextlib.contextmanager
def reporter(
    mode: str,
    bar: Callable[[], contextlib.AbstractContextManager[Report]],
    plain: Callable[[], Report],
) -> Iterator[Report | None]:
    """The reporter `mode` asks for: none, the `bar` (a terminal's, shown while the block
    runs), else `plain` lines (auto picks the bar when stderr is a terminal)."""
    if mode == "none":
        yield None
    elif mode == "bar" or (mode == "auto" and sys.stderr.isatty()):
        with bar() as report:
            yield report
    else:
        yield plain()

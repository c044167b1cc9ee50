"""A spinner and the elapsed time on stderr while a call renders a page (up to ~2 minutes).

Only on a terminal: when stderr is redirected (scripts, CI logs) nothing is shown.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterator

# Changes the text beside the spinner (while --wait polls: the current status).
Relabel = Callable[[str], None]


def _unchanged(_text: str) -> None:
    return None


@contextlib.contextmanager
def spinning(text: str, *, enabled: bool = True) -> Iterator[Relabel]:
    """`⠹ schedule-photoapp-story: rendering 0:00:12` on stderr while the block runs; the
    line is removed at the end."""
    if not enabled or not sys.stderr.isatty():
        yield _unchanged
        return
    from rich.console import Console
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    progress = Progress(
        SpinnerColumn(),
        TextColumn("{task.description}"),
        TimeElapsedColumn(),
        console=Console(stderr=True),
        transient=True,
    )
    task = progress.add_task(text, total=None)

    def relabel(new_text: str) -> None:
        progress.update(task, description=new_text)

    with progress:
        yield relabel


def rendering(
    procedure: str, *, enabled: bool = True
) -> contextlib.AbstractContextManager[Relabel]:
    """The spinner of a call to a render procedure (create-draft, schedule-…)."""
    return spinning(f"{procedure}: rendering the page", enabled=enabled)

"""`storypost blob upload FILE`: a temp blob with a progress bar; prints its `url`."""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from storypost_client.cli import render
from storypost_client.cli.parsing import Subparsers, example
from storypost_client.cli.progress import add_progress_option, reporter
from storypost_client.cli.session import add_command, command_group

if TYPE_CHECKING:
    from storypost_client import StorypostClient
    from storypost_client.uploads import Progress, UploadMethod

# Plain progress lines (no terminal) every this many percent.
PLAIN_STEP_PERCENT = 10


def upload(client: StorypostClient, args: argparse.Namespace) -> int:
    path = Path(args.file)
    method: UploadMethod = args.method
    with progress_reporter(args.progress, path.name) as report:
        answer = client.upload_file(
            path,
            args.content_type,
            progress=report,
            temp_blob_uuid=args.uuid,
            method=method,
        )
    render.result(dict(answer), json_output=args.json)
    return 0


def progress_reporter(mode: str, name: str) -> contextlib.AbstractContextManager[Progress | None]:
    """A rich progress bar on a terminal, else plain lines on stderr (or nothing)."""
    return reporter(mode, lambda: _rich_bar(name), lambda: PlainProgress(name))


@contextlib.contextmanager
def _rich_bar(name: str) -> Iterator[Progress]:
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        DownloadColumn,
        Progress,
        TextColumn,
        TimeRemainingColumn,
        TransferSpeedColumn,
    )

    bar = Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        DownloadColumn(),
        TransferSpeedColumn(),
        TimeRemainingColumn(),
        console=Console(stderr=True),
    )
    task = bar.add_task(name, total=None)

    def report(sent: int, total: int) -> None:
        bar.update(task, completed=sent, total=total)

    with bar:
        yield report


class PlainProgress:
    """`upload NAME: 40% (4194304 of 10485760 bytes)` lines, one per 10 percent."""

    def __init__(self, name: str) -> None:
        self._name = name
        self._shown = -1

    def __call__(self, sent: int, total: int) -> None:
        percent = 100 * sent // total if total else 100
        step = percent - percent % PLAIN_STEP_PERCENT
        if sent == 0 or step < self._shown:
            # A (re)start: the fallback upload begins again from zero.
            self._shown = -1
        if step > self._shown:
            self._shown = step
            print(
                f"upload {self._name}: {step}% ({sent} of {total} bytes)",
                file=sys.stderr,
                flush=True,
            )

    def __repr__(self) -> str:
        return f"PlainProgress({self._name!r})"


def register(commands: Subparsers) -> None:
    upload_example = example(
        "storypost blob upload clip.mp4", "storypost blob upload photo.jpg --json"
    )
    actions = command_group(
        commands, "blob", help="temporary media blobs (use their url as src)", epilog=upload_example
    )
    p = add_command(
        actions,
        "upload",
        upload,
        help="upload a media file as a temp blob",
        epilog=upload_example,
    )
    p.add_argument("file", metavar="FILE")
    p.add_argument("--content-type", help="media type (default: guessed from the file name)")
    p.add_argument("--uuid", help="the blob's UUID (default: a new one)")
    p.add_argument(
        "--method",
        choices=("auto", "presigned", "inline"),
        default="auto",
        help="auto: presigned PUT, inline (base64, up to 30 MB) when the store is unreachable",
    )
    add_progress_option(p, "plain lines")

"""`storypost story bulk` and `storypost draft bulk`: one story or draft per row of a data file.

The work is the SDK's (`storypost_client.bulk_plan` and `bulk_run`): this module reads the
files, shows progress, writes the results file and prints the summary.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from storypost_client.cli import inputs, render
from storypost_client.cli.exits import EXIT_ROWS_FAILED
from storypost_client.cli.parsing import Subparsers, example, subcommands
from storypost_client.cli.progress import add_progress_option, reporter
from storypost_client.cli.session import add_command

if TYPE_CHECKING:
    from storypost_client import StorypostClient
    from storypost_client.bulk_run import BulkProgress, BulkReport, RowResult, RunFields


def story_bulk(client: StorypostClient, args: argparse.Namespace) -> int:
    def send(template: str, rows: list[dict[str, Any]], run: RunFields) -> BulkReport:
        return client.bulk_schedule_stories(
            template,
            rows,
            photoapp_username=args.account,
            at_column=args.at,
            start=args.start,
            every=args.every,
            queue_name=args.queue,
            queue_column=args.queue_column,
            **inputs.story_fields(args),
            **run,
        )

    return _bulk(args, "story bulk", send)


def draft_bulk(client: StorypostClient, args: argparse.Namespace) -> int:
    def send(template: str, rows: list[dict[str, Any]], run: RunFields) -> BulkReport:
        return client.bulk_create_drafts(
            template, rows, folder_name=args.folder, name=args.name, **run
        )

    return _bulk(args, "draft bulk", send)


def _bulk(
    args: argparse.Namespace,
    what: str,
    send: Callable[[str, list[dict[str, Any]], RunFields], BulkReport],
) -> int:
    """Reads the files, sends the rows with progress shown, writes the results file."""
    template, rows, results, previous = _files(args)
    with progress_reporter(args.progress, what) as progress:
        run: RunFields = {
            "skip_bad_rows": args.skip_bad_rows,
            "concurrency": args.concurrency,
            "progress": progress,
            "previous": previous,
            "preview": args.preview,
        }
        report = send(template, rows, run)
    return _finish(report, results, json_output=args.json)


def default_results_path(data: Path) -> Path:
    """`rows.csv` → `rows.results.csv`, beside the data and in its format."""
    return data.with_name(f"{data.stem}.results{data.suffix}")


def _files(args: argparse.Namespace) -> tuple[str, list[dict[str, Any]], Path, list[RowResult]]:
    from storypost_client.bulk_files import read_results, read_rows

    template = inputs.read_text(args.template)
    data = Path(args.data)
    rows = read_rows(data)
    results = Path(args.results) if args.results else default_results_path(data)
    if results.resolve() in (data.resolve(), Path(args.template).resolve()):
        raise ValueError(f"--results {results} would overwrite the data or the template")
    previous = [] if args.fresh else read_results(results)
    return template, rows, results, previous


def _finish(report: BulkReport, results: Path, *, json_output: bool) -> int:
    from storypost_client.bulk_files import result_record, write_results
    from storypost_client.bulk_run import FAILED

    write_results(results, report.results)
    counts = report.counts()
    if json_output:
        records = [result_record(result) for result in report.results]
        render.as_json({"counts": counts, "resultsFile": str(results), "results": records})
    else:
        summary = [{"status": status, "rows": str(count)} for status, count in counts.items()]
        summary.append({"status": "total", "rows": str(len(report.results))})
        render.table(
            {}, summary, [("status", "status"), ("rows", "rows")], json_output=False, empty=""
        )
        for result in report.results:
            if result.error:
                print(f"row {result.row}: {result.status}: {result.error}")
        print(f"results: {results}")
    return EXIT_ROWS_FAILED if FAILED in counts else 0


def progress_reporter(
    mode: str, what: str
) -> contextlib.AbstractContextManager[BulkProgress | None]:
    """A rich progress bar on a terminal, else one plain line a row on stderr (or nothing)."""
    return reporter(mode, lambda: _rich_bar(what), lambda: plain_progress(what))


def plain_progress(what: str) -> BulkProgress:
    """`story bulk [3/50] row 3: scheduled 5f0c…` lines on stderr."""

    def report(result: RowResult, done: int, total: int) -> None:
        print(f"{what} [{done}/{total}] {_line(result)}", file=sys.stderr, flush=True)

    return report


def _line(result: RowResult) -> str:
    text = f"row {result.row}: {result.status}"
    if result.uuid:
        text += f" {result.uuid}"
    return f"{text}: {result.error}" if result.error else text


@contextlib.contextmanager
def _rich_bar(what: str) -> Iterator[BulkProgress]:
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    bar = Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        TextColumn("{task.fields[last]}"),
        console=Console(stderr=True),
    )
    task = bar.add_task(what, total=None, last="")

    def report(result: RowResult, done: int, total: int) -> None:
        bar.update(task, completed=done, total=total, last=_line(result))

    with bar:
        yield report


def _common_bulk_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--template", required=True, metavar="FILE", help="the page, with {{column}} placeholders"
    )
    parser.add_argument(
        "--data", required=True, metavar="FILE", help="the rows: .csv (a header line) or .json"
    )
    parser.add_argument(
        "--results",
        metavar="FILE",
        help="results file, .csv or .json (default: DATA's name with .results, e.g. "
        "rows.results.csv); rows it lists as done are not sent again",
    )
    parser.add_argument(
        "--fresh",
        action="store_true",
        help="send every row, even those the results file lists as done (the API makes "
        "nothing twice)",
    )
    parser.add_argument(
        "--skip-bad-rows",
        action="store_true",
        help="send the good rows when some are bad (default: send nothing)",
    )
    parser.add_argument(
        "--concurrency", type=int, default=4, metavar="N", help="rows in flight (default 4)"
    )
    parser.add_argument(
        "--no-preview",
        dest="preview",
        action="store_false",
        help="do not poll each row's status for its previewUrl",
    )
    add_progress_option(parser, "a line per row")


def register(commands: Subparsers) -> None:
    story = add_command(
        subcommands(commands, "story"),
        "bulk",
        story_bulk,
        help="one story per row of a data file",
        description="Schedules one story per row: the template's {{column}} placeholders "
        "filled with the row's values (HTML-escaped). Each row's UUID comes from the "
        "template, the row, its date (or queue) and the account: running it again makes "
        "nothing twice.",
        epilog=example(
            "storypost story bulk --template page.html --data rows.csv --account alice "
            "--start 2026-12-01T09:00:00Z --every 1d",
            "storypost story bulk --template page.html --data rows.csv --account alice "
            "--queue default",
        ),
    )
    _common_bulk_options(story)
    story.add_argument("--account", required=True, metavar="USERNAME", help="photoapp username")
    when = story.add_mutually_exclusive_group(required=True)
    when.add_argument("--at", metavar="COLUMN", help="the column holding each row's date")
    when.add_argument(
        "--start", metavar="ISO", help="the first row's date (with --every), e.g. 2026-07-01T09:00Z"
    )
    when.add_argument(
        "--queue",
        metavar="NAME",
        help="each row takes the next free slot of this queue of the account (queue list)",
    )
    when.add_argument(
        "--queue-column", metavar="COLUMN", help="the column holding each row's queue name"
    )
    story.add_argument("--every", metavar="DURATION", help="between rows: 1d, 6h, 1h30m, 90s")
    inputs.add_story_options(story, "them")

    draft = add_command(
        subcommands(commands, "draft"),
        "bulk",
        draft_bulk,
        help="one draft per row of a data file",
        description="Creates one draft per row: the template's {{column}} placeholders filled "
        "with the row's values (HTML-escaped); running it again makes nothing twice.",
        epilog=example(
            "storypost draft bulk --template page.html --data rows.json "
            "--folder 'Summer sale' --name '{{title}}'"
        ),
    )
    _common_bulk_options(draft)
    draft.add_argument("--folder", metavar="NAME", help="the gallery folder (created if missing)")
    draft.add_argument("--name", metavar="TEMPLATE", help="each draft's name, e.g. '{{title}}'")

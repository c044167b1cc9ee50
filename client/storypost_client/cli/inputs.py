"""Options several caller commands share: the page (--html/--url), --at, --wait, --option,
a story's own options."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict

from storypost_client.cli import render
from storypost_client.cli.exits import EXIT_NOT_PUBLISHED
from storypost_client.cli.spinner import spinning

if TYPE_CHECKING:
    from datetime import datetime

    from storypost_client import StorypostClient
    from storypost_client.polling import KindName

DEFAULT_WAIT_SECONDS = 900.0
# The keys of a schedule answer that `finish` adds to the final status it prints.
_KEPT = ("warnings", "seriesUuid", "date")


def add_page_options(parser: argparse.ArgumentParser) -> None:
    page = parser.add_mutually_exclusive_group(required=True)
    page.add_argument("--html", metavar="FILE", help="the page to render, from a file (- = stdin)")
    page.add_argument("--url", help="the http(s) address of the page to render")


def page(args: argparse.Namespace) -> tuple[str | None, str | None]:
    """(html, url) for the render procedures: one of them is None."""
    if args.url is not None:
        return None, args.url
    return read_text(args.html), None


def read_text(name: str) -> str:
    text = sys.stdin.read() if name == "-" else Path(name).read_text(encoding="utf-8")
    if not text.strip():
        raise ValueError(f"{'standard input' if name == '-' else name} is empty")
    return text


class StoryFields(TypedDict):
    """A story's own fields (of schedule-photoapp-story and each row of a story bulk run)."""

    ai_generated: bool | None
    share_to_linknet: bool | None
    linknet_destination_id: str | None


def add_story_options(parser: argparse.ArgumentParser, them: str) -> None:
    """A story's own options, as `story_fields` reads them; `them` is what they mark ("it",
    one story, or "them", a bulk run's)."""
    parser.add_argument("--ai-generated", action="store_true", help=f"mark {them} AI-generated")
    parser.add_argument(
        "--share-to-linknet", action="store_true", help="cross-post to a linknet destination"
    )
    parser.add_argument("--linknet-destination", metavar="ID", help="linknetDestinationId")


def story_fields(args: argparse.Namespace) -> StoryFields:
    """The fields of `add_story_options`' options; a flag not given is left to the API."""
    return StoryFields(
        ai_generated=args.ai_generated or None,
        share_to_linknet=args.share_to_linknet or None,
        linknet_destination_id=args.linknet_destination,
    )


def add_date_option(parser: argparse.ArgumentParser, what: str) -> None:
    parser.add_argument(
        "--at",
        type=str,
        metavar="ISO",
        help=f"when to {what}, an ISO 8601 date-time with offset, e.g. 2026-07-01T09:30:00Z "
        "(default: as soon as possible)",
    )


def parse_at(text: str | None, option: str = "--at") -> datetime | None:
    """--at (or another date `option`): an ISO 8601 date-time with an offset (a time without a
    zone is ambiguous); ValueError names the option."""
    from storypost_client.isodate import parse_iso

    if text is None:
        return None
    try:
        when = parse_iso(text)
    except ValueError:
        raise ValueError(f"{option} {text!r}: not an ISO 8601 date-time") from None
    if when.tzinfo is None:
        raise ValueError(f"{option} {text!r}: no UTC offset; add Z or +HH:MM")
    return when


def utc_at(text: str | None, option: str) -> str | None:
    """A date option (`parse_at`) as the API's ISO 8601 date-time in UTC (`…Z`)."""
    from datetime import timezone

    when = parse_at(text, option)
    if when is None:
        return None
    return when.astimezone(timezone.utc).isoformat().replace("+00:00", "Z")


def add_wait_options(parser: argparse.ArgumentParser, final: str) -> None:
    parser.add_argument(
        "--wait", action="store_true", help=f"poll with backoff until it is {final}"
    )
    parser.add_argument(
        "--wait-timeout",
        type=float,
        default=DEFAULT_WAIT_SECONDS,
        metavar="SECONDS",
        help="give up waiting after this long, counted from --at or the queue's slot when "
        "given (default 900)",
    )


def parse_options(pairs: list[str] | None, raw: str | None) -> dict[str, Any] | None:
    """`--options JSON` and `--option KEY=VALUE` (VALUE is JSON when it parses, else text)."""
    options: dict[str, Any] = {}
    if raw is not None:
        loaded = json.loads(raw)
        if not isinstance(loaded, dict):
            raise ValueError("--options must be a JSON object")
        options.update(loaded)
    for pair in pairs or []:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise ValueError(f"--option {pair!r}: expected KEY=VALUE")
        try:
            options[key] = json.loads(value)
        except ValueError:
            options[key] = value
    return options if options or raw is not None else None


def finish(
    client: StorypostClient,
    args: argparse.Namespace,
    kind: KindName,
    uuid: str,
    answer: dict[str, Any],
) -> int:
    """Prints the answer, or with --wait polls to a final state and prints that."""
    from datetime import datetime, timezone

    from storypost_client.polling import KINDS

    if not getattr(args, "wait", False):
        render.result(answer, json_output=args.json)
        return 0
    seconds = args.wait_timeout
    at = parse_at(getattr(args, "at", None))
    if at is None and getattr(args, "queue", None) and isinstance(answer.get("date"), str):
        at = parse_at(answer["date"], "the queue's date")
    if at is not None:
        seconds += max(0.0, (at - datetime.now(timezone.utc)).total_seconds())
    last: list[str] = []
    with spinning(f"{kind} {uuid}: waiting") as relabel:

        def on_status(status: Any) -> None:
            current = str(status.get("status"))
            if last != [current]:
                render.message(f"{kind} {uuid}: {current}")
                relabel(f"{kind} {uuid}: {current}")
                last[:] = [current]

        final = client.wait_for(kind, uuid, timeout=seconds, on_status=on_status)
    # What only the schedule answer tells: warnings, the series, the date a queue gave.
    final = {**final, **{key: answer[key] for key in _KEPT if key in answer}}
    render.result(final, json_output=args.json)
    return 0 if final.get("status") == KINDS[kind].success_state else EXIT_NOT_PUBLISHED

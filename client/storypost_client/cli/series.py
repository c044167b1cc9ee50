"""`--queue` and `--repeat` of the schedule commands: a post dated by the next free slot of a
queue (the API's `queueName`), and a series of posts (its `repeat` object).

`--repeat EVERY` makes the post the first of a series: EVERY is an ISO 8601 duration in whole
days or weeks (`P1D` … `P52W`), or `queue` with `--queue` (each post takes the queue's next
free slot). The series ends after `--count N` posts (2 to 365, this one included) or at
`--until ISO`. `--variant TEXT` (repeatable) gives the posts their text in turn (the kind's
main text field); `--variant-json OBJECT` gives several text fields at once. What can be
checked here is checked before any request; the rest is the API's.
"""

from __future__ import annotations

import argparse
import json
import re
from collections.abc import Sequence
from typing import Any, TypedDict

from storypost_client.cli import inputs

QUEUE_EVERY = "queue"  # --repeat queue: each post of the series takes the queue's next slot
_EVERY = re.compile(r"P([1-9][0-9]*)([DW])")
MAX_EVERY_DAYS = 52 * 7  # P52W
COUNTS = range(2, 366)
MAX_VARIANTS = 10


class _Variant(argparse.Action):
    """--variant and --variant-json append (option, value) to one list, in the order given."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        given = [*(getattr(namespace, self.dest, None) or []), (option_string, values)]
        setattr(namespace, self.dest, given)


def add_options(parser: argparse.ArgumentParser, text_fields: Sequence[str]) -> None:
    """--queue, --repeat, --count, --until and, for a kind with text fields (the first is
    what --variant gives), --variant and --variant-json."""
    parser.add_argument(
        "--queue",
        metavar="NAME",
        help="take the date from the next free slot of this queue of the account "
        "(`storypost queue list`); not with --at",
    )
    parser.add_argument(
        "--repeat",
        metavar="EVERY",
        help="make it the first post of a series: every P1D…P52W (ISO 8601 days or weeks, "
        "e.g. P7D, P2W), or `queue` with --queue (each post takes the queue's next free "
        "slot); needs --count or --until",
    )
    parser.add_argument(
        "--count", type=int, metavar="N", help="--repeat: posts in the series, 2 to 365"
    )
    parser.add_argument(
        "--until", metavar="ISO", help="--repeat: no post of the series after this date-time"
    )
    if not text_fields:
        return
    parser.add_argument(
        "--variant",
        dest="variants",
        action=_Variant,
        metavar="TEXT",
        help=f"--repeat: a {text_fields[0]} for the series' posts, used in turn "
        f"(repeatable, at most {MAX_VARIANTS})",
    )
    parser.add_argument(
        "--variant-json",
        dest="variants",
        action=_Variant,
        metavar="OBJECT",
        help=f"--repeat: a variant as a JSON object of {', '.join(text_fields)} (repeatable)",
    )


class When(TypedDict):
    """The `date` (from --at, as given) or the `queue_name` (--queue) of a schedule method;
    neither: at once."""

    date: str | None
    queue_name: str | None


def when(args: argparse.Namespace) -> When:
    at = inputs.parse_at(args.at)
    if at is not None and args.queue is not None:
        raise ValueError(
            "--at and --queue cannot be used together: --queue takes the date from the "
            "queue's next free slot"
        )
    date = None if at is None else at.isoformat().replace("+00:00", "Z")
    return When(date=date, queue_name=args.queue)


def repeat(args: argparse.Namespace, text_fields: Sequence[str]) -> dict[str, Any] | None:
    """The request's `repeat` object, or None without --repeat."""
    variants = getattr(args, "variants", None) or []
    if args.repeat is None:
        given = [
            option
            for option, value in (("--count", args.count), ("--until", args.until))
            if value is not None
        ] + [option for option, _ in variants[:1]]
        if given:
            raise ValueError(f"{given[0]} goes with --repeat EVERY (a series of posts)")
        return None
    series: dict[str, Any] = {}
    every = _every(args.repeat, queued=args.queue is not None)
    if every is not None:
        series["every"] = every
    series.update(_end(args.count, args.until))
    if variants:
        if len(variants) > MAX_VARIANTS:
            raise ValueError(f"{len(variants)} variants: at most {MAX_VARIANTS}")
        series["variants"] = [_variant(option, value, text_fields) for option, value in variants]
    return series


def _every(text: str, *, queued: bool) -> str | None:
    """--repeat's duration as the API takes it; None for `queue` (with --queue)."""
    if text.strip().lower() == QUEUE_EVERY:
        if not queued:
            raise ValueError("--repeat queue needs --queue NAME (each post takes its next slot)")
        return None
    duration = text.strip().upper()
    found = _EVERY.fullmatch(duration)
    if found is None:
        raise ValueError(
            f"--repeat {text!r}: an ISO 8601 duration in whole days or weeks, P1D to P52W "
            "(e.g. P7D, P2W), or `queue` with --queue"
        )
    days = int(found.group(1)) * (7 if found.group(2) == "W" else 1)
    if days > MAX_EVERY_DAYS:
        raise ValueError(f"--repeat {text!r}: at most P52W (364 days)")
    return duration


def _end(count: int | None, until: str | None) -> dict[str, Any]:
    if (count is None) == (until is None):
        raise ValueError("--repeat needs exactly one of --count N (2 to 365) and --until ISO")
    if count is not None:
        if count not in COUNTS:
            raise ValueError(f"--count {count}: from 2 to 365 posts")
        return {"count": count}
    return {"until": inputs.utc_at(until, "--until")}


def _variant(option: str, value: str, text_fields: Sequence[str]) -> dict[str, str]:
    """One variant: --variant's text as the kind's first text field, or --variant-json's
    object of text fields."""
    if option == "--variant":
        return {text_fields[0]: value}
    try:
        loaded = json.loads(value)
    except ValueError:
        raise ValueError(f"--variant-json {value!r}: not JSON") from None
    fields = ", ".join(text_fields)
    if not isinstance(loaded, dict) or not loaded:
        raise ValueError(f"--variant-json {value!r}: a JSON object of {fields}")
    for key, text in loaded.items():
        if key not in text_fields or not isinstance(text, str):
            raise ValueError(f"--variant-json: {key!r} is not a text field here ({fields})")
    return loaded

"""`storypost posts list`, `storypost post reschedule` and `storypost queue set|list|preview|
delete`: the organization's posts of every kind a page at a time, moving a scheduled one,
and posting queues."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any, get_args

from storypost_client.cli import inputs, render
from storypost_client.cli.parsing import SAMPLE_UUID, Subparsers, example
from storypost_client.cli.session import add_command, command_group
from storypost_client.generated.types import Kind, Status

if TYPE_CHECKING:
    from storypost_client import StorypostClient

KINDS: tuple[str, ...] = get_args(Kind)
STATUSES: tuple[str, ...] = get_args(Status)
COLUMNS = [
    ("DATE", "date"),
    ("KIND", "kind"),
    ("UUID", "uuid"),
    ("STATUS", "status"),
    ("ACCOUNT", "socialAccountId"),
    ("ERROR / LINK", "note"),
]


def list_posts(client: StorypostClient, args: argparse.Namespace) -> int:
    """One page (its `nextCursor` said on stderr), or every page with --all."""
    posts: list[Any] = []
    cursor = args.cursor
    while True:
        page = client.list_posts(
            kind=args.kind,
            status=args.status,
            social_account_id=args.account,
            from_=inputs.utc_at(args.since, "--from"),
            to=inputs.utc_at(args.until, "--to"),
            series_uuid=args.series,
            limit=args.limit,
            cursor=cursor,
        )
        posts += page["posts"]
        cursor = page.get("nextCursor")
        if not (args.all and cursor):
            break
    answer: dict[str, Any] = {"posts": posts}
    if cursor:
        answer["nextCursor"] = cursor
    rows = [{**post, "note": post.get("errorMessage") or post.get("permalink")} for post in posts]
    render.table(answer, rows, COLUMNS, json_output=args.json, empty="no posts")
    if cursor and not args.json:
        render.message(f"more posts: add --cursor {cursor} (or --all for every page)")
    return 0


def reschedule(client: StorypostClient, args: argparse.Namespace) -> int:
    when = inputs.utc_at(args.at, "--at")
    assert when is not None  # --at is required
    answer = client.reschedule_post(kind=args.kind, uuid=args.uuid, date=when)
    render.result(dict(answer), json_output=args.json)
    return 0


def set_queue(client: StorypostClient, args: argparse.Namespace) -> int:
    answer = client.set_queue(
        social_account_id=args.account,
        queue_name=args.name,
        time_zone=args.tz,
        slots=_slots(args.slot),
    )
    render.result(dict(answer), json_output=args.json)
    return 0


def list_queues(client: StorypostClient, args: argparse.Namespace) -> int:
    answer = client.list_queues(social_account_id=args.account)
    rows = [
        {**queue, "slots": " ".join(f"{s['weekday'][:3]}@{s['time']}" for s in queue["slots"])}
        for queue in answer["queues"]
    ]
    columns = [
        ("ACCOUNT", "socialAccountId"),
        ("QUEUE", "queueName"),
        ("TIME ZONE", "timeZone"),
        ("SLOTS", "slots"),
    ]
    render.table(answer, rows, columns, json_output=args.json, empty="no queues")
    return 0


def preview_queue(client: StorypostClient, args: argparse.Namespace) -> int:
    answer = client.preview_queue(
        social_account_id=args.account, queue_name=args.name, count=args.count
    )
    if args.json:
        render.as_json(answer)
    else:
        print("\n".join(answer["slots"]) or "no free slots")
    return 0


def delete_queue(client: StorypostClient, args: argparse.Namespace) -> int:
    answer = client.delete_queue(social_account_id=args.account, queue_name=args.name)
    render.result(dict(answer), json_output=args.json)
    return 0


def _slots(given: list[str] | None) -> list[Any]:
    """`--slot monday=09:30,17:00` (repeatable) as the API's slots; the API checks the values."""
    slots: list[Any] = []
    for text in given or []:
        weekday, sep, times = text.partition("=")
        if not sep or not times:
            raise ValueError(f"--slot {text!r}: write WEEKDAY=HH:MM[,HH:MM…], e.g. monday=09:30")
        slots += [{"weekday": weekday.strip().lower(), "time": t.strip()} for t in times.split(",")]
    if not slots:
        raise ValueError("give at least one --slot WEEKDAY=HH:MM")
    return slots


def register(commands: Subparsers) -> None:
    list_example = example(
        "storypost posts list",
        "storypost posts list --status scheduled --from 2026-07-01T00:00:00Z --all --json",
    )
    actions = command_group(commands, "posts", help="list posts of every kind", epilog=list_example)
    p = add_command(
        actions,
        "list",
        list_posts,
        help="list the organization's posts, newest date first",
        epilog=list_example,
    )
    p.add_argument("--kind", choices=KINDS, help="only posts of this kind")
    p.add_argument("--status", choices=STATUSES, help="only posts in this status")
    p.add_argument(
        "--account", metavar="ID", help="only posts to this socialAccountId (accounts list)"
    )
    p.add_argument("--from", dest="since", metavar="ISO", help="only posts dated at or after")
    p.add_argument("--to", dest="until", metavar="ISO", help="only posts dated before")
    p.add_argument("--series", metavar="UUID", help="only posts of this series")
    p.add_argument("--limit", type=int, metavar="N", help="posts per page, 1 to 100 (default 50)")
    p.add_argument("--cursor", help="the page after the one that printed this cursor")
    p.add_argument("--all", action="store_true", help="follow the cursor through every page")

    move_example = example(f"storypost post reschedule story {SAMPLE_UUID} --at 2026-07-02T09:30Z")
    actions = command_group(
        commands, "post", help="act on one post of any kind", epilog=move_example
    )
    p = add_command(
        actions,
        "reschedule",
        reschedule,
        help="move a scheduled post to another date",
        epilog=move_example,
    )
    p.add_argument("kind", choices=KINDS)
    p.add_argument("uuid", metavar="UUID")
    p.add_argument("--at", required=True, metavar="ISO", help="the new date, with offset")
    _register_queues(commands)


def _register_queues(commands: Subparsers) -> None:
    set_example = example(
        "storypost queue set --account sa_01jz8k4q2m7d --tz Europe/Berlin "
        "--slot monday=09:30 --slot friday=09:30,17:00"
    )
    actions = command_group(
        commands, "queue", help="posting queues of connected accounts", epilog=set_example
    )
    p = add_command(actions, "set", set_queue, help="create or replace a queue", epilog=set_example)
    _queue_options(p, account_required=True)
    p.add_argument("--tz", required=True, metavar="ZONE", help="IANA time zone, e.g. Europe/Berlin")
    p.add_argument(
        "--slot",
        action="append",
        metavar="WEEKDAY=HH:MM[,HH:MM]",
        help="weekly slot(s) in the time zone (repeatable)",
    )
    p = add_command(
        actions,
        "list",
        list_queues,
        help="list queues",
        epilog=example("storypost queue list", "storypost queue list --account sa_01jz8k4q2m7d"),
    )
    p.add_argument("--account", metavar="ID", help="only this socialAccountId's queues")
    p = add_command(
        actions,
        "preview",
        preview_queue,
        help="the next free slots (UTC)",
        epilog=example("storypost queue preview --account sa_01jz8k4q2m7d --count 5"),
    )
    _queue_options(p, account_required=True)
    p.add_argument("--count", type=int, default=10, metavar="N", help="1 to 50 (default 10)")
    p = add_command(
        actions,
        "delete",
        delete_queue,
        help="delete a queue (its posts keep their dates)",
        epilog=example("storypost queue delete --account sa_01jz8k4q2m7d --name default"),
    )
    _queue_options(p, account_required=True)


def _queue_options(parser: argparse.ArgumentParser, *, account_required: bool) -> None:
    parser.add_argument(
        "--account", required=account_required, metavar="ID", help="the socialAccountId"
    )
    parser.add_argument("--name", default="default", help="the queue's name (default: default)")

"""`storypost draft create|status|delete`: renderings kept in the gallery, not posted."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from storypost_client.cli import inputs, render
from storypost_client.cli.parsing import SAMPLE_UUID, Subparsers, example
from storypost_client.cli.session import add_command, command_group
from storypost_client.cli.spinner import rendering

if TYPE_CHECKING:
    from storypost_client import StorypostClient


def create(client: StorypostClient, args: argparse.Namespace) -> int:
    html, url = inputs.page(args)
    with rendering("create-draft"):
        answer = client.create_draft(
            html=html, url=url, draft_uuid=args.uuid, name=args.name, folder_name=args.folder
        )
    return inputs.finish(client, args, "draft", answer["draftUuid"], dict(answer))


def status(client: StorypostClient, args: argparse.Namespace) -> int:
    # With --wait the first poll is the status call itself.
    answer = {} if args.wait else dict(client.status_draft(draft_uuid=args.uuid))
    return inputs.finish(client, args, "draft", args.uuid, answer)


def delete(client: StorypostClient, args: argparse.Namespace) -> int:
    render.result(dict(client.delete_draft(draft_uuid=args.uuid)), json_output=args.json)
    return 0


def register(commands: Subparsers) -> None:
    create_example = example(
        "storypost draft create --html page.html --name 'Summer sale' --folder Campaigns --wait"
    )
    actions = command_group(
        commands, "draft", help="create, inspect and delete drafts", epilog=create_example
    )

    p = add_command(
        actions, "create", create, help="render a page into a draft", epilog=create_example
    )
    inputs.add_page_options(p)
    p.add_argument("--name", help="name in the gallery (default api-story)")
    p.add_argument("--folder", help="top-level gallery folder (created if missing)")
    p.add_argument("--uuid", help="the draft's UUID (default: a new one)")
    inputs.add_wait_options(p, "ready, failed or deleted")

    p = add_command(
        actions,
        "status",
        status,
        help="status, preview and editor link",
        epilog=example(f"storypost draft status {SAMPLE_UUID} --wait"),
    )
    p.add_argument("uuid", metavar="UUID")
    inputs.add_wait_options(p, "ready, failed or deleted")

    p = add_command(
        actions,
        "delete",
        delete,
        help="delete a draft",
        epilog=example(f"storypost draft delete {SAMPLE_UUID}"),
    )
    p.add_argument("uuid", metavar="UUID")

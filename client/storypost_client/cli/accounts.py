"""`storypost accounts list` and `storypost connect-link create`."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from storypost_client.cli import render
from storypost_client.cli.parsing import Subparsers, example
from storypost_client.cli.session import add_command, command_group

if TYPE_CHECKING:
    from storypost_client import StorypostClient


def list_accounts(client: StorypostClient, args: argparse.Namespace) -> int:
    if args.kind == "photoapp":
        users = client.list_photoapp_users()
        rows = [
            {
                **user,
                "destinations": [
                    f"{d['linknetDestinationId']} ({d['linknetDestinationName']})"
                    for d in user.get("linknetDestinations", [])
                ],
            }
            for user in users["photoappUsers"]
        ]
        columns = [
            ("USERNAME", "photoappUsername"),
            ("PHOTOAPP ID", "photoappId"),
            ("LINKNET DESTINATIONS", "destinations"),
        ]
        render.table(users, rows, columns, json_output=args.json, empty="no photoapp accounts")
    elif args.kind == "clipapp":
        found = client.list_clipapp_accounts()
        columns = [("ACCOUNT ID", "clipappAccountId"), ("NAME", "clipappAccountName")]
        render.table(
            found,
            found["clipappAccounts"],
            columns,
            json_output=args.json,
            empty="no clipapp accounts",
        )
    else:
        social = client.list_social_accounts()
        rows = [_social_row(account) for account in social["socialAccounts"]]
        columns = [
            ("PLATFORM", "platform"),
            ("CONNECTION", "connection"),
            ("NAME", "displayName"),
            ("USE AS --account", "account"),
            ("POST TYPES", "postTypes"),
            ("DISCONNECTED", "disconnected"),
        ]
        render.table(social, rows, columns, json_output=args.json, empty="no connected accounts")
    return 0


def _social_row(account: Any) -> dict[str, Any]:
    # The value a schedule command takes as --account for this connection.
    account_id = (
        account.get("photoappUsername")
        or account.get("clipappAccountId")
        or account["socialAccountId"]
    )
    post_types = sorted({t["postType"] for t in account.get("postTypes", [])})
    return {**account, "account": account_id, "postTypes": ",".join(post_types) or "-"}


def create_connect_link(client: StorypostClient, args: argparse.Namespace) -> int:
    answer = client.create_connect_link(connect_link_uuid=args.uuid, description=args.description)
    render.result(dict(answer), json_output=args.json)
    return 0


def register(commands: Subparsers) -> None:
    actions = command_group(
        commands, "accounts", help="connected accounts", epilog=example("storypost accounts list")
    )
    p = add_command(
        actions,
        "list",
        list_accounts,
        help="list connected accounts",
        epilog=example("storypost accounts list", "storypost accounts list --kind photoapp --json"),
    )
    p.add_argument(
        "--kind",
        choices=("all", "photoapp", "clipapp"),
        default="all",
        help="all: every platform (list-social-accounts); photoapp / clipapp: their own lists",
    )

    connect_example = example("storypost connect-link create --description 'the shop team'")
    actions = command_group(
        commands,
        "connect-link",
        help="links that let account owners connect",
        epilog=connect_example,
    )
    p = add_command(
        actions,
        "create",
        create_connect_link,
        help="create a shareable connect link",
        epilog=connect_example,
    )
    p.add_argument("--description", help="a note shown in the app (at most 500 characters)")
    p.add_argument("--uuid", help="the link's UUID (default: a new one)")

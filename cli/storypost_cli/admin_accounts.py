"""`storypost admin …` for connected accounts and credits: set-credits, credits, list-accounts,
disconnect-account, delete-account."""

from __future__ import annotations

import argparse

from storypost.account.v1 import account_pb2 as pb
from storypost_cli.admin import AdminCommands, Stub
from storypost_cli.config import CliSettings
from storypost_cli.output import print_json
from storypost_cli.parsers import add_org, subcommand


def set_credits(args: argparse.Namespace, settings: CliSettings, accounts: Stub) -> None:
    reply = accounts.SetCredits(
        pb.SetCreditsRequest(organization_id=args.org, credits=args.credits)
    )
    print_json({"organizationId": reply.organization_id, "credits": reply.balance})


def show_credits(args: argparse.Namespace, settings: CliSettings, accounts: Stub) -> None:
    reply = accounts.GetCredits(pb.GetCreditsRequest(organization_id=args.org))
    print_json({"organizationId": reply.organization_id, "credits": reply.balance})


def list_accounts(args: argparse.Namespace, settings: CliSettings, accounts: Stub) -> None:
    reply = accounts.ListConnectedAccounts(
        pb.ListConnectedAccountsRequest(organization_id=args.org, platform=args.platform or "")
    )
    print_json([_brief(a) for a in reply.accounts])


def _brief(account: pb.ConnectedAccount) -> dict[str, object]:
    return {
        "socialAccountId": account.social_account_id,
        "platform": account.platform,
        "connection": "direct" if account.connection == pb.CONNECTION_DIRECT else "social",
        "platformAccountId": account.platform_account_id,
        "username": account.username,
        "displayName": account.display_name,
        "disconnected": account.disconnected,
    }


def _ref(value: str) -> pb.AccountRef:
    return pb.AccountRef(social_account_id=value)


def disconnect_account(args: argparse.Namespace, settings: CliSettings, accounts: Stub) -> None:
    reply = accounts.MarkAccountDisconnected(
        pb.MarkAccountDisconnectedRequest(
            organization_id=args.org, account=_ref(args.account), reason=args.reason
        )
    )
    print_json(_brief(reply))


def delete_account(args: argparse.Namespace, settings: CliSettings, accounts: Stub) -> None:
    reply = accounts.DeleteConnectedAccount(
        pb.GetConnectedAccountRequest(organization_id=args.org, account=_ref(args.account))
    )
    print_json({**_brief(reply), "deleted": True})


def register(commands: AdminCommands) -> None:
    p = subcommand(
        commands,
        "set-credits",
        set_credits,
        "set an organization's credit balance",
        "storypost admin set-credits --org org_1f2e3d --credits 500",
    )
    add_org(p)
    p.add_argument("--credits", required=True, type=int, help="the new balance")

    p = subcommand(
        commands,
        "credits",
        show_credits,
        "show an organization's credit balance",
        "storypost admin credits --org org_1f2e3d",
    )
    add_org(p)

    p = subcommand(
        commands,
        "list-accounts",
        list_accounts,
        "list an organization's connected accounts",
        "storypost admin list-accounts --org org_1f2e3d --platform PHOTOAPP",
    )
    add_org(p)
    p.add_argument("--platform", help="only this platform, e.g. PHOTOAPP")

    p = subcommand(
        commands,
        "disconnect-account",
        disconnect_account,
        "mark a connected account disconnected",
        "storypost admin disconnect-account --org org_1f2e3d --account sa_123 "
        "--reason 'left the team'",
    )
    _add_account(p)
    p.add_argument("--reason", default="disconnected by an administrator")

    p = subcommand(
        commands,
        "delete-account",
        delete_account,
        "delete a connected account (soft delete)",
        "storypost admin delete-account --org org_1f2e3d --account sa_123",
    )
    _add_account(p)


def _add_account(parser: argparse.ArgumentParser) -> None:
    """The options naming one connected account, as `_ref` reads them."""
    add_org(parser)
    parser.add_argument("--account", required=True, help="socialAccountId (sa_…)")

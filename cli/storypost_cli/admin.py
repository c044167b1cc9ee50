"""`storypost admin …`: organizations, API tokens and users, straight over gRPC."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable

import grpc

from storypost.account.v1 import account_pb2 as pb
from storypost.account.v1 import account_pb2_grpc
from storypost_cli.config import CliSettings
from storypost_cli.output import fail, fail_rpc, print_json
from storypost_cli.parsers import add_org, command_group, subcommand
from storypost_runtime.grpc_client import sync_channel
from storypost_runtime.settings import load_settings

Stub = account_pb2_grpc.AccountServiceStub
# What an `admin` subcommand runs: its arguments, the settings and account-svc's stub.
Command = Callable[[argparse.Namespace, CliSettings, Stub], None]


def create_org(args: argparse.Namespace, settings: CliSettings, accounts: Stub) -> None:
    org = accounts.CreateOrganization(pb.CreateOrganizationRequest(name=args.name))
    _issue_token(accounts, settings, org.organization_id, "admin", show_credential=False)


def create_token(args: argparse.Namespace, settings: CliSettings, accounts: Stub) -> None:
    _issue_token(accounts, settings, args.org, args.name, show_credential=True)


def _issue_token(
    accounts: Stub, settings: CliSettings, organization_id: str, name: str, *, show_credential: bool
) -> None:
    """Creates an API credential and prints its token (shown this once) and where to use it."""
    issued = accounts.CreateApiCredential(
        pb.CreateApiCredentialRequest(organization_id=organization_id, name=name)
    )
    credential = {"credentialId": issued.credential.credential_id} if show_credential else {}
    print_json(
        {
            "organizationId": organization_id,
            **credential,
            "baseUrl": settings.base_url(organization_id),
            "apiToken": issued.token,
        }
    )


def list_tokens(args: argparse.Namespace, settings: CliSettings, accounts: Stub) -> None:
    found = accounts.ListApiCredentials(
        pb.ListApiCredentialsRequest(organization_id=args.org, include_revoked=args.all)
    )
    print_json(
        [
            {
                "credentialId": c.credential_id,
                "name": c.name,
                "tokenPrefix": c.token_prefix,
                "createdAt": c.created_at.ToJsonString(),
                "lastUsedAt": c.last_used_at.ToJsonString() if c.HasField("last_used_at") else None,
                "revokedAt": c.revoked_at.ToJsonString() if c.HasField("revoked_at") else None,
            }
            for c in found.credentials
        ]
    )


def revoke_token(args: argparse.Namespace, settings: CliSettings, accounts: Stub) -> None:
    revoked = accounts.RevokeApiCredential(
        pb.RevokeApiCredentialRequest(organization_id=args.org, credential_id=args.credential)
    )
    print_json(
        {"credentialId": revoked.credential_id, "revokedAt": revoked.revoked_at.ToJsonString()}
    )


def create_user(args: argparse.Namespace, settings: CliSettings, accounts: Stub) -> None:
    if not args.password_stdin:
        fail("pass the password on standard input with --password-stdin")
    password = sys.stdin.readline().rstrip("\n")
    user = accounts.CreateUser(
        pb.CreateUserRequest(organization_id=args.org, email=args.email, password=password)
    )
    print_json(
        {"userId": user.user_id, "organizationId": user.organization_id, "email": user.email}
    )


type AdminCommands = argparse._SubParsersAction[argparse.ArgumentParser]


def register(subparsers: AdminCommands) -> AdminCommands:
    """Adds `storypost admin`; returns its subcommands so other areas can add theirs."""
    commands = command_group(
        subparsers,
        "admin",
        "organizations, API tokens and users",
        "storypost admin create-org --name Acme",
        handler=run_admin,
    )
    p = subcommand(
        commands,
        "create-org",
        create_org,
        "create an organization and its first API token",
        "storypost admin create-org --name Acme",
    )
    p.add_argument("--name", required=True)

    p = subcommand(
        commands,
        "create-token",
        create_token,
        "create an API token (shown once)",
        "storypost admin create-token --org org_1f2e3d --name ci",
    )
    add_org(p)
    p.add_argument("--name", default="api", help="label of the credential")

    p = subcommand(
        commands,
        "list-tokens",
        list_tokens,
        "list API credentials (never their tokens)",
        "storypost admin list-tokens --org org_1f2e3d --all",
    )
    add_org(p)
    p.add_argument("--all", action="store_true", help="include revoked credentials")

    p = subcommand(
        commands,
        "revoke-token",
        revoke_token,
        "revoke an API credential",
        "storypost admin revoke-token --org org_1f2e3d --credential CREDENTIAL_ID",
    )
    add_org(p)
    p.add_argument("--credential", required=True, help="credential id (see list-tokens)")

    p = subcommand(
        commands,
        "create-user",
        create_user,
        "create a workspace user for the app",
        "printenv USER_PASSWORD | storypost admin create-user --org org_1f2e3d "
        "--email ann@example.com --password-stdin",
    )
    add_org(p)
    p.add_argument("--email", required=True)
    p.add_argument("--password-stdin", action="store_true", help="read the password from stdin")
    return commands


def run_admin(args: argparse.Namespace) -> None:
    settings = load_settings(CliSettings)
    channel = sync_channel(settings.account_addr, settings.grpc_deadline_seconds, settings.signer())
    accounts = account_pb2_grpc.AccountServiceStub(channel)
    command: Command = args.run
    try:
        command(args, settings, accounts)
    except grpc.RpcError as error:
        fail_rpc(error, f"admin {args.admin_command}")
    finally:
        channel.close()

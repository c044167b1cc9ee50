"""`storypost login` / `storypost logout`: the saved base URL and token (file mode 0600)."""

from __future__ import annotations

import argparse
import os
import sys

from storypost_client.cli import render
from storypost_client.cli.exits import EXIT_AUTH, EXIT_BAD_INPUT
from storypost_client.cli.parsing import Subparsers, example
from storypost_client.cli.session import caller_parser, exit_code_for


def read_token(args: argparse.Namespace) -> str:
    """From stdin (--token-stdin), $STORYPOST_API_TOKEN, or a hidden prompt on a terminal:
    never from the command line, where other users and the shell history would see it."""
    from storypost_client.cli import profile

    if args.token_stdin:
        token = sys.stdin.readline().strip()
    elif os.environ.get(profile.TOKEN_ENV):
        token = os.environ[profile.TOKEN_ENV]
    elif sys.stdin.isatty():
        import getpass

        token = getpass.getpass("API token: ").strip()
    else:
        render.fail("pass the token on standard input with --token-stdin", EXIT_BAD_INPUT)
    if not token:
        render.fail("the token is empty", EXIT_BAD_INPUT)
    return token


def login(args: argparse.Namespace) -> None:
    from storypost_client.cli import profile
    from storypost_client.errors import (
        ApiError,
        AuthenticationError,
        NotFoundError,
        StorypostError,
    )
    from storypost_client.retry import RetryPolicy
    from storypost_client.sync_client import StorypostClient

    base_url = (args.base_url or os.environ.get(profile.BASE_URL_ENV) or "").rstrip("/")
    if not base_url:
        render.fail(
            "pass --base-url, http://HOST:PORT/o/<organizationId>/api/v1 (`make run` prints it)",
            EXIT_BAD_INPUT,
        )
    token = read_token(args)
    try:
        retry = RetryPolicy(max_attempts=args.attempts)
        with StorypostClient(base_url, token, retry=retry, on_retry=render.retrying) as client:
            # generate-uuid stores nothing: a harmless call that proves URL and token work.
            client.generate_uuid()
    except AuthenticationError:
        render.fail(f"the token was refused by {base_url}; nothing saved", EXIT_AUTH)
    except NotFoundError:
        render.fail(
            f"no storypost API at {base_url} (it ends in /o/<organizationId>/api/v1)",
            EXIT_BAD_INPUT,
        )
    except ApiError as error:
        render.api_error(error, json_output=False)
        raise SystemExit(exit_code_for(error)) from None
    except (StorypostError, ValueError) as error:
        render.fail(str(error), exit_code_for(error))
    path = profile.config_path()
    profile.save(path, profile.Login(base_url, token))
    if args.json:
        render.as_json({"baseUrl": base_url, "configPath": str(path)})
    else:
        print(f"logged in to {base_url} (saved in {path})")


def logout(args: argparse.Namespace) -> None:
    from storypost_client.cli import profile

    path = profile.config_path()
    forgotten = profile.forget(path)
    if args.json:
        render.as_json({"configPath": str(path), "removed": forgotten})
    else:
        print(f"removed {path}" if forgotten else f"not logged in ({path} does not exist)")


def register(commands: Subparsers) -> None:
    p = caller_parser(
        commands,
        "login",
        help="check and save the API base URL and token for the caller commands",
        description=(
            "Checks the base URL and token with one harmless call (generate-uuid) and saves "
            "them in $STORYPOST_CONFIG, else $XDG_CONFIG_HOME/storypost/config.json, else "
            "~/.config/storypost/config.json (mode 0600). The token comes from standard input "
            "(--token-stdin), $STORYPOST_API_TOKEN or a hidden prompt."
        ),
        epilog=example(
            "storypost login --base-url http://127.0.0.1:8080/o/<organizationId>/api/v1",
            "printenv STORYPOST_API_TOKEN | storypost login --base-url URL --token-stdin",
        ),
    )
    p.add_argument("--token-stdin", action="store_true", help="read the token from stdin")
    p.set_defaults(handler=login)
    p = caller_parser(
        commands, "logout", help="forget the saved login", epilog=example("storypost logout")
    )
    p.set_defaults(handler=logout)

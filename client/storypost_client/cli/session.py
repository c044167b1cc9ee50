"""What every caller command shares: common options, the client, errors → exit codes."""

from __future__ import annotations

import argparse
import functools
import os
from collections.abc import Callable
from typing import TYPE_CHECKING, TypeAlias

from storypost_client.cli import render
from storypost_client.cli.exits import (
    EXIT_AUTH,
    EXIT_BAD_INPUT,
    EXIT_INTERRUPTED,
    EXIT_RATE_LIMITED,
    EXIT_SERVER,
    EXIT_STILL_PENDING,
    EXIT_UNAVAILABLE,
)
from storypost_client.cli.parsing import Subparsers

# The SDK and httpx are imported when a command runs, not to parse it or print its help.
if TYPE_CHECKING:
    from storypost_client import StorypostClient

# A command gets the client and its arguments and returns its exit code.
Command: TypeAlias = "Callable[[StorypostClient, argparse.Namespace], int]"


def common_options() -> argparse.ArgumentParser:
    """Options every caller command takes (added to each command as a parent parser)."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--json", action="store_true", help="print the answer as JSON")
    common.add_argument(
        "--base-url",
        help="the API base URL, http://HOST:PORT/o/<organizationId>/api/v1 "
        "(default: $STORYPOST_BASE_URL, else the saved login)",
    )
    common.add_argument(
        "--attempts",
        type=int,
        default=5,
        metavar="N",
        help="give up after N attempts on 429/502/503/504 and connection failures (default 5)",
    )
    return common


def command_group(commands: Subparsers, name: str, *, help: str, epilog: str) -> Subparsers:
    """`storypost NAME ACTION …`: the command `name` and the subparsers of its actions."""
    group = commands.add_parser(name, help=help, epilog=epilog)
    return group.add_subparsers(dest="action", required=True, metavar="ACTION")


def caller_parser(
    commands: Subparsers, name: str, *, help: str, epilog: str, description: str | None = None
) -> argparse.ArgumentParser:
    """The parser of a command that calls the API: it takes the common options."""
    return commands.add_parser(
        name, parents=[common_options()], help=help, description=description, epilog=epilog
    )


def add_command(
    commands: Subparsers,
    name: str,
    command: Command,
    *,
    help: str,
    epilog: str,
    description: str | None = None,
) -> argparse.ArgumentParser:
    """A caller command that runs `command` with a client (see `run`)."""
    parser = caller_parser(commands, name, help=help, epilog=epilog, description=description)
    parser.set_defaults(handler=handler(command))
    return parser


def exit_code_for(error: Exception) -> int:
    """The exit code of a failure: bad input, auth, rate limit, unavailable or server."""
    from storypost_client.errors import (
        ApiConnectionError,
        AuthenticationError,
        BadRequestError,
        NotFoundError,
        PayloadTooLargeError,
        RateLimitedError,
        UnavailableError,
        UploadError,
        WaitTimeoutError,
    )

    match error:
        case BadRequestError() | NotFoundError() | PayloadTooLargeError() | ValueError():
            return EXIT_BAD_INPUT
        case AuthenticationError():
            return EXIT_AUTH
        case RateLimitedError():
            return EXIT_RATE_LIMITED
        case UnavailableError() | ApiConnectionError():
            return EXIT_UNAVAILABLE
        case UploadError(status=None):
            return EXIT_UNAVAILABLE
        case WaitTimeoutError():
            return EXIT_STILL_PENDING
        case _:
            return EXIT_SERVER


def build_client(args: argparse.Namespace) -> StorypostClient:
    from storypost_client.cli import profile
    from storypost_client.retry import RetryPolicy
    from storypost_client.sync_client import StorypostClient

    path = profile.config_path()
    login = profile.resolve(args.base_url, os.environ, path)
    if login is None:
        raise NotLoggedIn(
            "not logged in: run `storypost login --base-url URL` (or set "
            f"{profile.BASE_URL_ENV} and {profile.TOKEN_ENV})"
        )
    if args.attempts < 1:
        raise ValueError("--attempts must be at least 1")
    return StorypostClient(
        login.base_url,
        login.token,
        retry=RetryPolicy(max_attempts=args.attempts),
        on_retry=render.retrying,
    )


class NotLoggedIn(Exception):
    """No base URL or token to call with."""


def run(command: Command, args: argparse.Namespace) -> None:
    """Runs a command with a client; every failure becomes a message and its exit code."""
    import httpx

    from storypost_client.errors import ApiError, StorypostError

    try:
        client = build_client(args)
    except NotLoggedIn as error:
        render.fail(str(error), EXIT_AUTH)
    except ValueError as error:
        render.fail(str(error), EXIT_BAD_INPUT)
    with client:
        try:
            code = command(client, args)
        except ApiError as error:
            render.api_error(error, json_output=args.json)
            code = exit_code_for(error)
        except (StorypostError, ValueError, OSError) as error:
            render.message(str(error))
            code = EXIT_BAD_INPUT if isinstance(error, OSError) else exit_code_for(error)
        except (httpx.UnsupportedProtocol, httpx.InvalidURL) as error:
            render.message(f"bad base URL {client.base_url}: {error}")
            code = EXIT_BAD_INPUT
        except httpx.HTTPError as error:
            render.message(f"HTTP failure: {error!r}")
            code = EXIT_UNAVAILABLE
        except KeyboardInterrupt:
            render.message("interrupted")
            code = EXIT_INTERRUPTED
    raise SystemExit(code)


def handler(command: Command) -> Callable[[argparse.Namespace], None]:
    """The `args.handler` that `storypost`'s main calls."""
    return functools.partial(run, command)

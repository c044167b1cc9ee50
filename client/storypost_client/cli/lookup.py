"""`storypost status KIND UUID`, `storypost uuid` and `storypost call PROCEDURE [BODY]`."""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING, Any

from storypost_client.cli import inputs, render
from storypost_client.cli.parsing import SAMPLE_UUID, Subparsers, example
from storypost_client.cli.session import add_command
from storypost_client.cli.spinner import rendering
from storypost_client.kinds import KIND_NAMES

if TYPE_CHECKING:
    from storypost_client import StorypostClient


def status(client: StorypostClient, args: argparse.Namespace) -> int:
    from storypost_client.polling import KINDS

    kind = KINDS[args.kind]
    # With --wait the first poll is the status call itself.
    answer = {} if args.wait else client.call(kind.status_procedure, {kind.uuid_field: args.uuid})
    return inputs.finish(client, args, kind.name, args.uuid, answer)


def new_uuid(client: StorypostClient, args: argparse.Namespace) -> int:
    answer = client.generate_uuid()
    if args.json:
        render.as_json(answer)
    else:
        print(answer["uuid"])
    return 0


def call(client: StorypostClient, args: argparse.Namespace) -> int:
    from storypost_client.generated.procedures import PROCEDURES

    body = _body(args.body)
    info = PROCEDURES.get(args.procedure)
    with rendering(args.procedure, enabled=info is not None and info.render_input):
        answer = client.call(args.procedure, body)
    render.as_json(answer)
    return 0


def _body(text: str) -> dict[str, Any]:
    if text == "-" or text.startswith("@"):
        text = inputs.read_text("-" if text == "-" else text[1:])
    try:
        body = json.loads(text)
    except ValueError as error:
        raise ValueError(f"the body is not JSON: {error}") from None
    if not isinstance(body, dict):
        raise ValueError("the body must be a JSON object ({} for none)")
    return body


def register(commands: Subparsers) -> None:
    p = add_command(
        commands,
        "status",
        status,
        help="status of a story, reel, clipapp/social post or draft",
        epilog=example(f"storypost status story {SAMPLE_UUID} --wait"),
    )
    p.add_argument("kind", choices=KIND_NAMES, metavar="KIND", help=", ".join(KIND_NAMES))
    p.add_argument("uuid", metavar="UUID")
    inputs.add_wait_options(p, "in a final state")

    add_command(
        commands,
        "uuid",
        new_uuid,
        help="a new UUID from generate-uuid",
        epilog=example("storypost uuid"),
    )

    p = add_command(
        commands,
        "call",
        call,
        help="call any procedure with a JSON body; prints JSON",
        epilog=example(
            f'storypost call status-photoapp-story \'{{"storyPostUuid": "{SAMPLE_UUID}"}}\'',
            "storypost call list-social-accounts",
        ),
    )
    p.add_argument("procedure", metavar="PROCEDURE", help="e.g. status-photoapp-story")
    p.add_argument(
        "body", nargs="?", default="{}", metavar="BODY", help="JSON object, @FILE or - (stdin)"
    )

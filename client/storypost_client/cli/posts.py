"""`storypost story|reel|clipapp|social schedule|cancel`: scheduling and canceling posts."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypedDict, get_args

from storypost_client.cli import inputs, render, series
from storypost_client.cli.parsing import SAMPLE_UUID, Subparsers, example
from storypost_client.cli.session import add_command, command_group
from storypost_client.cli.spinner import rendering
from storypost_client.generated.types import PrivacyLevel

if TYPE_CHECKING:
    from storypost_client import StorypostClient

PRIVACY_LEVELS: tuple[str, ...] = get_args(PrivacyLevel)


class _Page(TypedDict):
    """The fields every schedule procedure takes from the same options: the page, --at or
    --queue, and --repeat (`storypost_client.cli.series`)."""

    html: str | None
    url: str | None
    date: str | None
    queue_name: str | None
    repeat: dict[str, Any] | None


def schedule(client: StorypostClient, args: argparse.Namespace) -> int:
    kind = _KINDS[args.kind]
    when = series.when(args)
    repeat = series.repeat(args, kind.text_fields)
    html, url = inputs.page(args)
    page = _Page(html=html, url=url, **when, repeat=repeat)
    with rendering(kind.schedule_procedure):
        answer = kind.send(client, args, page)
    return inputs.finish(client, args, args.kind, answer[kind.uuid_field], dict(answer))


def _send_story(
    client: StorypostClient, args: argparse.Namespace, page: _Page
) -> Mapping[str, Any]:
    return client.schedule_photoapp_story(
        **page,
        photoapp_username=args.account,
        story_post_uuid=args.uuid,
        **inputs.story_fields(args),
    )


def _send_reel(client: StorypostClient, args: argparse.Namespace, page: _Page) -> Mapping[str, Any]:
    return client.schedule_photoapp_reel(
        **page,
        photoapp_username=args.account,
        reel_post_uuid=args.uuid,
        caption=args.caption,
        share_to_feed=args.share_to_feed,
        ai_generated=args.ai_generated or None,
        share_to_linknet=args.share_to_linknet,
    )


def _send_clipapp(
    client: StorypostClient, args: argparse.Namespace, page: _Page
) -> Mapping[str, Any]:
    privacy: PrivacyLevel | None = args.privacy
    return client.schedule_clipapp_post(
        **page,
        clipapp_account_id=args.account,
        clipapp_post_uuid=args.uuid,
        title=args.title,
        description=args.description,
        privacy_level=privacy,
        video_cover_timestamp_ms=args.cover_ms,
        disable_duet=args.disable_duet or None,
        disable_comment=args.disable_comment or None,
        disable_stitch=args.disable_stitch or None,
        brand_organic=args.brand_organic or None,
        branded_content=args.branded_content or None,
        ai_generated=args.ai_generated or None,
        auto_audio=args.auto_audio or None,
    )


def _send_social(
    client: StorypostClient, args: argparse.Namespace, page: _Page
) -> Mapping[str, Any]:
    return client.schedule_social_post(
        **page,
        social_account_id=args.account,
        post_type=args.post_type,
        social_post_uuid=args.uuid,
        text=args.text,
        options=inputs.parse_options(args.option, args.options),
    )


def cancel(client: StorypostClient, args: argparse.Namespace) -> int:
    kind = _KINDS[args.kind]
    render.result(
        client.call(kind.cancel_procedure, {kind.uuid_field: args.uuid}), json_output=args.json
    )
    return 0


def register(commands: Subparsers) -> None:
    for name, kind in _KINDS.items():
        actions = command_group(
            commands,
            name,
            help=f"schedule and cancel {kind.what}",
            epilog=example(kind.schedule_example),
        )
        p = add_command(
            actions,
            "schedule",
            schedule,
            help="render a page and schedule it",
            epilog=example(f"{kind.schedule_example} --wait"),
        )
        inputs.add_page_options(p)
        p.add_argument("--account", required=True, metavar="ID", help=kind.account_help)
        p.add_argument("--uuid", help="the post's UUID (default: a new one)")
        inputs.add_date_option(p, "publish")
        series.add_options(p, kind.text_fields)
        inputs.add_wait_options(p, "executed, failed or canceled")
        kind.add_options(p)
        p.set_defaults(kind=name)
        p = add_command(
            actions,
            "cancel",
            cancel,
            help=f"cancel one of {kind.what}",
            epilog=example(f"storypost {name} cancel {SAMPLE_UUID}"),
        )
        p.add_argument("uuid", metavar="UUID")
        p.set_defaults(kind=name)


def _story_options(parser: argparse.ArgumentParser) -> None:
    inputs.add_story_options(parser, "it")


def _reel_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--caption", help="caption (at most 2200 characters)")
    parser.add_argument(
        "--share-to-feed", action=argparse.BooleanOptionalAction, help="also show it in the feed"
    )
    parser.add_argument(
        "--share-to-linknet",
        action=argparse.BooleanOptionalAction,
        help="let linknet recommend it (the API's default: yes)",
    )
    parser.add_argument("--ai-generated", action="store_true", help="mark it AI-generated")


def _clipapp_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--title", help="title (photo posts: at most 90 characters)")
    parser.add_argument("--description", help="description (at most 2200 characters)")
    parser.add_argument("--privacy", choices=PRIVACY_LEVELS, help="default SELF_ONLY")
    parser.add_argument("--cover-ms", type=int, metavar="MS", help="cover frame, ms into video")
    for flag in (
        "disable-duet",
        "disable-comment",
        "disable-stitch",
        "brand-organic",
        "branded-content",
        "ai-generated",
        "auto-audio",
    ):
        parser.add_argument(f"--{flag}", action="store_true")


def _social_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--post-type", required=True, help="postType (see accounts list)")
    parser.add_argument("--text", help="the caption")
    parser.add_argument(
        "--option",
        action="append",
        metavar="KEY=VALUE",
        help="an option of the post type (repeatable; VALUE is JSON when it parses)",
    )
    parser.add_argument("--options", metavar="JSON", help="all options as one JSON object")


@dataclass(frozen=True)
class _Kind:
    """A kind of post: its procedures, its commands' help and its own schedule options."""

    what: str  # what it schedules
    account_help: str  # what --account is
    schedule_example: str
    schedule_procedure: str
    cancel_procedure: str
    uuid_field: str
    send: Callable[[StorypostClient, argparse.Namespace, _Page], Mapping[str, Any]]
    add_options: Callable[[argparse.ArgumentParser], None]
    # Its text fields, which a series' variants give (the catalog's); --variant gives the first.
    text_fields: tuple[str, ...] = ()


_KINDS = {
    "story": _Kind(
        "photoapp stories",
        "photoapp username (see `storypost accounts list`)",
        "storypost story schedule --html page.html --account alice --at 2026-12-01T09:00:00Z",
        "schedule-photoapp-story",
        "cancel-photoapp-story",
        "storyPostUuid",
        _send_story,
        _story_options,
    ),
    "reel": _Kind(
        "photoapp reels",
        "photoapp username (see `storypost accounts list`)",
        "storypost reel schedule --url https://example.com/reel.html --account alice "
        "--caption 'New in'",
        "schedule-photoapp-reel",
        "cancel-photoapp-reel",
        "reelPostUuid",
        _send_reel,
        _reel_options,
        ("caption",),
    ),
    "clipapp": _Kind(
        "clipapp posts",
        "clipappAccountId (see `storypost accounts list`)",
        "storypost clipapp schedule --html page.html --account 7012345678901234567 "
        "--title 'Summer sale' --privacy PUBLIC_TO_EVERYONE",
        "schedule-clipapp-post",
        "cancel-clipapp-post",
        "clipappPostUuid",
        _send_clipapp,
        _clipapp_options,
        ("description", "title"),
    ),
    "social": _Kind(
        "posts on any connected platform",
        "socialAccountId (see accounts list)",
        "storypost social schedule --html page.html --account SOCIAL_ACCOUNT_ID "
        "--post-type POST_TYPE --text 'Hello' --option disableComment=true",
        "schedule-social-post",
        "cancel-social-post",
        "socialPostUuid",
        _send_social,
        _social_options,
        ("text",),
    ),
}

"""`storypost story|reel|clipapp|social schedule|cancel`: scheduling and canceling posts."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, get_args

from storypost_client.cli import inputs, render
from storypost_client.cli.parsing import SAMPLE_UUID, Subparsers, example
from storypost_client.cli.session import common_options, handler
from storypost_client.cli.spinner import rendering
from storypost_client.generated.types import PrivacyLevel

if TYPE_CHECKING:
    from storypost_client import StorypostClient

PRIVACY_LEVELS: tuple[str, ...] = get_args(PrivacyLevel)


def schedule_story(client: StorypostClient, args: argparse.Namespace) -> int:
    html, url = inputs.page(args)
    with rendering("schedule-photoapp-story"):
        answer = client.schedule_photoapp_story(
            html=html,
            url=url,
            photoapp_username=args.account,
            story_post_uuid=args.uuid,
            date=_date(args),
            ai_generated=args.ai_generated or None,
            share_to_linknet=args.share_to_linknet or None,
            linknet_destination_id=args.linknet_destination,
        )
    return inputs.finish(client, args, "story", answer["storyPostUuid"], dict(answer))


def schedule_reel(client: StorypostClient, args: argparse.Namespace) -> int:
    html, url = inputs.page(args)
    with rendering("schedule-photoapp-reel"):
        answer = client.schedule_photoapp_reel(
            html=html,
            url=url,
            photoapp_username=args.account,
            reel_post_uuid=args.uuid,
            caption=args.caption,
            date=_date(args),
            share_to_feed=args.share_to_feed,
            ai_generated=args.ai_generated or None,
            share_to_linknet=args.share_to_linknet,
        )
    return inputs.finish(client, args, "reel", answer["reelPostUuid"], dict(answer))


def schedule_clipapp(client: StorypostClient, args: argparse.Namespace) -> int:
    html, url = inputs.page(args)
    privacy: PrivacyLevel | None = args.privacy
    with rendering("schedule-clipapp-post"):
        answer = client.schedule_clipapp_post(
            html=html,
            url=url,
            clipapp_account_id=args.account,
            clipapp_post_uuid=args.uuid,
            date=_date(args),
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
    return inputs.finish(client, args, "clipapp", answer["clipappPostUuid"], dict(answer))


def schedule_social(client: StorypostClient, args: argparse.Namespace) -> int:
    html, url = inputs.page(args)
    with rendering("schedule-social-post"):
        answer = client.schedule_social_post(
            html=html,
            url=url,
            social_account_id=args.account,
            post_type=args.post_type,
            social_post_uuid=args.uuid,
            text=args.text,
            options=inputs.parse_options(args.option, args.options),
            date=_date(args),
        )
    return inputs.finish(client, args, "social", answer["socialPostUuid"], dict(answer))


def cancel(client: StorypostClient, args: argparse.Namespace) -> int:
    procedure, field = _CANCEL[args.kind]
    render.result(client.call(procedure, {field: args.uuid}), json_output=args.json)
    return 0


_CANCEL = {
    "story": ("cancel-photoapp-story", "storyPostUuid"),
    "reel": ("cancel-photoapp-reel", "reelPostUuid"),
    "clipapp": ("cancel-clipapp-post", "clipappPostUuid"),
    "social": ("cancel-social-post", "socialPostUuid"),
}


def _date(args: argparse.Namespace) -> str | None:
    at = inputs.parse_at(args.at)
    return None if at is None else at.isoformat().replace("+00:00", "Z")


# Each kind: what it schedules, what --account is, and an example of `schedule`.
_KINDS = {
    "story": (
        "photoapp stories",
        "photoapp username (see `storypost accounts list`)",
        "storypost story schedule --html page.html --account alice --at 2026-12-01T09:00:00Z",
    ),
    "reel": (
        "photoapp reels",
        "photoapp username (see `storypost accounts list`)",
        "storypost reel schedule --url https://example.com/reel.html --account alice "
        "--caption 'New in'",
    ),
    "clipapp": (
        "clipapp posts",
        "clipappAccountId (see `storypost accounts list`)",
        "storypost clipapp schedule --html page.html --account 7012345678901234567 "
        "--title 'Summer sale' --privacy PUBLIC_TO_EVERYONE",
    ),
    "social": (
        "posts on any connected platform",
        "socialAccountId (see accounts list)",
        "storypost social schedule --html page.html --account SOCIAL_ACCOUNT_ID "
        "--post-type POST_TYPE --text 'Hello' --option disableComment=true",
    ),
}


def register(commands: Subparsers) -> None:
    common = common_options()
    for kind, (what, account_help, schedule_example) in _KINDS.items():
        group = commands.add_parser(
            kind, help=f"schedule and cancel {what}", epilog=example(schedule_example)
        )
        actions = group.add_subparsers(dest="action", required=True, metavar="ACTION")
        schedule = actions.add_parser(
            "schedule",
            parents=[common],
            help="render a page and schedule it",
            epilog=example(f"{schedule_example} --wait"),
        )
        inputs.add_page_options(schedule)
        schedule.add_argument("--account", required=True, metavar="ID", help=account_help)
        schedule.add_argument("--uuid", help="the post's UUID (default: a new one)")
        inputs.add_date_option(schedule, "publish")
        inputs.add_wait_options(schedule, "executed, failed or canceled")
        _KIND_OPTIONS[kind](schedule)
        cancel_parser = actions.add_parser(
            "cancel",
            parents=[common],
            help=f"cancel one of {what}",
            epilog=example(f"storypost {kind} cancel {SAMPLE_UUID}"),
        )
        cancel_parser.add_argument("uuid", metavar="UUID")
        cancel_parser.set_defaults(handler=handler(cancel), kind=kind)


def _story_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--ai-generated", action="store_true", help="mark it AI-generated")
    parser.add_argument(
        "--share-to-linknet", action="store_true", help="cross-post to a linknet destination"
    )
    parser.add_argument("--linknet-destination", metavar="ID", help="linknetDestinationId")
    parser.set_defaults(handler=handler(schedule_story))


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
    parser.set_defaults(handler=handler(schedule_reel))


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
    parser.set_defaults(handler=handler(schedule_clipapp))


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
    parser.set_defaults(handler=handler(schedule_social))


_KIND_OPTIONS = {
    "story": _story_options,
    "reel": _reel_options,
    "clipapp": _clipapp_options,
    "social": _social_options,
}

"""The platform and post-type catalog: account-svc is its single owner (docs/accounts.md)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Literal, TypedDict, Unpack

from storypost_runtime import vocabulary as words
from storypost_runtime.vocabulary import (
    CLIPAPP_DEFAULT_PRIVACY_LEVEL,
    CLIPAPP_PRIVACY_LEVELS,
    PlatformName,
)

Media = Literal["image", "video"]
OptionType = Literal["boolean", "string", "integer", "number"]
ConnectionKind = Literal["direct", "social"]
JsonScalar = bool | int | float | str

STORY = "schedule-photoapp-story"
REEL = "schedule-photoapp-reel"
CLIPAPP_POST = "schedule-clipapp-post"
SOCIAL_POST = "schedule-social-post"


@dataclass(frozen=True)
class OptionSpec:
    """One key of schedule-social-post's `options`, described like a small JSON Schema."""

    type: OptionType
    description: str
    required: bool = False
    enum: tuple[JsonScalar, ...] = ()
    default: JsonScalar | None = None
    minimum: float | None = None
    maximum: float | None = None
    max_length: int | None = None


@dataclass(frozen=True)
class PostTypeSpec:
    post_type: str
    procedure: str
    media: Media
    max_caption_length: int = 0
    caption_required: bool = False
    # Video post types only.
    min_duration_seconds: float | None = None
    max_duration_seconds: float | None = None
    options: Mapping[str, OptionSpec] = field(default_factory=dict)

    @property
    def caption_published(self) -> bool:
        return self.max_caption_length > 0


@dataclass(frozen=True)
class Platform:
    """A platform: its names, daily limit and what each kind of connection can post."""

    # Its lower-case key (records, the sandbox paths, the CLI: `photoapp`) and uppercase
    # name (list-social-accounts: `PHOTOAPP`), from the vocabulary.
    names: PlatformName
    description: str
    # Posts per UTC day and platform account, across organizations (None: no limit here).
    daily_limit: int | None
    post_types: Mapping[ConnectionKind, tuple[PostTypeSpec, ...]]
    # The connection used when none is asked for.
    default_connection: ConnectionKind

    @property
    def key(self) -> str:
        return self.names.key

    @property
    def name(self) -> str:
        return self.names.name

    @property
    def connections(self) -> tuple[ConnectionKind, ...]:
        return tuple(self.post_types)


class _Caption(TypedDict, total=False):
    """What an image and a video post type both may set beyond the caption's length."""

    caption_required: bool
    options: Mapping[str, OptionSpec]


def _image(
    post_type: str, procedure: str, caption: int = 0, **more: Unpack[_Caption]
) -> PostTypeSpec:
    # What is not given keeps PostTypeSpec's own default.
    return PostTypeSpec(post_type, procedure, "image", max_caption_length=caption, **more)


def _video(
    post_type: str,
    procedure: str,
    seconds: tuple[float, float],
    caption: int = 0,
    **more: Unpack[_Caption],
) -> PostTypeSpec:
    """An image post type's fields, with video media and its duration range in seconds."""
    return replace(
        _image(post_type, procedure, caption, **more),
        media="video",
        min_duration_seconds=seconds[0],
        max_duration_seconds=seconds[1],
    )


def _social_only(
    names: PlatformName, description: str, daily_limit: int, *post_types: PostTypeSpec
) -> Platform:
    """A platform reached only through the social connection, which is thus its default."""
    return Platform(names, description, daily_limit, {"social": post_types}, "social")


_REPLY_SETTINGS = {
    "replySettings": OptionSpec(
        "string",
        "Who can reply.",
        enum=("everyone", "following", "mentionedUsers"),
        default="everyone",
    )
}
_VISIBILITY = {
    "visibility": OptionSpec(
        "string", "Who sees the post.", enum=("PUBLIC", "CONNECTIONS"), default="PUBLIC"
    )
}
_BOARD = OptionSpec(
    "string", "The board to pin to; the account's default board when omitted.", max_length=128
)
_PIN_TITLE = OptionSpec("string", "Title of the pin.", max_length=100)


_CLIPAPP_VIDEO_OPTIONS = {
    "privacyLevel": OptionSpec(
        "string",
        "Who can watch the post.",
        enum=CLIPAPP_PRIVACY_LEVELS,
        default=CLIPAPP_DEFAULT_PRIVACY_LEVEL,
    ),
    "disableComment": OptionSpec("boolean", "Turn comments off.", default=False),
    "disableDuet": OptionSpec("boolean", "Turn duets off.", default=False),
    "disableStitch": OptionSpec("boolean", "Turn stitches off.", default=False),
    "videoCoverTimestampMs": OptionSpec(
        "integer", "Frame used as cover, in milliseconds from the start.", minimum=0
    ),
    "brandOrganic": OptionSpec("boolean", "Promotes the creator's own brand.", default=False),
    "brandedContent": OptionSpec("boolean", "Paid partnership disclosure.", default=False),
    "aiGenerated": OptionSpec("boolean", "Marks the post as AI-generated.", default=False),
}
_CLIPAPP_PHOTO_OPTIONS = {
    "privacyLevel": _CLIPAPP_VIDEO_OPTIONS["privacyLevel"],
    "disableComment": _CLIPAPP_VIDEO_OPTIONS["disableComment"],
    "autoAudio": OptionSpec("boolean", "Lets the network add music.", default=False),
}

PLATFORMS: tuple[Platform, ...] = (
    Platform(
        words.PHOTOAPP,
        "the photo/story network",
        None,
        {
            "direct": (
                _image("IMAGE_STORY", STORY),
                _video("VIDEO_STORY", STORY, (0.5, 60)),
                _video("REEL", REEL, (0.5, 180), caption=2200),
            )
        },
        "direct",
    ),
    Platform(
        words.CLIPAPP,
        "the short-video network",
        10,
        {
            "direct": (
                _video("VIDEO", CLIPAPP_POST, (0.5, 600), caption=2200),
                _image("PHOTO", CLIPAPP_POST, caption=90),
            ),
            "social": (
                _video(
                    "VIDEO", SOCIAL_POST, (3, 600), caption=2200, options=_CLIPAPP_VIDEO_OPTIONS
                ),
                _image("PHOTO", SOCIAL_POST, caption=90, options=_CLIPAPP_PHOTO_OPTIONS),
            ),
        },
        "direct",
    ),
    Platform(
        words.VIDEOCHANNEL,
        "the video channel",
        10,
        {
            # Directly connected channels cannot be posted to yet: no post types.
            "direct": (),
            "social": (
                _video(
                    "SHORT",
                    SOCIAL_POST,
                    (1, 180),
                    caption=100,
                    options={
                        "privacyStatus": OptionSpec(
                            "string",
                            "Who can watch the video.",
                            enum=("public", "unlisted", "private"),
                            default="public",
                        ),
                        "madeForKids": OptionSpec(
                            "boolean", "The video is made for children.", default=False
                        ),
                    },
                ),
            ),
        },
        "social",
    ),
    _social_only(
        words.LINKNET,
        "the linknet network (pages)",
        50,
        _image("IMAGE_POST", SOCIAL_POST, caption=63206),
        _video("REEL", SOCIAL_POST, (3, 90), caption=2200),
        _image("IMAGE_STORY", SOCIAL_POST),
        _video("VIDEO_STORY", SOCIAL_POST, (1, 60)),
    ),
    _social_only(
        words.PRONET,
        "the professional network",
        18,
        _image("IMAGE_POST", SOCIAL_POST, caption=3000, options=_VISIBILITY),
        _video("VIDEO_POST", SOCIAL_POST, (3, 600), caption=3000, options=_VISIBILITY),
    ),
    _social_only(
        words.PINBOARD,
        "the pin board",
        24,
        _image(
            "PIN",
            SOCIAL_POST,
            caption=500,
            options={
                "boardId": _BOARD,
                "link": OptionSpec("string", "Where the pin links to (a URL).", max_length=2048),
                "title": _PIN_TITLE,
            },
        ),
        _video(
            "VIDEO_PIN",
            SOCIAL_POST,
            (4, 900),
            caption=500,
            options={"boardId": _BOARD, "title": _PIN_TITLE},
        ),
    ),
    _social_only(
        words.EPHEMERAL,
        "the ephemeral chat app",
        20,
        _image("IMAGE_STORY", SOCIAL_POST),
        _video("VIDEO_STORY", SOCIAL_POST, (1, 60)),
        _video("SPOTLIGHT", SOCIAL_POST, (5, 60), caption=160),
    ),
    _social_only(
        words.SHORTTEXT,
        "the short-text network",
        200,
        _image("IMAGE_POST", SOCIAL_POST, caption=280, options=_REPLY_SETTINGS),
        _video("VIDEO_POST", SOCIAL_POST, (0.5, 140), caption=280, options=_REPLY_SETTINGS),
    ),
    _social_only(
        words.MICROBLOG,
        "the microblog",
        15,
        # The one platform that requires a caption.
        _image(
            "IMAGE_POST",
            SOCIAL_POST,
            caption=300,
            caption_required=True,
            options={
                "altText": OptionSpec(
                    "string",
                    "Description of the image for screen readers.",
                    max_length=2000,
                )
            },
        ),
        _video("VIDEO_POST", SOCIAL_POST, (1, 60), caption=300, caption_required=True),
    ),
)

_BY_KEY = {platform.key: platform for platform in PLATFORMS}
_BY_NAME = {platform.name: platform for platform in PLATFORMS}


def by_key(key: str) -> Platform | None:
    return _BY_KEY.get(key)


def by_name(name: str) -> Platform | None:
    """By uppercase name (`PHOTOAPP`) or lower-case key (`photoapp`)."""
    return _BY_NAME.get(name.upper())

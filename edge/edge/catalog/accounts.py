"""Procedure records of connected accounts: the three listings and create-connect-link."""

from __future__ import annotations

from edge.catalog import fragments as f
from edge.catalog.model import Procedure

_EXAMPLE_LINKNET_DESTINATION = {
    "linknetDestinationId": f.EXAMPLE_LINKNET_DESTINATION_ID,
    "linknetDestinationName": "Sunny Shop",
    "linknetDestinationType": "page",
}
_CLIPAPP_AVATAR_URL = f"https://cdn.clipapp.example/avatars/{f.EXAMPLE_CLIPAPP_ACCOUNT_ID}.jpg"


def _listing(
    *,
    name: str,
    summary: str,
    doc: str,
    key: str,
    item: f.Schema,
    description: str,
    example: list[dict[str, object]],
) -> Procedure:
    """A listing of connected accounts (account-svc's ListConnectedAccounts): no input, the
    one array `key` of `item`s out."""
    return Procedure(
        name=name,
        summary=summary,
        doc=doc,
        input_schema=f.input_object({}),
        output_schema=f.list_output(key, item, description),
        example_input={},
        example_output={key: example},
        tags=("accounts",),
    )


def _photoapp_user() -> f.Schema:
    return f.output_object(
        {
            "photoappId": {
                "type": "string",
                "pattern": f.PHOTOAPP_ID_PATTERN,
                "description": "Numeric id of the account on photoapp (up to 50 digits).",
            },
            "photoappUsername": f.photoapp_username(
                "Username; pass it as `photoappUsername` to the photoapp procedures."
            ),
            "linknetDestinations": f.linknet_destinations(),
        },
        ("photoappId", "photoappUsername"),
    )


LIST_PHOTOAPP_USERS = _listing(
    name="list-photoapp-users",
    summary="Lists the connected photoapp accounts and their linknet destinations.",
    doc=(
        "Lists the photoapp accounts connected to the organization. Only active "
        "(non-deleted) accounts are listed. Use `photoappUsername` with "
        "`schedule-photoapp-story` and `schedule-photoapp-reel`; to cross-post a story, "
        "pass `shareToLinknet: true` and, when needed, one of the account's "
        "`linknetDestinations` as `linknetDestinationId`.\n\n"
        "Input: `{}`. Output: `photoappUsers` (possibly empty). An account connected "
        "through a connect link (`create-connect-link`) appears here once its owner "
        "finished connecting it."
    ),
    key="photoappUsers",
    item=_photoapp_user(),
    description="The connected photoapp accounts.",
    example=[
        {
            "photoappId": "17841405822304914",
            "photoappUsername": f.EXAMPLE_PHOTOAPP_USERNAME,
            "linknetDestinations": [_EXAMPLE_LINKNET_DESTINATION],
        },
        {"photoappId": "17841463107751230", "photoappUsername": "sunnyshop.outlet"},
    ],
)


def _clipapp_account() -> f.Schema:
    return f.output_object(
        {
            "clipappAccountId": f.clipapp_account_id(
                "Id of the account; pass it as `clipappAccountId` to `schedule-clipapp-post`."
            ),
            "clipappAccountName": f.string(
                "Display name of the account.", min_length=1, max_length=100
            ),
            "profilePictureUrl": f.link("Profile picture of the account, when known."),
        },
        ("clipappAccountId", "clipappAccountName"),
    )


LIST_CLIPAPP_ACCOUNTS = _listing(
    name="list-clipapp-accounts",
    summary="Lists the directly connected clipapp accounts.",
    doc=(
        "Lists the clipapp (short-video network) accounts connected directly to the "
        "organization. Use `clipappAccountId` with `schedule-clipapp-post`.\n\n"
        "Input: `{}`. Output: `clipappAccounts` (possibly empty). A clipapp account "
        "connected through the social integrations is listed by `list-social-accounts` "
        "instead (and is posted to with `schedule-social-post`)."
    ),
    key="clipappAccounts",
    item=_clipapp_account(),
    description="The connected clipapp accounts.",
    example=[
        {
            "clipappAccountId": f.EXAMPLE_CLIPAPP_ACCOUNT_ID,
            "clipappAccountName": "Sunny Shop",
            "profilePictureUrl": _CLIPAPP_AVATAR_URL,
        }
    ],
)


def _option() -> f.Schema:
    """Describes one option of a post type (the value a caller may put under its key)."""
    return f.output_object(
        {
            "type": f.enum("JSON type of the value.", ("boolean", "string", "integer", "number")),
            "description": f.string("What the option does."),
            "required": f.boolean("Whether the option must be given.", default=False),
            "enum": f.array_of(
                f.json_scalar("An allowed value, of the option's `type`."),
                "The allowed values, when the option takes one of a list.",
            ),
            "default": f.json_scalar("The value used when the option is omitted."),
            "minimum": {"type": "number", "description": "Smallest allowed number."},
            "maximum": {"type": "number", "description": "Largest allowed number."},
            "maxLength": f.integer("Longest allowed string, in characters.", minimum=0),
        },
        ("type", "description", "required"),
    )


def _post_type() -> f.Schema:
    seconds = {"type": "number", "minimum": 0}
    return f.output_object(
        {
            "postType": f.post_type(
                "Name of the post type; pass it as `postType` to `schedule-social-post`."
            ),
            "procedure": f.string(
                "The procedure that schedules this post type, e.g. `schedule-social-post`."
            ),
            "media": f.enum(
                "What the design must render as: `image` (a design without video) or "
                "`video` (a design with video).",
                ("image", "video"),
            ),
            "minDurationSeconds": {
                **seconds,
                "description": "Shortest accepted video (video post types only).",
            },
            "maxDurationSeconds": {
                **seconds,
                "description": "Longest accepted video (video post types only).",
            },
            "captionPublished": f.boolean("Whether `text` is published with the post."),
            "captionRequired": f.boolean("Whether `text` must be given."),
            "maxCaptionLength": f.integer(
                "Longer `text` is shortened to this many characters.", minimum=0
            ),
            "options": {
                "type": "object",
                "additionalProperties": _option(),
                "description": (
                    "The options of the post type, by key (empty when it has none); "
                    "pass values as `options` to `schedule-social-post`."
                ),
            },
        },
        (
            "postType",
            "procedure",
            "media",
            "captionPublished",
            "captionRequired",
            "maxCaptionLength",
            "options",
        ),
    )


def _social_account() -> f.Schema:
    return f.output_object(
        {
            "socialAccountId": f.social_account_id(
                "Id of this connection; pass it as `socialAccountId` to `schedule-social-post`."
            ),
            "platform": f.platform(
                "Uppercase platform name: "
                + ", ".join(f"`{name}`" for name in f.PLATFORMS)
                + "; more may be added."
            ),
            "connection": f.enum(
                "`direct`: connected to this service directly, posted to with the "
                "platform's own procedures; `social`: connected through the social "
                "integrations, posted to with `schedule-social-post`.",
                ("direct", "social"),
            ),
            "displayName": f.string("Display name of the account on the platform."),
            "username": f.string("Handle of the account on the platform, when it has one."),
            "profilePictureUrl": f.link("Profile picture of the account, when known."),
            "disconnected": f.boolean(
                "True when the account must be reconnected in the app before posts can "
                "be scheduled."
            ),
            "disconnectReason": f.string(
                "Disconnected accounts: why (the platform refused the account's token, "
                "with its message). Absent while connected."
            ),
            "photoappUsername": f.string(
                "Directly connected photoapp accounts: the `photoappUsername` for the "
                "photoapp procedures."
            ),
            "clipappAccountId": f.string(
                "Directly connected clipapp accounts: the `clipappAccountId` for "
                "`schedule-clipapp-post`."
            ),
            "linknetDestinations": f.linknet_destinations(),
            "dailyPostLimit": f.integer(
                "Posts per UTC day the platform allows this account, across everyone "
                "posting to it, when the platform has such a limit.",
                minimum=0,
            ),
            "postTypes": f.array_of(
                _post_type(),
                "What can be posted to the account; absent when it cannot be posted to yet "
                "(a directly connected video-channel account).",
            ),
        },
        ("socialAccountId", "platform", "connection", "displayName", "disconnected"),
    )


def _example_post_type(
    post_type: str,
    procedure: str,
    media: str,
    *,
    caption: int = 0,
    seconds: tuple[float, float] | None = None,
    options: dict[str, object] | None = None,
) -> dict[str, object]:
    entry: dict[str, object] = {"postType": post_type, "procedure": procedure, "media": media}
    if seconds is not None:
        entry["minDurationSeconds"], entry["maxDurationSeconds"] = seconds
    entry |= {
        "captionPublished": caption > 0,
        "captionRequired": False,
        "maxCaptionLength": caption,
        "options": options or {},
    }
    return entry


def _option_example(kind: str, description: str, **extra: object) -> dict[str, object]:
    return {"type": kind, "description": description, "required": False, **extra}


_CLIPAPP_SOCIAL_OPTIONS: dict[str, object] = {
    "aiGenerated": _option_example("boolean", "Marks the post as AI-generated.", default=False),
    "brandOrganic": _option_example("boolean", "Promotes the creator's own brand.", default=False),
    "brandedContent": _option_example("boolean", "Paid partnership disclosure.", default=False),
    "disableComment": _option_example("boolean", "Turn comments off.", default=False),
    "disableDuet": _option_example("boolean", "Turn duets off.", default=False),
    "disableStitch": _option_example("boolean", "Turn stitches off.", default=False),
    "privacyLevel": _option_example(
        "string",
        "Who can watch the post.",
        enum=list(f.CLIPAPP_PRIVACY_LEVELS),
        default=f.CLIPAPP_DEFAULT_PRIVACY_LEVEL,
    ),
    "videoCoverTimestampMs": _option_example(
        "integer", "Frame used as cover, in milliseconds from the start.", minimum=0
    ),
}
_PINBOARD_OPTIONS: dict[str, object] = {
    "boardId": _option_example(
        "string",
        "The board to pin to; the account's default board when omitted.",
        maxLength=128,
    ),
    "link": _option_example("string", "Where the pin links to (a URL).", maxLength=2048),
    "title": _option_example("string", "Title of the pin.", maxLength=100),
}

LIST_SOCIAL_ACCOUNTS = _listing(
    name="list-social-accounts",
    summary="Lists every connected account on every platform, with what can be posted to it.",
    doc=(
        "Lists every account connected to the organization on every platform (photoapp, "
        "clipapp, a video channel, linknet, a professional network, a pin board, an "
        "ephemeral chat app, a short-text network, a microblog and others), each with the "
        "post types it accepts.\n\n"
        "- `platform` is an uppercase name (`PHOTOAPP`, `CLIPAPP`, `VIDEOCHANNEL`, "
        "`LINKNET`, `PRONET`, `PINBOARD`, `EPHEMERAL`, `SHORTTEXT`, `MICROBLOG`); new "
        "platforms may appear, so treat unknown names gracefully.\n"
        "- `connection` says how the account is connected: `direct` accounts are posted to "
        "with the platform's own procedures (`photoappUsername` with "
        "`schedule-photoapp-story` / `schedule-photoapp-reel`, `clipappAccountId` with "
        "`schedule-clipapp-post`); `social` accounts with `schedule-social-post` and "
        "`socialAccountId`. A clipapp account may appear twice, once per connection.\n"
        "- `disconnected: true` means the account must be reconnected in the app before "
        "posts can be scheduled.\n"
        "- Each entry of `postTypes` names the `procedure` that schedules it, the `media` "
        "the design must render as (a design with video renders as `video`, otherwise "
        "`image`), the accepted video duration (`minDurationSeconds`, "
        "`maxDurationSeconds`; the source video must fit them), whether the caption "
        "(`text`) is published or required, `maxCaptionLength` (longer text is "
        "shortened) and the `options` the caller may pass, each with its type, allowed "
        "values and default. A directly connected video-channel account has no "
        "`postTypes`: it cannot be posted to yet.\n"
        "- A photoapp account lists its `linknetDestinations`.\n"
        "- `dailyPostLimit` is the platform's limit of posts per UTC day for the account, "
        "counted across everyone posting to it (posts beyond it fail).\n\n"
        "Input: `{}`. Output: `socialAccounts` (possibly empty), oldest connection first. "
        "Deleted accounts are not listed; tokens are never part of the answer."
    ),
    key="socialAccounts",
    item=_social_account(),
    description="Every connected account on every platform.",
    example=[
        {
            "socialAccountId": "sa_01jz8k4q2m7d",
            "platform": "PHOTOAPP",
            "connection": "direct",
            "displayName": "Sunny Shop",
            "username": "sunnyshop",
            "photoappUsername": f.EXAMPLE_PHOTOAPP_USERNAME,
            "disconnected": False,
            "linknetDestinations": [_EXAMPLE_LINKNET_DESTINATION],
            "postTypes": [
                _example_post_type("IMAGE_STORY", "schedule-photoapp-story", "image"),
                _example_post_type(
                    "VIDEO_STORY", "schedule-photoapp-story", "video", seconds=(0.5, 60)
                ),
                _example_post_type(
                    "REEL", "schedule-photoapp-reel", "video", caption=2200, seconds=(0.5, 180)
                ),
            ],
        },
        {
            "socialAccountId": "sa_01jz8k5c9x3f",
            "platform": "CLIPAPP",
            "connection": "direct",
            "displayName": "Sunny Shop",
            "username": "sunnyshop",
            "profilePictureUrl": _CLIPAPP_AVATAR_URL,
            "clipappAccountId": f.EXAMPLE_CLIPAPP_ACCOUNT_ID,
            "disconnected": False,
            "dailyPostLimit": 10,
            "postTypes": [
                _example_post_type(
                    "VIDEO", "schedule-clipapp-post", "video", caption=2200, seconds=(0.5, 600)
                ),
                _example_post_type("PHOTO", "schedule-clipapp-post", "image", caption=90),
            ],
        },
        {
            "socialAccountId": "sa_01jz8m0t6b1w",
            "platform": "CLIPAPP",
            "connection": "social",
            "displayName": "Sunny Shop",
            "username": "sunnyshop",
            "disconnected": False,
            "dailyPostLimit": 10,
            "postTypes": [
                _example_post_type(
                    "VIDEO",
                    "schedule-social-post",
                    "video",
                    caption=2200,
                    seconds=(3, 600),
                    options=_CLIPAPP_SOCIAL_OPTIONS,
                )
            ],
        },
        {
            "socialAccountId": "sa_01jz8m4r8h2c",
            "platform": "PINBOARD",
            "connection": "social",
            "displayName": "Sunny Shop Ideas",
            "disconnected": True,
            "dailyPostLimit": 24,
            "postTypes": [
                _example_post_type(
                    "PIN",
                    "schedule-social-post",
                    "image",
                    caption=500,
                    options=_PINBOARD_OPTIONS,
                )
            ],
        },
        {
            "socialAccountId": "sa_01jz8n2d5k9p",
            "platform": "VIDEOCHANNEL",
            "connection": "direct",
            "displayName": "Sunny Shop TV",
            "disconnected": False,
            "dailyPostLimit": 10,
        },
    ],
)

CREATE_CONNECT_LINK = Procedure(
    name="create-connect-link",
    summary="Creates a shareable link through which an account owner connects a photoapp account.",
    doc=(
        "Creates a connect link: a shareable URL through which the owner of a photoapp "
        "account connects it to the organization. No login is needed: the URL itself is "
        "the authorization, so share it only with the account owner. After the owner "
        "connected the account, it appears in `list-photoapp-users`.\n\n"
        "`description` (at most 500 characters) is an optional note shown in the app.\n\n"
        "**Idempotency:** the same `connectLinkUuid` again returns the same URL.\n\n"
        "**Limit:** an organization has at most 100 connect links (used ones count); "
        "creating one more is refused with HTTP 400 and an `errorMessage` (`errorCode` "
        "`CONNECT_LINK_LIMIT`), and the existing links are unchanged.\n\n"
        "A link works once: the page walks the owner through photoapp's sign-in and then "
        "shows that the account is connected; afterwards the page says the link was used "
        "(HTTP 410). An unknown link shows a page saying so (HTTP 404)."
    ),
    input_schema=f.input_object(
        {
            "connectLinkUuid": f.caller_uuid("link"),
            "description": f.string("A note shown in the app.", max_length=500),
        },
        ("connectLinkUuid",),
    ),
    output_schema=f.output_object(
        {
            "connectLinkUuid": f.uuid("The link's UUID."),
            "connectLinkUrl": f.link(
                "The shareable URL; it is the authorization, no login required."
            ),
        },
        ("connectLinkUuid", "connectLinkUrl"),
    ),
    example_input={
        "connectLinkUuid": "5032c976-d2c8-446d-82b1-2dc023c1c03f",
        "description": "Photoapp account of the Lisbon store",
    },
    example_output={
        "connectLinkUuid": "5032c976-d2c8-446d-82b1-2dc023c1c03f",
        "connectLinkUrl": f"{f.EXAMPLE_APP_URL}/connect/Q2h8vTn4LwZr0YpK6aJdMf3sUeB9cXoH",
    },
    tags=("accounts",),
)

PROCEDURES: tuple[Procedure, ...] = (
    LIST_PHOTOAPP_USERS,
    LIST_CLIPAPP_ACCOUNTS,
    LIST_SOCIAL_ACCOUNTS,
    CREATE_CONNECT_LINK,
)

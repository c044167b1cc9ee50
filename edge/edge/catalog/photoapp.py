"""Procedure records of photoapp stories and reels: schedule, status and cancel."""

from __future__ import annotations

from edge.catalog import fragments as f
from edge.catalog.model import Procedure
from edge.catalog.queues import queued
from edge.catalog.series import repeated
from storypost_runtime import vocabulary
from storypost_runtime.vocabulary import PostStatus

_STORY_UUID = "bc604f8c-650a-46ed-8726-def3cdf9d0c0"
_REEL_UUID = "a238d129-05ad-4b23-aafe-f508e44205d6"
_STORY = f.Subject("storyPostUuid", "story post", _STORY_UUID, "photoapp")
_REEL = f.Subject("reelPostUuid", "reel post", _REEL_UUID, "photoapp")


SCHEDULE_PHOTOAPP_STORY = f.schedule_procedure(
    _STORY,
    name="schedule-photoapp-story",
    summary="Renders a page and schedules it as a story on a connected photoapp account.",
    doc=(
        "Renders the page into an image story, or into a video story when its "
        "`<photoapp-story>` element has a `src` pointing to a video, and schedules it on "
        "the connected photoapp account `photoappUsername`. It answers `scheduled` once the "
        "media is prepared; rendering finishes in the background and `previewUrl` appears "
        "in `status-photoapp-story`, usually within a minute.\n\n"
        "The story is posted at `date`, or at once when `date` is omitted. It becomes "
        "`executed` or `failed`; a story that cannot be posted within 60 minutes after its "
        "scheduled time is marked `failed` (it is never posted late). Each change sends the "
        "webhook event `photoapp_story_post.status_changed`.\n\n"
        "`aiGenerated` marks the story as AI-generated. `shareToLinknet: true` cross-posts "
        "it to a linknet destination of the account: `linknetDestinationId`, or the first "
        "linked destination when omitted.\n\n"
        f"{f.RENDER_INPUT_DOC}\n\n"
        f"{f.VIDEO_DOC.format(duration='0.5 to 60 seconds long')}\n\n"
        f"{f.MENTION_BUSY_DOC}\n\n"
        "**Quota:** 100 story posts per account per 24 hours. Photoapp itself allows "
        "roughly 15 to 25 stories per account per day; more may cause a cooldown or a "
        "'try again later' failure.\n\n"
        f"{f.RETRY_DOC}"
    ),
    properties={
        "photoappUsername": f.photoapp_username(),
        "storyPostUuid": f.caller_uuid("story post"),
        "date": f.date_time("When to post; omitted means at once."),
        "aiGenerated": f.boolean("Marks the story as AI-generated."),
        "shareToLinknet": f.boolean("Cross-post the story to a linknet destination."),
        "linknetDestinationId": {
            "type": ["string", "integer"],
            "minLength": 1,
            "maxLength": 64,
            "description": (
                "Linknet destination to cross-post to when `shareToLinknet` is true; it "
                "must be linked to the account. Omitted means the first linked one."
            ),
        },
    },
    required=("photoappUsername", "storyPostUuid"),
    example_input={
        "html": f.EXAMPLE_IMAGE_STORY_HTML,
        "photoappUsername": f.EXAMPLE_PHOTOAPP_USERNAME,
        "storyPostUuid": _STORY_UUID,
        "date": "2026-07-01T09:30:00Z",
        "shareToLinknet": True,
        "linknetDestinationId": f.EXAMPLE_LINKNET_DESTINATION_ID,
    },
    example_output={
        "status": "scheduled",
        "warnings": ['unknown attribute "size" on <photoapp-hashtag> was ignored'],
    },
)

STATUS_PHOTOAPP_STORY = f.post_status_procedure(
    _STORY,
    name="status-photoapp-story",
    summary="Returns the status and preview of a story post.",
    doc=(
        "Returns where a story post stands: `scheduled`, `executed`, `failed` (with "
        "`errorMessage`) or `canceled`. `previewUrl` is a JPEG of the rendered design "
        "(the full-size image for image designs, a 360x640 first frame for video designs), "
        "present once rendering finished.\n\n"
        "There is no fixed time from `scheduled` to `executed`: keep polling (or receive "
        "the `photoapp_story_post.status_changed` webhook) until `executed` or `failed`."
    ),
    values=f.STORY_STATUSES,
    extra={"previewUrl": f.link("JPEG preview; present once rendering finished.")},
    example_output={
        "status": "executed",
        "previewUrl": f"https://media.storypost.example.com/previews/{_STORY_UUID}.jpg",
    },
)

CANCEL_PHOTOAPP_STORY = f.uuid_procedure(
    _STORY,
    name="cancel-photoapp-story",
    summary="Cancels a scheduled story post.",
    doc=(
        "Cancels a story post that is still `scheduled`; it becomes `canceled` and the "
        f"webhook event `photoapp_story_post.status_changed` is sent.\n\n{f.cancel_doc('story')}"
    ),
    properties={
        "status": f.status(
            "`canceled` on success (executed and failed stories answer with an error).",
            (PostStatus.CANCELED, PostStatus.EXECUTED, PostStatus.FAILED),
        )
    },
    example_output={"status": "canceled"},
)

SCHEDULE_PHOTOAPP_REEL = f.schedule_procedure(
    _REEL,
    name="schedule-photoapp-reel",
    summary="Renders a video page and schedules it as a reel on a connected photoapp account.",
    doc=(
        "Renders the page into a video and schedules it as a reel on the connected photoapp "
        "account `photoappUsername`. The `<photoapp-story>` element needs a `src` pointing "
        "to a video of up to 3 minutes; reels have no native stickers. The reel is "
        "published at `date`, or as soon as rendering is complete when `date` is omitted; "
        "poll `status-photoapp-reel`.\n\n"
        "`caption` (at most 2200 characters) is published with the reel. `shareToFeed` "
        "(default false) also shows it in the feed; `shareToLinknet` (default true) lets "
        "the linknet network recommend it; `aiGenerated` marks it as AI-generated.\n\n"
        f"{f.RENDER_INPUT_DOC}\n\n"
        f"{f.VIDEO_DOC.format(duration='0.5 to 180 seconds long')}\n\n"
        f"{f.RETRY_DOC}"
    ),
    properties={
        "photoappUsername": f.photoapp_username(),
        "reelPostUuid": f.caller_uuid("reel post"),
        "caption": f.string("Caption published with the reel.", max_length=2200),
        "date": f.date_time("When to publish; omitted means once rendering is complete."),
        "shareToFeed": f.boolean("Also show the reel in the feed.", default=False),
        "aiGenerated": f.boolean("Marks the reel as AI-generated."),
        "shareToLinknet": f.boolean(
            "Let the linknet network recommend the reel.",
            default=vocabulary.REEL_SHARE_TO_LINKNET_DEFAULT,
        ),
    },
    required=("photoappUsername", "reelPostUuid"),
    example_input={
        "html": f.EXAMPLE_VIDEO_HTML,
        "photoappUsername": f.EXAMPLE_PHOTOAPP_USERNAME,
        "reelPostUuid": _REEL_UUID,
        "caption": "How our summer collection is made #behindthescenes",
        "date": "2026-07-02T17:00:00Z",
        "shareToFeed": True,
    },
)

STATUS_PHOTOAPP_REEL = f.post_status_procedure(
    _REEL,
    name="status-photoapp-reel",
    summary="Returns the status of a reel post.",
    doc=(
        "Returns where a reel post stands: `scheduled` (queued, or the video is still "
        "rendering), `in-progress` (due and being processed), `executed`, `failed` (with "
        "`errorMessage`) or `canceled`."
    ),
    values=f.POST_STATUSES,
    example_output={
        "status": "failed",
        "errorMessage": "photoapp rejected the video: the account is temporarily restricted",
    },
)

CANCEL_PHOTOAPP_REEL = f.final_status_procedure(
    _REEL,
    name="cancel-photoapp-reel",
    summary="Cancels a scheduled reel post.",
    doc=(
        "Cancels a reel post that is still `scheduled`; it becomes `canceled`.\n\n"
        "**Idempotency:** canceling an already canceled reel succeeds again.\n\n"
        "**Errors:** once posting started (`in-progress`), succeeded (`executed`) or failed "
        "(`failed`), an expected error (HTTP 400) is returned and the reel is unchanged."
    ),
    final="canceled",
)

PROCEDURES: tuple[Procedure, ...] = (
    # Take queueName and repeat too (catalog/queues.py, catalog/series.py).
    repeated(queued(SCHEDULE_PHOTOAPP_STORY), ()),
    STATUS_PHOTOAPP_STORY,
    CANCEL_PHOTOAPP_STORY,
    repeated(queued(SCHEDULE_PHOTOAPP_REEL), ("caption",)),
    STATUS_PHOTOAPP_REEL,
    CANCEL_PHOTOAPP_REEL,
)

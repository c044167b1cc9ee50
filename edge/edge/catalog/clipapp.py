"""Procedure records of clipapp posts: schedule, status and cancel."""

from __future__ import annotations

from edge.catalog import fragments as f
from edge.catalog.model import Procedure
from edge.catalog.queues import queued
from edge.catalog.series import repeated

_POST_UUID = "54ba01fa-7f90-4e90-95c7-961c8cd5ceee"
_POST = f.Subject("clipappPostUuid", "clipapp post", _POST_UUID, "clipapp")


def _flag(description: str) -> f.Schema:
    return f.boolean(description, default=False)


SCHEDULE_CLIPAPP_POST = f.schedule_procedure(
    _POST,
    name="schedule-clipapp-post",
    summary="Renders a page and schedules it as a post on a directly connected clipapp account.",
    doc=(
        "Renders the page (a video post when the design has video, a photo post otherwise) "
        "and schedules it on the directly connected clipapp account `clipappAccountId` "
        "(see `list-clipapp-accounts`). It is published at `date`, or as soon as rendering "
        "is complete when `date` is omitted; poll `status-clipapp-post`. Native sticker "
        "metadata is not sent to the network.\n\n"
        "- `title` and `description`: at most 2200 characters each; a photo post's title "
        "is at most 90 characters, so use `description` for longer text.\n"
        "- `privacyLevel`: `PUBLIC_TO_EVERYONE`, `MUTUAL_FOLLOW_FRIENDS`, "
        "`FOLLOWER_OF_CREATOR` or `SELF_ONLY` (default).\n"
        "- `videoCoverTimestampMs`: the frame used as cover; the first frame when omitted "
        "or invalid.\n"
        "- `disableDuet`, `disableComment`, `disableStitch`; the disclosure toggles "
        "`brandOrganic` and `brandedContent`; `aiGenerated`; `autoAudio` lets the network "
        "add audio to photo posts.\n\n"
        f"{f.RENDER_INPUT_DOC}\n\n"
        + f.VIDEO_DOC.format(
            duration="at most 600 seconds long (the network may allow less for some "
            "accounts; the post then fails when published)"
        )
        + f"\n\n{f.RETRY_DOC}"
    ),
    properties={
        "clipappAccountId": f.clipapp_account_id(
            "The clipapp account, as listed by `list-clipapp-accounts`."
        ),
        "clipappPostUuid": f.caller_uuid("clipapp post"),
        "date": f.date_time("When to publish; omitted means once rendering is complete."),
        "title": f.string("Title; at most 90 characters for photo posts.", max_length=2200),
        "description": f.string("Description; use it for longer text.", max_length=2200),
        "privacyLevel": f.enum(
            "Who can watch the post.",
            f.CLIPAPP_PRIVACY_LEVELS,
            default=f.CLIPAPP_DEFAULT_PRIVACY_LEVEL,
        ),
        "videoCoverTimestampMs": f.integer(
            "Milliseconds into the video of the cover frame; the first frame when "
            "omitted or invalid.",
            minimum=0,
        ),
        "disableDuet": _flag("Disable duets."),
        "disableComment": _flag("Disable comments."),
        "disableStitch": _flag("Disable stitches."),
        "brandOrganic": _flag("Disclose the post as promoting the creator's own brand."),
        "brandedContent": _flag("Disclose the post as paid partnership content."),
        "aiGenerated": _flag("Mark the post as AI-generated."),
        "autoAudio": _flag("Let the network add audio to a photo post."),
    },
    required=("clipappAccountId", "clipappPostUuid"),
    example_input={
        "html": f.EXAMPLE_VIDEO_HTML,
        "clipappAccountId": f.EXAMPLE_CLIPAPP_ACCOUNT_ID,
        "clipappPostUuid": _POST_UUID,
        "date": "2026-07-03T18:00:00Z",
        "title": "Behind the scenes of our summer collection",
        "privacyLevel": "PUBLIC_TO_EVERYONE",
        "videoCoverTimestampMs": 1500,
        "disableDuet": True,
        "brandOrganic": True,
    },
)

STATUS_CLIPAPP_POST = f.post_status_procedure(
    _POST,
    name="status-clipapp-post",
    summary="Returns the status of a clipapp post.",
    doc=(
        "Returns where a clipapp post stands: `scheduled` (queued, or the media is still "
        "rendering), `in-progress` (due and being processed), `executed` (the network "
        "confirmed publishing), `failed` (with `errorMessage`) or `canceled`. "
        "`clipappStatus` is the last raw publish status the network returned, if any."
    ),
    values=f.POST_STATUSES,
    extra={"clipappStatus": f.string("Last raw publish status returned by the network.")},
    example_output={
        "status": "in-progress",
        "clipappStatus": "PROCESSING_UPLOAD",
    },
)

CANCEL_CLIPAPP_POST = f.final_status_procedure(
    _POST,
    name="cancel-clipapp-post",
    summary="Cancels a scheduled or in-progress clipapp post.",
    doc=(
        "Cancels a clipapp post that is `scheduled` or `in-progress`; it becomes "
        f"`canceled`.\n\n{f.cancel_doc('post')}"
    ),
    final="canceled",
)

PROCEDURES: tuple[Procedure, ...] = (
    # Takes queueName and repeat too (catalog/queues.py, catalog/series.py).
    repeated(queued(SCHEDULE_CLIPAPP_POST), ("title", "description")),
    STATUS_CLIPAPP_POST,
    CANCEL_CLIPAPP_POST,
)

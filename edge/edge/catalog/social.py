"""Procedure records of social posts on any connected platform: schedule, status and cancel."""

from __future__ import annotations

from edge.catalog import fragments as f
from edge.catalog.model import Procedure
from edge.catalog.queues import queued
from edge.catalog.series import repeated

_POST_UUID = "6e3ad904-5df2-4afb-a744-18c526bb4e39"
_POST = f.Subject("socialPostUuid", "social post", _POST_UUID, "social")
_ACCOUNT_ID = "sa_01jz8m0t6b1w"
# The longest caption any supported platform takes; each post type shortens it further.
TEXT_MAX_CHARS = 63_206


def _account_id() -> f.Schema:
    return f.social_account_id("The account, as `socialAccountId` of `list-social-accounts`.")


SCHEDULE_SOCIAL_POST = f.schedule_procedure(
    _POST,
    name="schedule-social-post",
    summary="Renders a page and schedules it as a post on any connected social account.",
    doc=(
        "Renders the page and schedules it as a post of type `postType` on the account "
        "`socialAccountId` (both from `list-social-accounts`, where the post type names "
        "`schedule-social-post` as its procedure). A design without video renders as an "
        "image and a design with video as a video; the post type must accept what the "
        "design renders (its `media`), or an expected error (HTTP 400) is returned.\n\n"
        "- `text` is the caption, shortened to the post type's `maxCaptionLength`; some "
        "post types require it (`captionRequired`).\n"
        "- `options` is an object keyed by the option keys of the post type; an unknown key, "
        "a missing required option or a value the option's descriptor does not allow is "
        "rejected with HTTP 400.\n"
        "- `date` in the future: the post is `scheduled`, then published at `date`. No "
        "`date`, or a past one: it is `in-progress` at once and published as soon as "
        "rendering is complete.\n\n"
        "Outcomes (`executed` with `permalink` when the platform reports one, or `failed` "
        "with `errorMessage`) are read with `status-social-post` or received as the webhook "
        "event `social_post.status_changed`. A due post stays `in-progress` while the "
        "account has no positive credit balance.\n\n"
        f"{f.RENDER_INPUT_DOC} The post is scheduled anyway.\n\n"
        + f.VIDEO_DOC.format(
            duration="between the post type's `minDurationSeconds` and `maxDurationSeconds` "
            "(the source video itself must fit them)"
        )
        + "\n\n**Idempotency:** repeating a `socialPostUuid` returns success with the "
        "current status of the post, whatever the other parameters are (so `status` may be "
        "any state); a different `socialAccountId` for an existing UUID is an expected "
        "error (HTTP 400)."
    ),
    properties={
        "socialPostUuid": f.caller_uuid("social post"),
        "socialAccountId": _account_id(),
        "postType": f.post_type("One of the account's `postTypes[].postType`."),
        "text": f.string(
            "Caption, shortened to the post type's `maxCaptionLength`.",
            max_length=TEXT_MAX_CHARS,
        ),
        "options": {
            "type": "object",
            "description": (
                "Options of the post type, keyed by the option keys that "
                "`list-social-accounts` lists for it."
            ),
        },
        "date": f.date_time(
            "When to publish; omitted or past means as soon as rendering is complete."
        ),
    },
    required=("socialPostUuid", "socialAccountId", "postType"),
    example_input={
        "html": f.EXAMPLE_VIDEO_HTML,
        "socialPostUuid": _POST_UUID,
        "socialAccountId": _ACCOUNT_ID,
        "postType": "VIDEO",
        "text": "How our summer collection is made #behindthescenes",
        "options": {"privacyLevel": "PUBLIC_TO_EVERYONE", "disableComment": False},
        "date": "2026-07-04T12:00:00Z",
    },
    post_status=f.status(
        "`scheduled` for a future `date`, `in-progress` otherwise; a repeated UUID answers "
        "with the post's current status.",
        f.POST_STATUSES,
    ),
)

STATUS_SOCIAL_POST = f.post_status_procedure(
    _POST,
    name="status-social-post",
    summary="Returns the status and permalink of a social post.",
    doc=(
        "Returns where a social post stands: `scheduled` (the date has not come), "
        "`in-progress` (due: rendering, uploading or publishing), `executed` (with "
        "`permalink` when the platform reports one), `failed` (with `errorMessage`) or "
        "`canceled`. It also names the post's `socialAccountId`, `platform`, `postType` "
        "and `date`.\n\n"
        "The webhook event `social_post.status_changed` carries the same `status`, "
        "`errorMessage` and `permalink` as this procedure at the event's `occurredAt`."
    ),
    values=f.POST_STATUSES,
    extra={
        "permalink": f.link(
            "Link to the published post; present when executed and the platform reports one."
        ),
        "socialAccountId": _account_id(),
        "platform": f.platform("Uppercase platform name, as in `list-social-accounts`."),
        "postType": f.string("The post type it was scheduled with."),
        "date": f.date_time("When it is (or was) due."),
    },
    example_output={
        "status": "executed",
        "permalink": "https://clipapp.example/@sunnyshop/video/7391827364519283746",
        "socialAccountId": _ACCOUNT_ID,
        "platform": "CLIPAPP",
        "postType": "VIDEO",
        "date": "2026-07-04T12:00:00Z",
    },
)

CANCEL_SOCIAL_POST = f.final_status_procedure(
    _POST,
    name="cancel-social-post",
    summary="Cancels a scheduled or in-progress social post.",
    doc=(
        "Cancels a social post that is `scheduled` or `in-progress`; it becomes `canceled` "
        "and the webhook event `social_post.status_changed` is sent. A cancel in the last "
        "moments around the date may come too late to stop publication.\n\n"
        "**Busy:** while the post is being uploaded, or when the platform is unreachable, "
        "the answer is HTTP 429 and the post is not canceled until a retry succeeds: retry "
        f"after a minute.\n\n{f.cancel_doc('post')}"
    ),
    final="canceled",
)

PROCEDURES: tuple[Procedure, ...] = (
    # Takes queueName and repeat too (catalog/queues.py, catalog/series.py).
    repeated(queued(SCHEDULE_SOCIAL_POST), ("text",)),
    STATUS_SOCIAL_POST,
    CANCEL_SOCIAL_POST,
)

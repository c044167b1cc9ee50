"""Procedure records of planning: listing posts of every kind and moving a scheduled one."""

from __future__ import annotations

from edge.catalog import fragments as f
from edge.catalog import queues, series
from edge.catalog.model import Procedure
from storypost_runtime.vocabulary import PostKind

KINDS: tuple[str, ...] = tuple(PostKind)
LIST_LIMIT_MAX = 100
LIST_LIMIT_DEFAULT = 50
# A cursor is an opaque token of publish-svc's listing (a few hundred characters at most).
CURSOR_MAX_CHARS = 1024
_STORY_UUID = "bc604f8c-650a-46ed-8726-def3cdf9d0c0"
_SOCIAL_UUID = "6e3ad904-5df2-4afb-a744-18c526bb4e39"
_PHOTOAPP_ACCOUNT_ID = "sa_01jz8k4q2m7d"
_SOCIAL_ACCOUNT_ID = "sa_01jz8m0t6b1w"
_EXAMPLE_CURSOR = "eyJxIjoiM2Q1YjZhOTBmMWUyYzRkNyIsImF0IjoiMjAyNi0wNy0wMVQwOTozMDowMCswMDowMCJ9"


def _kind(description: str) -> f.Schema:
    return f.enum(description, KINDS)


def _social_account_id(description: str) -> f.Schema:
    return f.social_account_id(description)


def _listed_post() -> f.Schema:
    return f.output_object(
        {
            "kind": _kind(
                "The post's kind: `story` and `reel` (photoapp), `clipapp`, `social`; with "
                "`uuid`, what the kind's status, cancel and `reschedule-post` take."
            ),
            "uuid": f.uuid(
                "The post's UUID (its `storyPostUuid`, `reelPostUuid`, `clipappPostUuid` or "
                "`socialPostUuid`)."
            ),
            "status": f.status("Where the post stands.", f.POST_STATUSES),
            "date": f.date_time(
                "The post's date; for a post scheduled without one, when it was accepted."
            ),
            "socialAccountId": _social_account_id(
                "The connected account it posts to, as `list-social-accounts` names it "
                "(every kind)."
            ),
            "seriesUuid": f.uuid("The series the post belongs to; absent when none."),
            "previewUrl": f.link(
                "A JPEG preview, when one is stored with the post (a published story); "
                "`status-photoapp-story` gives a fresh one for a story once rendered."
            ),
            "errorMessage": f.error_message(),
            "permalink": f.link(
                "Link to the published post; present when executed and the platform reports one."
            ),
        },
        ("kind", "uuid", "status", "date", "socialAccountId"),
    )


LIST_POSTS = Procedure(
    name="list-posts",
    summary="Lists the organization's posts of every kind, newest date first, a page at a time.",
    doc=(
        "Lists the posts of the organization (stories, reels, clipapp and social posts), "
        "newest `date` first (posts sharing a date in a fixed order), at most `limit` per "
        "page. Every filter is optional and they combine: `kind`, `status`, "
        "`socialAccountId` (the connected account, as `list-social-accounts` names it, for "
        "every kind), `seriesUuid`, and `from` (inclusive) / `to` (exclusive) bounds on the "
        "post's date. A post scheduled without a date is listed at the time it was "
        "accepted.\n\n"
        "**Paging:** when more posts follow, the answer carries `nextCursor`; pass it as "
        "`cursor`, with the same filters, for the next page. A cursor names where the last "
        "page stopped (a date and a post), not a position, so posts added or changed "
        "meanwhile never make a page repeat or skip the posts that were already there. A "
        "cursor of other filters, or one this API did not make, is an expected error (HTTP "
        "400) naming `cursor`.\n\n"
        "`previewUrl` is given when stored with the post; `status-photoapp-story` answers a "
        "fresh preview of a story."
    ),
    input_schema=f.input_object(
        {
            "kind": _kind("Only posts of this kind."),
            "status": f.status("Only posts in this status.", f.POST_STATUSES),
            "socialAccountId": _social_account_id(
                "Only posts to this connected account (`socialAccountId` of "
                "`list-social-accounts`)."
            ),
            "from": f.date_time("Only posts whose date is at or after this instant."),
            "to": f.date_time(
                "Only posts whose date is before this instant (exclusive); after `from`."
            ),
            "seriesUuid": f.uuid("Only posts of this series."),
            "limit": {
                **f.integer("Posts per page.", minimum=1, maximum=LIST_LIMIT_MAX),
                "default": LIST_LIMIT_DEFAULT,
            },
            "cursor": f.string(
                "`nextCursor` of the previous page (with the same filters); omitted for the "
                "newest page.",
                min_length=1,
                max_length=CURSOR_MAX_CHARS,
            ),
        }
    ),
    output_schema=f.output_object(
        {
            "posts": f.array_of(_listed_post(), "The page's posts, newest date first."),
            "nextCursor": f.string(
                "Pass it as `cursor` for the next (older) page; absent on the last page.",
                min_length=1,
            ),
        },
        ("posts",),
    ),
    example_input={"socialAccountId": _PHOTOAPP_ACCOUNT_ID, "status": "scheduled", "limit": 2},
    example_output={
        "posts": [
            {
                "kind": "story",
                "uuid": _STORY_UUID,
                "status": "scheduled",
                "date": "2026-07-01T09:30:00Z",
                "socialAccountId": _PHOTOAPP_ACCOUNT_ID,
            },
            {
                "kind": "reel",
                "uuid": "a238d129-05ad-4b23-aafe-f508e44205d6",
                "status": "scheduled",
                "date": "2026-06-30T17:00:00Z",
                "socialAccountId": _PHOTOAPP_ACCOUNT_ID,
            },
        ],
        "nextCursor": _EXAMPLE_CURSOR,
    },
    tags=("planning",),
)

RESCHEDULE_POST = Procedure(
    name="reschedule-post",
    summary="Moves a scheduled post to another date.",
    doc=(
        "Moves a post that is still `scheduled`, and not being published, to `date`, or to "
        "the earliest free slot of the queue `queueName` of its account, or, given both, to "
        "that queue's slot at `date` (one of its free slots, as `preview-queue` lists them: "
        "any other `date` is an expected error, HTTP 400 naming `date`). The post holds "
        "the slot it moves to, and gives back the one it held. Neither is an expected error "
        "(HTTP 400 naming both). The "
        "checks of scheduling apply again: a `date` more than 60 minutes in the past is "
        "refused (the post could never be published in time), a social post's `date` must "
        "be in the future (a social post is `scheduled` only while its date is ahead), and "
        "the account must still be connected. The 60-minute window then counts from the new "
        "date. The post's status event (`photoapp_story_post.status_changed`, "
        "`social_post.status_changed`, …) is sent again with `status: scheduled` and the "
        "new `date`.\n\n"
        "**Errors:** a post that is no longer `scheduled` (`in-progress`, `executed`, "
        "`failed`, `canceled`), or that a scheduler is publishing right now, is an expected "
        "error (HTTP 400) and is unchanged; so is an unknown post. A reschedule and the "
        "post's publication never both happen: whichever comes first wins.\n\n"
        "**Idempotency:** moving a post again to the same `date` succeeds again (its event "
        "is sent again)."
    ),
    input_schema=f.input_object(
        {
            "kind": _kind("The post's kind."),
            "uuid": f.uuid("The post's UUID (as its schedule call named it)."),
            "date": f.date_time("The new date; with `queueName`, one of that queue's free slots."),
            "queueName": f.string(
                "A queue of the post's account: the post takes its slot at `date`, or "
                "its earliest free slot when `date` is not given.",
                min_length=1,
                max_length=queues.NAME_MAX_CHARS,
            ),
        },
        ("kind", "uuid"),
    ),
    output_schema=f.output_object(
        {
            "kind": _kind("The post's kind."),
            "uuid": f.uuid("The post's UUID."),
            "status": f.status("Always `scheduled`.", ("scheduled",)),
            "date": f.date_time("The new date, in UTC."),
        },
        ("kind", "uuid", "status", "date"),
    ),
    example_input={"kind": "social", "uuid": _SOCIAL_UUID, "date": "2026-07-05T18:00:00+02:00"},
    example_output={
        "kind": "social",
        "uuid": _SOCIAL_UUID,
        "status": "scheduled",
        "date": "2026-07-05T16:00:00Z",
    },
    tags=("planning",),
)

# The queues' and the series' procedures follow (edge/catalog/queues.py, series.py).
PROCEDURES: tuple[Procedure, ...] = (
    LIST_POSTS,
    RESCHEDULE_POST,
    *queues.PROCEDURES,
    *series.PROCEDURES,
)

"""Procedure records of insights: a published post's figures, an account's figures per day."""

from __future__ import annotations

from edge.catalog import fragments as f
from edge.catalog.model import Procedure
from storypost_runtime.vocabulary import PostKind

KINDS: tuple[str, ...] = tuple(PostKind)
COLLECTION_STATES = ("collecting", "done", "stopped")
POST_METRICS_DOC = (
    "Metric names as the platform reports them: `views`, `reach`, `likes`, `comments`, "
    "`shares`, `saves`; stories: `impressions`, `reach`, `replies`, `taps_forward`, "
    "`taps_back`, `exits`. A platform may report fewer."
)
_EXAMPLE_UUID = "0d0c9a38-44c4-4c2b-9bd2-7b1f3c2e8a51"
_EXAMPLE_SOCIAL_ACCOUNT_ID = "sa_8f14e45fceea167a"
_EXAMPLE_METRICS = {
    "impressions": 1304,
    "reach": 912,
    "replies": 13,
    "taps_forward": 404,
    "taps_back": 52,
    "exits": 91,
}


def _metrics(description: str) -> f.Schema:
    return {
        "type": "object",
        "additionalProperties": {"type": "integer", "minimum": 0},
        "description": description,
    }


def _day(description: str) -> f.Schema:
    return {"type": "string", "format": "date", "description": description}


def _point() -> f.Schema:
    return f.output_object(
        {
            "collectedAt": f.date_time("When the platform was read."),
            "metrics": _metrics(POST_METRICS_DOC),
        },
        ("collectedAt", "metrics"),
    )


GET_POST_INSIGHTS = Procedure(
    name="get-post-insights",
    summary="Returns what the platform reports about a published post: views, reach, likes.",
    doc=(
        "The insights of one executed post (any kind), as its platform reports them. "
        "storypost reads them right after the post is published, then 1 hour, 6 hours, 24 "
        "hours, 7 days and 30 days later; a story at once, after 1, 6 and 23 hours (a "
        "story's insights are only available during its 24 hours). `metrics` holds the "
        "latest reading, `history` every reading kept (90 days), oldest first.\n\n"
        "`refresh: true` reads the platform at once first, at most once a minute per post "
        "(a repeat within the minute answers the stored figures); when the platform "
        "rate-limits the reading the call answers 429 with `Retry-After`.\n\n"
        "A post of another organization, or no post at all, answers 400 `… not found`; a "
        "post not executed yet answers 400. `collectionState` is `stopped` with "
        "`stoppedReason` when the account was disconnected (insights are no longer "
        "collected); `lastError` is the platform's latest refusal while a reading is "
        "retried later."
    ),
    input_schema=f.input_object(
        {
            "kind": f.enum("The post's kind.", KINDS),
            "uuid": f.uuid("The post's UUID (`storyPostUuid`, `reelPostUuid`, …)."),
            "refresh": f.boolean("Read the platform now before answering.", default=False),
        },
        ("kind", "uuid"),
    ),
    output_schema=f.output_object(
        {
            "uuid": f.uuid("The post's UUID."),
            "kind": f.enum("The post's kind.", KINDS),
            "collectedAt": f.date_time("When `metrics` were read; absent before the first."),
            "metrics": _metrics(f"The latest figures (empty before the first). {POST_METRICS_DOC}"),
            "history": f.array_of(_point(), "Every reading kept (90 days), oldest first."),
            "collectionState": f.enum(
                "`collecting` (more readings are planned), `done` or `stopped`.",
                COLLECTION_STATES,
            ),
            "nextCollectionAt": f.date_time("When the next reading is planned."),
            "stoppedReason": f.string("Why the collection stopped."),
            "lastError": f.string("The platform's latest refusal, while it is retried."),
        },
        ("uuid", "kind", "metrics", "history", "collectionState"),
    ),
    example_input={"kind": "story", "uuid": _EXAMPLE_UUID},
    example_output={
        "uuid": _EXAMPLE_UUID,
        "kind": "story",
        "collectedAt": "2026-11-23T16:00:04.120Z",
        "metrics": _EXAMPLE_METRICS,
        "history": [
            {
                "collectedAt": "2026-11-23T10:00:03.870Z",
                "metrics": {
                    "impressions": 188,
                    "reach": 131,
                    "replies": 1,
                    "taps_forward": 58,
                    "taps_back": 7,
                    "exits": 13,
                },
            },
            {"collectedAt": "2026-11-23T16:00:04.120Z", "metrics": _EXAMPLE_METRICS},
        ],
        "collectionState": "collecting",
        "nextCollectionAt": "2026-11-24T09:00:00Z",
    },
    tags=("insights",),
)

LIST_ACCOUNT_INSIGHTS = Procedure(
    name="list-account-insights",
    summary="Lists a connected account's figures per day: followers, and what its posts gained.",
    doc=(
        "One row per day (UTC) from `from` to `to` (both included, at most 366 days) that "
        "has figures, its `metrics`: `followers` (the platform's count that day, when it was "
        "read) and what "
        "the account's posts gained that day across every reading (`views`, `reach`, "
        "`likes`, `comments`, `shares`, `saves`, stories' `impressions`, `replies`…). Days "
        "are kept for good (the raw readings for 90 days). An account of another "
        "organization has no rows."
    ),
    input_schema=f.input_object(
        {
            "socialAccountId": f.social_account_id(
                "The account, as `list-social-accounts` lists it."
            ),
            "from": _day("The first day, YYYY-MM-DD (UTC)."),
            "to": _day("The last day, YYYY-MM-DD (UTC), included."),
        },
        ("socialAccountId", "from", "to"),
    ),
    output_schema=f.output_object(
        {
            "socialAccountId": f.social_account_id("The account."),
            "days": f.array_of(
                f.output_object(
                    {
                        "day": _day("The day (UTC)."),
                        "metrics": _metrics(
                            "`followers` that day (when read) and what the account's posts "
                            "gained that day: `views`, `reach`, `likes`, `impressions`…"
                        ),
                    },
                    ("day", "metrics"),
                ),
                "The days with figures, oldest first.",
            ),
        },
        ("socialAccountId", "days"),
    ),
    example_input={
        "socialAccountId": _EXAMPLE_SOCIAL_ACCOUNT_ID,
        "from": "2026-11-22",
        "to": "2026-11-24",
    },
    example_output={
        "socialAccountId": _EXAMPLE_SOCIAL_ACCOUNT_ID,
        "days": [
            {
                "day": "2026-11-23",
                "metrics": {"followers": 8214, "impressions": 1304, "reach": 912},
            },
            {
                "day": "2026-11-24",
                "metrics": {"followers": 8231, "impressions": 402, "reach": 120},
            },
        ],
    },
    tags=("insights",),
)

PROCEDURES: tuple[Procedure, ...] = (GET_POST_INSIGHTS, LIST_ACCOUNT_INSIGHTS)

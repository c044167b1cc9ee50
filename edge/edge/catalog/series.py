"""Procedure records of recurring posts (series): the `repeat` that every schedule procedure
takes (`repeated`), `status-series` and `cancel-series`."""

from __future__ import annotations

import dataclasses

from edge.catalog import fragments as f
from edge.catalog.model import Procedure
from storypost_runtime.vocabulary import SeriesStatus

SERIES_STATUSES: tuple[str, ...] = tuple(SeriesStatus)
# `PnD` or `PnW`; publish-svc also checks the range P1D to P52W (a 400 naming repeat.every).
EVERY_PATTERN = r"^P[1-9][0-9]{0,3}[DW]$"
COUNT_MIN = 2
COUNT_MAX = 365
VARIANTS_MAX = 10
MAX_ACTIVE = 10
_SERIES_UUID = "3f1c9a52-7d0e-5b6a-9c41-0e8d2b7f6a13"
_FIRST_UUID = "bc604f8c-650a-46ed-8726-def3cdf9d0c0"
_SECOND_UUID = "0b9d1c7e-4a2f-5e63-8d10-6f5b3a2c9e47"

REPEAT_DOC = (
    "**Recurring posts:** `repeat` makes the post the first of a series: `every` (an ISO "
    "8601 duration in whole days or weeks, `P1D` to `P52W`; omitted with `queueName`, when "
    f"each occurrence takes the queue's next free slot), and `count` ({COUNT_MIN} to "
    f"{COUNT_MAX} posts, this one included) or `until` (no post after it). The answer adds "
    "`seriesUuid`; occurrence n (1, 2, ...) after this post has the UUID "
    "`uuid5(seriesUuid, str(n))`, which the status procedure answers once it is created "
    "(at most 24 hours before its date). `variants` rotate in order over the occurrences "
    "after the first. A page given by `url` is rendered again for each occurrence; one "
    f"given by `html` is rendered once. At most {MAX_ACTIVE} active series per account "
    "(HTTP 400 naming `repeat` beyond). The same call again answers the same `seriesUuid` "
    "and creates nothing. `status-series` and `cancel-series` follow the series."
)


def _series_uuid(description: str) -> f.Schema:
    return f.uuid(description)


def _repeat(variant_fields: tuple[str, ...]) -> f.Schema:
    properties: f.Schema = {
        "every": {
            "type": "string",
            "pattern": EVERY_PATTERN,
            "description": (
                "ISO 8601 duration between posts, whole days or weeks (`P1D` to `P52W`); "
                "omitted with `queueName`: each post takes the queue's next free slot."
            ),
        },
        "count": f.integer(
            "How many posts in all, this one included (not with `until`).",
            minimum=COUNT_MIN,
            maximum=COUNT_MAX,
        ),
        "until": f.date_time("No post after this instant (not with `count`)."),
    }
    if variant_fields:
        variant = f.input_object(
            {name: f.string(f"The occurrence's `{name}`.") for name in variant_fields}
        )
        variant["minProperties"] = 1
        variant["description"] = "Text fields replacing the call's for one occurrence."
        properties["variants"] = {
            **f.array_of(variant, "Rotated in order over the posts after the first."),
            "minItems": 1,
            "maxItems": VARIANTS_MAX,
        }
    schema = f.input_object(properties)
    schema["description"] = "Repeats the post as a series (recurring posts)."
    return schema


def repeated(procedure: Procedure, variant_fields: tuple[str, ...]) -> Procedure:
    """A schedule procedure that also takes `repeat` and then answers `seriesUuid`."""
    inputs = dict(procedure.input_schema)
    inputs["properties"] = {**inputs["properties"], "repeat": _repeat(variant_fields)}
    outputs = dict(procedure.output_schema)
    outputs["properties"] = {
        **outputs["properties"],
        "seriesUuid": _series_uuid("The series the post starts; only with `repeat`."),
    }
    return dataclasses.replace(
        procedure,
        doc=f"{procedure.doc}\n\n{REPEAT_DOC}",
        input_schema=inputs,
        output_schema=outputs,
    )


def _series_output() -> f.Schema:
    occurrence = f.output_object(
        {
            "uuid": f.uuid("The post's UUID (its status procedure takes it)."),
            "date": f.date_time("The post's date."),
            "status": f.status("Where the post stands.", f.POST_STATUSES),
        },
        ("uuid", "date", "status"),
    )
    return f.output_object(
        {
            "seriesUuid": _series_uuid("The series."),
            "status": f.status(
                "`active` while posts are still to be created, `finished` once the last "
                "one is, `canceled` after `cancel-series`.",
                SERIES_STATUSES,
            ),
            "occurrences": f.array_of(occurrence, "The series' posts created so far, in order."),
            "nextDate": f.date_time(
                "The date of the next post not created yet; absent when none is planned or "
                "it takes a queue's slot when created."
            ),
        },
        ("seriesUuid", "status", "occurrences"),
    )


_EXAMPLE = {
    "seriesUuid": _SERIES_UUID,
    "status": "active",
    "occurrences": [
        {"uuid": _FIRST_UUID, "date": "2026-07-01T09:30:00Z", "status": "executed"},
        {"uuid": _SECOND_UUID, "date": "2026-07-08T09:30:00Z", "status": "scheduled"},
    ],
    "nextDate": "2026-07-15T09:30:00Z",
}

STATUS_SERIES = Procedure(
    name="status-series",
    summary="Returns where a series of recurring posts stands.",
    doc=(
        "Returns a series (started by a schedule procedure given `repeat`): its status, its "
        "posts created so far with their dates and statuses, and the date of the next one. "
        "Each post is created at most 24 hours before its date. An occurrence that could not "
        "be created (the account was disconnected meanwhile) is listed as `failed`.\n\n"
        "**Errors:** an unknown series is an expected error (HTTP 400)."
    ),
    input_schema=f.input_object({"seriesUuid": _series_uuid("The series.")}, ("seriesUuid",)),
    output_schema=_series_output(),
    example_input={"seriesUuid": _SERIES_UUID},
    example_output=_EXAMPLE,
    tags=("planning",),
)

CANCEL_SERIES = Procedure(
    name="cancel-series",
    summary="Stops a series and cancels its posts not yet started.",
    doc=(
        "Stops the series (no further post is created) and cancels each of its posts that is "
        "still `scheduled`; published posts, and those being published, are kept. The answer "
        "is the series as `status-series` gives it, `canceled`.\n\n"
        "**Idempotency:** canceling a canceled series succeeds again.\n\n"
        "**Errors:** an unknown series is an expected error (HTTP 400)."
    ),
    input_schema=f.input_object({"seriesUuid": _series_uuid("The series.")}, ("seriesUuid",)),
    output_schema=_series_output(),
    example_input={"seriesUuid": _SERIES_UUID},
    example_output={
        "seriesUuid": _SERIES_UUID,
        "status": "canceled",
        "occurrences": [
            {"uuid": _FIRST_UUID, "date": "2026-07-01T09:30:00Z", "status": "executed"},
            {"uuid": _SECOND_UUID, "date": "2026-07-08T09:30:00Z", "status": "canceled"},
        ],
    },
    tags=("planning",),
)

PROCEDURES: tuple[Procedure, ...] = (STATUS_SERIES, CANCEL_SERIES)

"""Procedure records of posting queues (set, list, preview, delete), and the `queueName` that
every schedule procedure takes (`queued`)."""

from __future__ import annotations

import dataclasses

from edge.catalog import fragments as f
from edge.catalog.model import Procedure

WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
TIME_PATTERN = r"^([01][0-9]|2[0-3]):[0-5][0-9]$"
NAME_MAX_CHARS = 64
DEFAULT_NAME = "default"
MAX_SLOTS = 100
MAX_QUEUES = 20
PREVIEW_MAX = 50
PREVIEW_DEFAULT = 10
_ACCOUNT_ID = "sa_01jz8k4q2m7d"
_SLOTS = [
    {"weekday": "monday", "time": "09:30"},
    {"weekday": "wednesday", "time": "09:30"},
    {"weekday": "friday", "time": "17:00"},
]
_NEXT = [
    "2026-07-01T07:30:00Z",
    "2026-07-03T15:00:00Z",
    "2026-07-06T07:30:00Z",
    "2026-07-08T07:30:00Z",
    "2026-07-10T15:00:00Z",
]
SLOTS_DOC = (
    "Slots are local times in the queue's `timeZone`: a local time that does not exist "
    "(clocks springing forward) is taken at the first minute after the gap, one that exists "
    "twice (clocks falling back) once, at its first occurrence. Dates are answered in UTC."
)


def _account_id(description: str) -> f.Schema:
    return f.social_account_id(description)


def _queue_name(description: str, *, default: bool = False) -> f.Schema:
    schema = f.string(description, min_length=1, max_length=NAME_MAX_CHARS)
    if default:
        schema["default"] = DEFAULT_NAME
    return schema


def _slot() -> f.Schema:
    return {
        "type": "object",
        "properties": {
            "weekday": f.enum("Day of the week.", WEEKDAYS),
            "time": {
                "type": "string",
                "pattern": TIME_PATTERN,
                "description": "Local time of day, `HH:MM` (00:00 to 23:59).",
            },
        },
        "required": ["weekday", "time"],
        "additionalProperties": False,
        "description": "A weekly slot.",
    }


def _slots(description: str) -> f.Schema:
    return {**f.array_of(_slot(), description), "minItems": 1, "maxItems": MAX_SLOTS}


def _dates(description: str) -> f.Schema:
    return f.array_of(f.date_time("A slot, in UTC."), description)


def _queue_properties() -> f.Schema:
    return {
        "socialAccountId": _account_id("The connected account the queue posts to."),
        "queueName": _queue_name("The queue's name, unique per account."),
        "timeZone": f.string("IANA time zone name the slots are in.", min_length=1),
        "slots": f.array_of(_slot(), "The weekly slots, Monday first, by time."),
        "createdAt": f.date_time("When it was first set."),
        "updatedAt": f.date_time("When it was last set."),
    }


_QUEUE_REQUIRED = ("socialAccountId", "queueName", "timeZone", "slots")
_EXAMPLE_QUEUE = {
    "socialAccountId": _ACCOUNT_ID,
    "queueName": DEFAULT_NAME,
    "timeZone": "Europe/Berlin",
    "slots": _SLOTS,
    "createdAt": "2026-06-30T10:00:00Z",
    "updatedAt": "2026-06-30T10:00:00Z",
}

SET_QUEUE = Procedure(
    name="set-queue",
    summary="Creates or replaces a posting queue of a connected account.",
    doc=(
        "A queue is a named set of weekly slots of one connected account "
        "(`socialAccountId` of `list-social-accounts`) in a time zone (an IANA name such as "
        "`Europe/Berlin`). A schedule procedure given `queueName` instead of `date` posts at "
        "the queue's earliest free slot far enough ahead for the page to be rendered. Setting "
        "a queue again under its name replaces its time zone and slots (posts that took its "
        "slots keep their dates). The answer names the queue's next 5 free slots.\n\n"
        f"{SLOTS_DOC}\n\n"
        f"**Limits:** 1 to {MAX_SLOTS} slots, at most {MAX_QUEUES} queues per account.\n\n"
        "**Errors:** an unknown time zone, a bad slot, too many slots or queues, or an "
        "account that is not connected to the organization is an expected error (HTTP 400, "
        "the validation body naming the field) and nothing is stored."
    ),
    input_schema=f.input_object(
        {
            "socialAccountId": _account_id("The connected account the queue posts to."),
            "queueName": _queue_name("The queue's name, unique per account.", default=True),
            "timeZone": f.string(
                "IANA time zone name, e.g. `Europe/Berlin`.", min_length=1, max_length=64
            ),
            "slots": _slots("The weekly slots (repeats count once)."),
        },
        ("socialAccountId", "timeZone", "slots"),
    ),
    output_schema=f.output_object(
        {
            **_queue_properties(),
            "nextSlots": _dates("The next 5 free slots, earliest first, in UTC."),
        },
        (*_QUEUE_REQUIRED, "nextSlots"),
    ),
    example_input={"socialAccountId": _ACCOUNT_ID, "timeZone": "Europe/Berlin", "slots": _SLOTS},
    example_output={**_EXAMPLE_QUEUE, "nextSlots": _NEXT},
    tags=("planning",),
)

LIST_QUEUES = Procedure(
    name="list-queues",
    summary="Lists the organization's posting queues.",
    doc=(
        "Lists the queues of the organization, of one connected account when "
        "`socialAccountId` is given, by account and name. Input: `{}` for every queue."
    ),
    input_schema=f.input_object({"socialAccountId": _account_id("Only this account's queues.")}),
    output_schema=f.list_output(
        "queues",
        f.output_object(_queue_properties(), _QUEUE_REQUIRED),
        "The queues, by account and name.",
    ),
    example_input={"socialAccountId": _ACCOUNT_ID},
    example_output={"queues": [_EXAMPLE_QUEUE]},
    tags=("planning",),
)

PREVIEW_QUEUE = Procedure(
    name="preview-queue",
    summary="The dates the next posts scheduled into a queue would get.",
    doc=(
        "Answers the queue's next `count` free slots, earliest first, in UTC: the dates the "
        "next posts scheduled into it would get, one after the other. Slots already taken by "
        "a post are left out (a canceled or failed post's slot is free again), and so are "
        "slots on a UTC day the account's daily post limit already fills.\n\n"
        f"{SLOTS_DOC}"
    ),
    input_schema=f.input_object(
        {
            "socialAccountId": _account_id("The queue's account."),
            "queueName": _queue_name("The queue's name."),
            "count": {
                **f.integer("How many slots.", minimum=1, maximum=PREVIEW_MAX),
                "default": PREVIEW_DEFAULT,
            },
        },
        ("socialAccountId", "queueName"),
    ),
    output_schema=f.output_object({"slots": _dates("The next free slots.")}, ("slots",)),
    example_input={"socialAccountId": _ACCOUNT_ID, "queueName": DEFAULT_NAME, "count": 3},
    example_output={"slots": _NEXT[:3]},
    tags=("planning",),
)

DELETE_QUEUE = Procedure(
    name="delete-queue",
    summary="Deletes a posting queue.",
    doc=(
        "Deletes the queue; posts that took its slots keep their dates. `deleted` says whether "
        "there was such a queue: deleting one that does not exist succeeds too (`deleted: "
        "false`), so a retry is safe."
    ),
    input_schema=f.input_object(
        {
            "socialAccountId": _account_id("The queue's account."),
            "queueName": _queue_name("The queue's name."),
        },
        ("socialAccountId", "queueName"),
    ),
    output_schema=f.output_object(
        {
            "socialAccountId": _account_id("The queue's account."),
            "queueName": _queue_name("The queue's name."),
            "deleted": f.boolean("Whether there was such a queue."),
        },
        ("socialAccountId", "queueName", "deleted"),
    ),
    example_input={"socialAccountId": _ACCOUNT_ID, "queueName": DEFAULT_NAME},
    example_output={"socialAccountId": _ACCOUNT_ID, "queueName": DEFAULT_NAME, "deleted": True},
    tags=("planning",),
)

PROCEDURES: tuple[Procedure, ...] = (SET_QUEUE, LIST_QUEUES, PREVIEW_QUEUE, DELETE_QUEUE)

QUEUE_DOC = (
    "**Queues:** instead of `date`, `queueName` names a queue of the post's account "
    "(`set-queue`): the post takes the queue's earliest free slot far enough ahead to be "
    "rendered, and the answer adds that `date`. Giving both is an expected error (HTTP 400 "
    "naming both); a repeated UUID takes no second slot."
)


def queued(procedure: Procedure) -> Procedure:
    """A schedule procedure that also takes `queueName` (instead of `date`) and then answers
    the post's `date`."""
    inputs = dict(procedure.input_schema)
    inputs["properties"] = {
        **inputs["properties"],
        "queueName": _queue_name(
            "A queue of the post's account to take the date from (not with `date`)."
        ),
    }
    outputs = dict(procedure.output_schema)
    outputs["properties"] = {
        **outputs["properties"],
        "date": f.date_time("The date the post took from its queue; only with `queueName`."),
    }
    return dataclasses.replace(
        procedure,
        doc=f"{procedure.doc}\n\n{QUEUE_DOC}",
        input_schema=inputs,
        output_schema=outputs,
    )

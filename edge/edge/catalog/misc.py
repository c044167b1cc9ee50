"""Procedure records that need no other service: generate-uuid."""

from __future__ import annotations

from edge.catalog import fragments as f
from edge.catalog.model import Procedure

GENERATE_UUID = Procedure(
    name="generate-uuid",
    summary="Returns a fresh random UUID to use as a client-chosen identifier.",
    doc=(
        "Returns a new random (version 4) UUID. Every resource of this API is named by a "
        "UUID that the caller chooses before the first call (`storyPostUuid`, "
        "`reelPostUuid`, `clipappPostUuid`, `socialPostUuid`, `draftUuid`, `tempBlobUuid`, "
        "`connectLinkUuid`); reusing it makes the schedule or create call idempotent. "
        "Callers that can generate UUIDs themselves do not need this procedure.\n\n"
        "Input: `{}`. Output: `uuid`. Nothing is stored, so retrying is always safe "
        "(each call returns a different UUID)."
    ),
    input_schema=f.input_object({}),
    output_schema=f.output_object(
        {"uuid": f.uuid("A new random UUID (version 4), lowercase.")}, ("uuid",)
    ),
    example_input={},
    example_output={"uuid": "c02eacbc-e1df-4fd9-a77a-6638dff92f2b"},
    tags=("utilities",),
)

PROCEDURES: tuple[Procedure, ...] = (GENERATE_UUID,)

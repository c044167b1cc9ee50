"""Shared JSON Schema pieces (draft 2020-12), doc paragraphs and record builders that the
procedure records are built from."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, TypedDict, Unpack

from edge.catalog.model import JsonObject, Procedure
from storypost_runtime import vocabulary
from storypost_runtime.vocabulary import PLATFORM_NAMES

# Every helper returns a fresh dict so that no two schemas share (and could mutate) one object.
Schema = dict[str, Any]

HTML_MAX_CHARS = 10_485_760
URL_MAX_CHARS = 2048
# `image/*`, `video/*` or `audio/*` with an RFC 6838 subtype (at most 127 characters).
CONTENT_TYPE_PATTERN = r"^(image|video|audio)/[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]{0,126}$"
PAGE_URL_PATTERN = r"^https?://"
PHOTOAPP_ID_PATTERN = r"^\d{1,50}$"
# Uppercase platform names of list-social-accounts (the list grows; never a closed enum).
PLATFORM_PATTERN = r"^[A-Z][A-Z0-9_]{0,31}$"
PLATFORMS = PLATFORM_NAMES
CLIPAPP_PRIVACY_LEVELS = vocabulary.CLIPAPP_PRIVACY_LEVELS
POST_STATUSES: tuple[str, ...] = tuple(vocabulary.PostStatus)
STORY_STATUSES: tuple[str, ...] = vocabulary.STORY_STATUSES
DRAFT_STATUSES: tuple[str, ...] = tuple(vocabulary.DraftStatus)
CLIPAPP_DEFAULT_PRIVACY_LEVEL = vocabulary.CLIPAPP_DEFAULT_PRIVACY_LEVEL


def uuid(description: str) -> Schema:
    """A client-chosen identifier: a string in the canonical 8-4-4-4-12 hex form."""
    return {"type": "string", "format": "uuid", "description": description}


def caller_uuid(thing: str) -> Schema:
    """The identifier a caller picks for what it creates."""
    return uuid(f"Caller-chosen UUID of the {thing}.")


def uuid_input(name: str, thing: str) -> Schema:
    """The request body of a procedure that names one thing by the UUID its caller chose."""
    return input_object({name: caller_uuid(thing)}, (name,))


def date_time(description: str) -> Schema:
    """An RFC 3339 (ISO 8601) date-time with an offset, e.g. `2026-07-01T09:30:00Z`."""
    return {"type": "string", "format": "date-time", "description": description}


def string(
    description: str, *, min_length: int | None = None, max_length: int | None = None
) -> Schema:
    """A string, optionally bounded in length (counted in Unicode code points)."""
    schema: Schema = {"type": "string"}
    if min_length is not None:
        schema["minLength"] = min_length
    if max_length is not None:
        schema["maxLength"] = max_length
    schema["description"] = description
    return schema


def boolean(description: str, *, default: bool | None = None) -> Schema:
    """A boolean flag; `default` documents what omitting it means."""
    schema: Schema = {"type": "boolean", "description": description}
    if default is not None:
        schema["default"] = default
    return schema


def enum(description: str, values: tuple[str, ...], *, default: str | None = None) -> Schema:
    """A string from a closed list of values."""
    schema: Schema = {"type": "string", "enum": list(values), "description": description}
    if default is not None:
        schema["default"] = default
    return schema


def integer(description: str, *, minimum: int, maximum: int | None = None) -> Schema:
    """An integer of at least `minimum` (and at most `maximum`, when given)."""
    schema: Schema = {"type": "integer", "minimum": minimum}
    if maximum is not None:
        schema["maximum"] = maximum
    schema["description"] = description
    return schema


def json_scalar(description: str) -> Schema:
    """A string, a number or a boolean (e.g. a value a post type's option takes)."""
    return {"type": ["string", "number", "boolean"], "description": description}


def platform(description: str) -> Schema:
    """An uppercase platform name: an open list (new platforms may appear), never an enum."""
    return {"type": "string", "pattern": PLATFORM_PATTERN, "description": description}


def link(description: str) -> Schema:
    """An absolute URL returned by the service."""
    return {"type": "string", "format": "uri", "description": description}


def warnings() -> Schema:
    """Render warnings: unknown elements or attributes and overlapping stickers."""
    return {
        "type": "array",
        "items": {"type": "string"},
        "description": (
            "Present only when there are warnings: unknown `<photoapp-*>` elements, unknown "
            "attributes on sticker elements, overlapping stickers. The call succeeded anyway."
        ),
    }


def error_message() -> Schema:
    """The reason a post failed."""
    return string("Why the post failed; present only when `status` is `failed`.")


def content_type() -> Schema:
    """The media type of a temp blob: only images, videos and audio."""
    return {
        "type": "string",
        "pattern": CONTENT_TYPE_PATTERN,
        "description": (
            "Media type of the file: `image/*`, `video/*` or `audio/*`, e.g. `video/mp4`."
        ),
    }


# The ids and names a listing answers and the other procedures take back: each bounded once.
def photoapp_username(
    description: str = (
        "Username of a connected photoapp account, as listed by `list-photoapp-users`."
    ),
) -> Schema:
    """The username of a connected photoapp account."""
    return string(description, min_length=1, max_length=64)


def clipapp_account_id(description: str) -> Schema:
    """The id of a directly connected clipapp account."""
    return string(description, min_length=1, max_length=128)


def social_account_id(description: str) -> Schema:
    """The id of an account's connection, as `list-social-accounts` lists it."""
    return string(description, min_length=1, max_length=128)


def post_type(description: str) -> Schema:
    """The name of one of an account's post types, as `list-social-accounts` lists it."""
    return string(description, min_length=1, max_length=64)


def page_url() -> Schema:
    """The `url` render input: the address of a page the headless browser loads."""
    return {
        "type": "string",
        "minLength": 1,
        "maxLength": URL_MAX_CHARS,
        "format": "uri",
        "pattern": PAGE_URL_PATTERN,
        "description": (
            "Address (http or https) of the page to render. Give exactly one of `url` and `html`."
        ),
    }


def page_html() -> Schema:
    """The `html` render input: the page itself."""
    return {
        "type": "string",
        "minLength": 1,
        "maxLength": HTML_MAX_CHARS,
        "description": (
            "The page to render, built from story components (`<photoapp-*>` elements). "
            "Give exactly one of `url` and `html`."
        ),
    }


def status(description: str, values: tuple[str, ...]) -> Schema:
    """A post or draft status from the procedure's own list of states."""
    return enum(description, values)


def standing(thing: str, values: tuple[str, ...]) -> Schema:
    """The status a status procedure answers: where the thing stands now."""
    return status(f"Where the {thing} stands.", values)


def input_object(properties: Schema, required: tuple[str, ...] = ()) -> Schema:
    """A request body: a closed object (unknown keys are a validation error)."""
    schema: Schema = {"type": "object", "properties": properties}
    if required:
        schema["required"] = list(required)
    schema["additionalProperties"] = False
    return schema


def render_input_object(properties: Schema, required: tuple[str, ...]) -> Schema:
    """A render procedure's request: `url` and `html` first, both optional in the schema.

    Exactly one of them must be given, but the spec makes that an expected error (400 with
    `errorMessage`), not a validation error, so the edge checks it after the schema.
    """
    return input_object({"url": page_url(), "html": page_html(), **properties}, required)


def output_object(properties: Schema, required: tuple[str, ...]) -> Schema:
    """A response body: open, because new entries may be added to responses at any time."""
    return {"type": "object", "properties": properties, "required": list(required)}


def uuid_output(
    name: str, thing: str, properties: Schema, required: tuple[str, ...] = ("status",)
) -> Schema:
    """The answer about one thing: its UUID (`name`) first, then `properties`; the UUID and
    the `required` properties are always present."""
    return output_object({name: uuid(f"The {thing}'s UUID."), **properties}, (name, *required))


class Named(TypedDict):
    """What every procedure record states for itself: its name and docs."""

    name: str
    summary: str
    doc: str


class Described(Named):
    """A record's own statements and its tags (a `Subject`'s records take its tag)."""

    tags: tuple[str, ...]


@dataclass(frozen=True)
class Subject:
    """What a family of procedures is about (a post kind, the drafts), stated once for all
    of them: the key its caller names it by (`uuid_name`), what the docs call it (`thing`),
    the UUID the examples name and the tag its records are listed under."""

    uuid_name: str
    thing: str
    example_uuid: str
    tag: str

    @property
    def tags(self) -> tuple[str, ...]:
        return (self.tag,)


def uuid_procedure(
    subject: Subject,
    *,
    properties: Schema,
    example_output: JsonObject,
    **named: Unpack[Named],
) -> Procedure:
    """A procedure about one `subject` its caller named by UUID: that UUID in; the UUID, then
    `properties` (`status` always present), out. Both examples name the subject's example
    UUID; `example_output` is the rest of the example answer."""
    key, thing, example_uuid = subject.uuid_name, subject.thing, subject.example_uuid
    return Procedure(
        **named,
        input_schema=uuid_input(key, thing),
        output_schema=uuid_output(key, thing, properties),
        example_input={key: example_uuid},
        example_output={key: example_uuid, **example_output},
        tags=subject.tags,
    )


def final_status_procedure(subject: Subject, *, final: str, **named: Unpack[Named]) -> Procedure:
    """A cancel or a delete: the `subject`'s UUID in; its UUID and the one status it ends in
    (`final`) out."""
    return uuid_procedure(
        subject,
        properties={"status": status(f"Always `{final}`.", (final,))},
        example_output={"status": final},
        **named,
    )


def post_status_procedure(
    subject: Subject,
    *,
    values: tuple[str, ...],
    extra: Schema | None = None,
    example_output: JsonObject,
    **named: Unpack[Named],
) -> Procedure:
    """A post's status procedure: its UUID in; its UUID, where it stands (one of `values`),
    why it failed, then the `extra` properties of its kind, out."""
    return uuid_procedure(
        subject,
        properties={
            "status": standing(subject.thing, values),
            "errorMessage": error_message(),
            **(extra or {}),
        },
        example_output=example_output,
        **named,
    )


def render_procedure(
    *,
    properties: Schema,
    required: tuple[str, ...],
    output_schema: Schema,
    example_input: JsonObject,
    example_output: JsonObject,
    **described: Unpack[Described],
) -> Procedure:
    """A procedure that renders a page before it answers: its request is a render request
    (`render_input_object` of `properties`), its callers wait `LONG_CALL_SECONDS`, and its
    doc ends with the paragraph that tells them so (`LONG_CALL_DOC`)."""
    return Procedure(
        **(described | {"doc": f"{described['doc']}\n\n{LONG_CALL_DOC}"}),
        input_schema=render_input_object(properties, required),
        output_schema=output_schema,
        example_input=example_input,
        example_output=example_output,
        render_input=True,
        client_timeout_seconds=LONG_CALL_SECONDS,
    )


def scheduled_output(post: Subject, post_status: Schema | None = None) -> Schema:
    """A schedule procedure's answer: the post's UUID, its status (always `scheduled` unless
    `post_status` says otherwise) and the render warnings."""
    return uuid_output(
        post.uuid_name,
        post.thing,
        {
            "status": post_status or status("Always `scheduled`.", ("scheduled",)),
            "warnings": warnings(),
        },
    )


def schedule_procedure(
    post: Subject,
    *,
    properties: Schema,
    required: tuple[str, ...],
    example_input: JsonObject,
    post_status: Schema | None = None,
    example_output: JsonObject | None = None,
    **named: Unpack[Named],
) -> Procedure:
    """A render procedure that schedules a `post`: it answers `scheduled_output` (with
    `post_status`, when given); the example answer names the post's example UUID, then
    `example_output` (default: `scheduled`)."""
    return render_procedure(
        **named,
        properties=properties,
        required=required,
        output_schema=scheduled_output(post, post_status),
        example_input=example_input,
        example_output={
            post.uuid_name: post.example_uuid,
            **(example_output or {"status": "scheduled"}),
        },
        tags=post.tags,
    )


def array_of(items: Schema, description: str) -> Schema:
    """An array whose items share one schema."""
    return {"type": "array", "items": items, "description": description}


def list_output(name: str, items: Schema, description: str) -> Schema:
    """A listing's answer: the one array `name` (possibly empty)."""
    return output_object({name: array_of(items, description)}, (name,))


def linknet_destination() -> Schema:
    """A linknet destination linked to a photoapp account."""
    return output_object(
        {
            "linknetDestinationId": string(
                "Id of the destination; pass it as `linknetDestinationId` to "
                "`schedule-photoapp-story`.",
                min_length=1,
                max_length=64,
            ),
            "linknetDestinationName": string(
                "Display name of the destination.", min_length=1, max_length=200
            ),
            "linknetDestinationType": string(
                "Kind of destination, passed to the network when cross-posting.",
                min_length=1,
                max_length=64,
            ),
        },
        ("linknetDestinationId", "linknetDestinationName", "linknetDestinationType"),
    )


def linknet_destinations() -> Schema:
    """The linknet destinations of a photoapp account (absent when none is linked)."""
    return array_of(linknet_destination(), "Linknet destinations linked to the account, if any.")


# Paragraphs that several procedure docs share (Markdown).
RENDER_INPUT_DOC = (
    "Give exactly one of `url` (the http or https address of the page) and `html` (the page "
    "itself, at most 10485760 characters); both or neither is an expected error (HTTP 400 "
    "with `errorMessage`). The page is loaded in a headless browser, in a sandboxed context "
    "with no origin that cannot read cookies or session data; the component script and the "
    "fonts are injected automatically and sticker data is extracted. Media that only exists "
    "as a local file is uploaded first as a temp blob (`create-temp-blob-upload-url`) and its "
    "`url` is used in `src` attributes. Unknown `<photoapp-*>` elements, unknown attributes "
    "on sticker elements and overlapping stickers are reported in `warnings`."
)
VIDEO_DOC = (
    "A video source must be h264, 1080 x 1920 pixels (9:16 portrait), at most 30 Mbps and "
    "{duration}; a video that does not meet this is rejected with HTTP 400 and a descriptive "
    "`errorMessage`."
)
# The client read timeout of the render procedures, which render before they answer.
LONG_CALL_SECONDS = 120.0
LONG_CALL_DOC = (
    "**Timeout:** the call may take longer than 30 seconds (the page is rendered before it "
    f"answers): use a client read timeout of at least {LONG_CALL_SECONDS:g} seconds, and after "
    "a client timeout retry with the same UUID."
)
MENTION_BUSY_DOC = (
    "Resolving a `<photoapp-mention>` username uses one of the connected photoapp accounts; "
    "when all are busy the call fails with HTTP 429: retry later with the same UUID."
)
RETRY_DOC = (
    "**Idempotency:** calling it again with the same UUID returns the same success response "
    "and duplicates nothing, so it is safe to retry after a timeout, a 429 or a 5xx."
)


def cancel_doc(thing: str) -> str:
    """The last paragraphs of a cancel whose `thing` can no longer be canceled once it is
    `executed` or `failed`: a repeat succeeds, a finished one is an expected error."""
    return (
        f"**Idempotency:** canceling an already canceled {thing} succeeds again.\n\n"
        f"**Errors:** a {thing} that is already `executed` or `failed` cannot be canceled: an "
        f"expected error (HTTP 400) is returned and the {thing} is unchanged."
    )


# Values the examples share, so that they tell one consistent story.
EXAMPLE_APP_URL = "https://storypost.example.com"
EXAMPLE_ORGANIZATION_ID = "665f1c2a9b3e4d0012a7c5e1"
EXAMPLE_PHOTOAPP_USERNAME = "sunnyshop"
EXAMPLE_LINKNET_DESTINATION_ID = "104857512345678"
EXAMPLE_CLIPAPP_ACCOUNT_ID = "7096538120371831814"
EXAMPLE_VIDEO_BLOB_UUID = "6b81abc4-0825-4b6c-8c9c-a33d9d55d93e"
EXAMPLE_VIDEO_BLOB_URL = (
    f"{EXAMPLE_APP_URL}/o/{EXAMPLE_ORGANIZATION_ID}/blobs/{EXAMPLE_VIDEO_BLOB_UUID}"
)
_LAYER_STYLE = (
    "position:absolute;inset:0;display:flex;flex-direction:column;align-items:center;"
    "gap:40px;padding:300px 40px"
)
EXAMPLE_IMAGE_STORY_HTML = (
    "<!doctype html><html><head><style>"
    "body{margin:0;width:1080px;height:1920px;font-family:sans-serif;color:#fff;"
    "background:linear-gradient(160deg,#ff7a59,#ffb347)}"
    "h1{font-size:96px;margin:0}p{font-size:48px;margin:0;text-align:center}"
    "</style></head><body><photoapp-story>"
    f'<div style="{_LAYER_STYLE}">'
    "<h1>Summer sale</h1><p>30% off everything until Sunday night</p>"
    '<photoapp-link url="https://shop.example.com/sale" text="Shop the sale" '
    'design="default"></photoapp-link>'
    '<photoapp-countdown title="Sale ends" end-time="2026-07-05T22:00:00Z" '
    'color="orange"></photoapp-countdown>'
    '<photoapp-hashtag hashtag="summersale" design="rainbow"></photoapp-hashtag>'
    "</div></photoapp-story></body></html>"
)
EXAMPLE_VIDEO_HTML = (
    "<!doctype html><html><head><style>"
    "body{margin:0;width:1080px;height:1920px;font-family:sans-serif;color:#fff}"
    "h1{font-size:88px;margin:0;text-shadow:0 4px 16px #000}"
    "</style></head><body>"
    f'<photoapp-story src="{EXAMPLE_VIDEO_BLOB_URL}">'
    f'<div style="{_LAYER_STYLE}"><h1>Behind the scenes</h1></div>'
    "</photoapp-story></body></html>"
)

"""Planning a bulk run: rows of data and a template turned into checked requests.

Fills the template (`{{column}}` placeholders, values HTML-escaped), checks every row (missing
columns, dates, the catalog's length limits) and derives each row's UUID from what the row
posts, so that a second run of the same data names the same posts and the API's idempotency
keeps them from being made twice. Nothing here calls the API: `storypost_client.bulk_run`
sends a plan.
"""

from __future__ import annotations

import html
import json
import re
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from functools import cached_property
from typing import Any, Literal, TypedDict

from storypost_client.generated.procedures import ProcedureName
from storypost_client.generated.types import CreateDraftRequest, SchedulePhotoappStoryRequest
from storypost_client.isodate import parse_iso
from storypost_client.transport import iso_date

BulkKind = Literal["story", "draft"]

# `{{column}}`, spaces inside the braces allowed: `{{ title }}`.
PLACEHOLDER = re.compile(r"\{\{\s*([^{}]*?)\s*\}\}")
_TAG_OPEN = re.compile(r"</?([A-Za-z][A-Za-z0-9:-]*)")
# Elements whose content is not HTML: escaping does not protect a value placed there.
_RAW_TEXT = frozenset({"script", "style"})

# minLength/maxLength of the string fields a bulk row fills, as the catalog's input schemas
# give them (tests/unit/client/test_bulk.py compares them with `edge.catalog`).
LENGTH_LIMITS: Mapping[ProcedureName, Mapping[str, tuple[int, int]]] = {
    "schedule-photoapp-story": {
        "html": (1, 10_485_760),
        "photoappUsername": (1, 64),
        "queueName": (1, 64),
    },
    "create-draft": {"html": (1, 10_485_760), "name": (1, 200), "folderName": (1, 512)},
}

# Row UUIDs are uuid5 names in this namespace: never change it, or every earlier run's rows
# would be posted again.
BULK_NAMESPACE = uuid.UUID("7f5d3c9e-8a41-5b7e-9c2d-2f6b1a0e4d83")
UUID_KEY_VERSION = 1

# The procedure each row of a kind of run calls.
PROCEDURES: Mapping[BulkKind, ProcedureName] = {
    "story": "schedule-photoapp-story",
    "draft": "create-draft",
}


class TemplateError(ValueError):
    """The template cannot be filled safely (a placeholder where escaping does not protect)."""


@dataclass(frozen=True)
class RowProblem:
    """Why a row cannot be sent; `row` counts data rows from 1."""

    row: int
    messages: tuple[str, ...]

    def __str__(self) -> str:
        return f"row {self.row}: {'; '.join(self.messages)}"


class BadRowsError(ValueError):
    """Rows that cannot be sent, found before anything was sent (nothing was)."""

    def __init__(self, problems: Sequence[RowProblem], total: int) -> None:
        self.problems = tuple(problems)
        self.total = total
        lines = "\n".join(f"  {problem}" for problem in self.problems)
        super().__init__(
            f"{len(self.problems)} of {total} rows cannot be sent; nothing was sent:\n{lines}"
        )


# Templates.


def placeholders(text: str) -> tuple[str, ...]:
    """The column names a template uses, in order of first use."""
    return tuple(dict.fromkeys(match.group(1) for match in PLACEHOLDER.finditer(text)))


def fill(text: str, values: Mapping[str, str], *, escape: bool = True) -> str:
    """The template with every `{{column}}` replaced by its value, HTML-escaped (quotes too,
    so a value cannot leave a quoted attribute) unless `escape` is false (plain text)."""

    def value(match: re.Match[str]) -> str:
        raw = values[match.group(1)]
        return html.escape(raw, quote=True) if escape else raw

    return PLACEHOLDER.sub(value, text)


def check_html_template(text: str) -> None:
    """Raises TemplateError when a placeholder sits where HTML escaping does not protect it:
    inside a tag outside a quoted attribute value (`<a href={{x}}>`, `<{{x}}>`), or inside
    `<script>`/`<style>`. An empty `{{}}` is refused too."""
    problems = [
        f"{{{{{name}}}}} (line {line}): {why}" for name, line, why in _unsafe_placeholders(text)
    ]
    if problems:
        raise TemplateError("the template is not safe to fill:\n  " + "\n  ".join(problems))


def _unsafe_placeholders(text: str) -> Iterator[tuple[str, int, str]]:
    state, quote, tag, closing = "text", "", "", False
    i = 0
    while i < len(text):
        found = PLACEHOLDER.match(text, i)
        if found:
            name, line = found.group(1), text.count("\n", 0, i) + 1
            if not name:
                yield name, line, "a placeholder needs a column name"
            elif state == "tag":
                yield name, line, 'inside a tag: put it in a quoted attribute value, a="{{…}}"'
            elif state == "raw":
                yield name, line, f"inside <{tag}>, where HTML escaping does not protect it"
            elif state == "text" and text.endswith("<", 0, i):
                yield name, line, "right after '<': a value must not make a tag"
            i = found.end()
            continue
        char = text[i]
        if state == "text":
            if text.startswith("<!--", i):
                state, i = "comment", i + 4
                continue
            opened = _TAG_OPEN.match(text, i)
            if opened:
                state, tag, closing = "tag", opened.group(1).lower(), text[i + 1] == "/"
                i = opened.end()
                continue
        elif state == "comment":
            if text.startswith("-->", i):
                state, i = "text", i + 3
                continue
        elif state == "tag":
            if char in "\"'":
                state, quote = "quoted", char
            elif char == ">":
                state = "raw" if tag in _RAW_TEXT and not closing else "text"
        elif state == "quoted":
            if char == quote:
                state = "tag"
        elif state == "raw" and text[i : i + len(tag) + 2].lower() == f"</{tag}":
            state = "text"  # the end tag is read as a tag from here
            continue
        i += 1


# Values, dates and UUIDs.


def cell_text(value: Any) -> str | None:
    """A data value as template text; None (JSON null, a short CSV row) means missing.
    JSON numbers and booleans are written as JSON writes them, lists and objects as JSON."""
    if value is None:
        return None
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)


def parse_date(text: str, what: str = "date") -> datetime:
    """An ISO 8601 date-time with a UTC offset (a time without a zone is ambiguous)."""
    try:
        when = parse_iso(text.strip())
    except ValueError:
        raise ValueError(
            f"{what} {text!r} is not an ISO 8601 date-time (e.g. 2026-07-01T09:30:00Z)"
        ) from None
    if when.tzinfo is None or when.utcoffset() is None:
        raise ValueError(f"{what} {text!r} has no UTC offset; add Z or +HH:MM")
    return when


_DURATION = re.compile(r"^(?:(\d+)d)?(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?$")


def parse_duration(text: str) -> timedelta:
    """`1d`, `6h`, `1h30m`, `90s`: the time between two rows (at least a second)."""
    found = _DURATION.match(text.strip().lower())
    if not found or not any(found.groups()):
        raise ValueError(f"duration {text!r}: write it like 1d, 6h, 1h30m or 90s")
    days, hours, minutes, seconds = (int(part or 0) for part in found.groups())
    every = timedelta(days=days, hours=hours, minutes=minutes, seconds=seconds)
    if every < timedelta(seconds=1):
        raise ValueError(f"duration {text!r}: at least one second")
    return every


def row_uuid(
    kind: BulkKind, template: str, values: Mapping[str, str], target: str, **more: str
) -> str:
    """The UUID of the post a row makes: uuid5 over a stable serialization (sorted JSON) of the
    kind, the template, the values the row fills in, the target (account or folder) and the
    other request facts (`date` or `queue`, the draft `name` template). The same row of the
    same run always gets the same UUID; changing any of these makes another post."""
    key = {
        "v": UUID_KEY_VERSION,
        "kind": kind,
        "template": template,
        "values": dict(values),
        "target": target,
        **more,
    }
    serialized = json.dumps(key, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return str(uuid.uuid5(BULK_NAMESPACE, serialized))


def length_problems(procedure: ProcedureName, body: Mapping[str, Any]) -> list[str]:
    """The string fields of a request body outside the catalog's length limits."""
    return [message for message, _ in _length_problems(procedure, body)]


def _length_problems(procedure: ProcedureName, body: Mapping[str, Any]) -> list[tuple[str, bool]]:
    """`length_problems`, each with whether the field is too long (else empty)."""
    problems = []
    for key, (shortest, longest) in LENGTH_LIMITS.get(procedure, {}).items():
        value = body.get(key)
        if not isinstance(value, str):
            continue
        if len(value) < shortest:
            problems.append((f"{key} is empty", False))
        elif len(value) > longest:
            problems.append((f"{key} would be {len(value)} characters; at most {longest}", True))
    return problems


# Planning: every row checked and turned into a request before anything is sent.


@dataclass(frozen=True)
class BulkItem:
    """A row ready to send: its request body (UUID included)."""

    row: int
    uuid: str
    body: Mapping[str, Any]
    date: str | None = None


@dataclass(frozen=True)
class BulkPlan:
    kind: BulkKind
    items: tuple[BulkItem, ...]
    problems: tuple[RowProblem, ...]
    total: int

    @property
    def procedure(self) -> ProcedureName:
        return PROCEDURES[self.kind]


@dataclass(frozen=True)
class _When:
    """When each row is posted: a column of dates, a start and a step, the next free slot of a
    queue (one for every row, or a column of queue names), or at once."""

    at_column: str | None = None
    start: datetime | None = None
    every: timedelta | None = None
    queue: str | None = None
    queue_column: str | None = None

    @classmethod
    def of(
        cls,
        at_column: str | None,
        start: str | datetime | None,
        every: str | timedelta | None,
        *,
        queue: str | None = None,
        queue_column: str | None = None,
    ) -> _When:
        ways = [
            name
            for name, given in (
                ("at_column", at_column is not None),
                ("start and every", start is not None or every is not None),
                ("queue_name", queue is not None),
                ("queue_column", queue_column is not None),
            )
            if given
        ]
        if len(ways) > 1:
            raise ValueError(
                "give at_column, start and every, queue_name or queue_column, "
                f"not both {ways[0]} and {ways[1]}"
            )
        if (start is None) != (every is None):
            raise ValueError("start and every go together")
        first = parse_date(start, "start") if isinstance(start, str) else start
        if first is not None:
            iso_date(first)  # a naive datetime is refused here
        step = parse_duration(every) if isinstance(every, str) else every
        if step is not None and step <= timedelta(0):
            raise ValueError("every must be positive")
        return cls(at_column, first, step, queue, queue_column)

    @property
    def columns(self) -> tuple[str, ...]:
        """The columns each row needs for its date or queue."""
        return tuple(column for column in (self.at_column, self.queue_column) if column)

    def queue_of(self, values: Mapping[str, str]) -> str | None:
        """The queue the row takes its date from (None: a date, or at once)."""
        if self.queue_column is not None:
            return values.get(self.queue_column)
        return self.queue

    def check(
        self, index: int, values: Mapping[str, str], now: datetime
    ) -> tuple[str | None, list[str]]:
        """The date of the row with this index (from 0) for the API, and what is wrong with it
        (a date that cannot be read, or not in the future)."""
        if self.at_column is not None:
            if self.at_column not in values:
                return None, []  # reported as a missing value
            try:
                at = parse_date(values[self.at_column], f"column {self.at_column!r}:")
            except ValueError as error:
                return None, [str(error)]
        elif self.start is not None and self.every is not None:
            at = self.start + index * self.every
        else:
            return None, []
        date = iso_date(at)
        return date, [] if at > now else [f"date {date} is in the past"]


@dataclass(frozen=True)
class _Filled:
    """What a row makes of the template: the page, its date and name, its UUID."""

    html: str
    uuid: str
    date: str | None = None
    name: str | None = None
    queue: str | None = None


# Makes the request of a row; the generated TypedDicts name (and mypy checks) its fields.
_BodyMaker = Callable[[_Filled], Mapping[str, Any]]


class StoryFields(TypedDict, total=False):
    """`plan_stories`' optional arguments, as the clients' `bulk_schedule_stories` take them
    (`story_run` passes them on)."""

    at_column: str | None
    start: str | datetime | None
    every: str | timedelta | None
    queue_name: str | None
    queue_column: str | None
    ai_generated: bool | None
    share_to_linknet: bool | None
    linknet_destination_id: str | int | None


def plan_stories(
    template: str,
    rows: Iterable[Mapping[str, Any]],
    photoapp_username: str,
    *,
    at_column: str | None = None,
    start: str | datetime | None = None,
    every: str | timedelta | None = None,
    queue_name: str | None = None,
    queue_column: str | None = None,
    ai_generated: bool | None = None,
    share_to_linknet: bool | None = None,
    linknet_destination_id: str | int | None = None,
    now: datetime | None = None,
) -> BulkPlan:
    """Checks every row and makes its `schedule-photoapp-story` request: posted at the date in
    the row's `at_column`, at `start + n * every` for the n-th row (from 0), in the next free
    slot of the queue `queue_name` (or the queue named in the row's `queue_column`; the API
    answers the slot taken), or at once."""
    when = _When.of(at_column, start, every, queue=queue_name, queue_column=queue_column)

    def body(row: _Filled) -> SchedulePhotoappStoryRequest:
        request: SchedulePhotoappStoryRequest = {
            "html": row.html,
            "photoappUsername": photoapp_username,
            "storyPostUuid": row.uuid,
        }
        if row.date is not None:
            request["date"] = row.date
        if row.queue is not None:
            request["queueName"] = row.queue
        if ai_generated is not None:
            request["aiGenerated"] = ai_generated
        if share_to_linknet is not None:
            request["shareToLinknet"] = share_to_linknet
        if linknet_destination_id is not None:
            request["linknetDestinationId"] = linknet_destination_id
        return request

    return _plan(_Spec("story", template, photoapp_username, when, body), rows, now)


def plan_drafts(
    template: str,
    rows: Iterable[Mapping[str, Any]],
    *,
    folder_name: str | None = None,
    name: str | None = None,
    now: datetime | None = None,
) -> BulkPlan:
    """Checks every row and makes its `create-draft` request; `name` is a plain-text template
    of the draft's name (`{{title}}`), `folder_name` the gallery folder of every draft."""

    def body(row: _Filled) -> CreateDraftRequest:
        request: CreateDraftRequest = {"html": row.html, "draftUuid": row.uuid}
        if folder_name is not None:
            request["folderName"] = folder_name
        if row.name is not None:
            request["name"] = row.name
        return request

    return _plan(_Spec("draft", template, folder_name or "", _When(), body, name), rows, now)


def _plan(spec: _Spec, rows: Iterable[Mapping[str, Any]], now: datetime | None) -> BulkPlan:
    spec.check()
    data: list[Any] = list(rows)  # JSON data may hold other things than objects
    columns = tuple(
        dict.fromkeys(key for row in data if isinstance(row, Mapping) for key in row if key)
    )
    moment = now or datetime.now(timezone.utc)
    items: list[BulkItem] = []
    problems: list[RowProblem] = []
    first_of: dict[str, int] = {}  # the first row of each UUID
    for index, raw in enumerate(data):
        row = spec.row(index, raw, columns, moment)
        messages = list(row.messages)
        # A row in the past is refused anyway: it is nobody's twin.
        if row.item is not None and not row.late:
            first = first_of.setdefault(row.item.uuid, row.number)
            if first != row.number:
                messages.append(f"the same {spec.kind} as row {first} (the same values)")
        if messages:
            problems.append(RowProblem(row.number, tuple(messages)))
        elif row.item is not None:
            items.append(row.item)
    return BulkPlan(spec.kind, tuple(items), tuple(problems), len(data))


@dataclass(frozen=True)
class _Row:
    """A row filled in: its request (None when it could not be made), what is wrong with it,
    and whether its date is in the past."""

    number: int
    messages: tuple[str, ...]
    item: BulkItem | None = None
    late: bool = False


@dataclass(frozen=True)
class _Spec:
    """What a plan makes of each row: a `kind` from the templates, for the `target` (the
    account or the folder), dated by `when`, sent as the request `make` makes."""

    kind: BulkKind
    template: str
    target: str
    when: _When
    make: _BodyMaker
    name_template: str | None = None

    @cached_property
    def used(self) -> tuple[str, ...]:
        """The columns the templates use: they make the row's UUID."""
        used = placeholders(self.template) + placeholders(self.name_template or "")
        return tuple(dict.fromkeys(used))

    @cached_property
    def needed(self) -> tuple[str, ...]:
        """The columns each row needs: those and the date or queue column."""
        return tuple(dict.fromkeys(self.used + self.when.columns))

    def check(self) -> None:
        """Refuses what would make every row bad: the fixed fields (account, folder), checked
        once with a page that passes, and the templates."""
        sample = _Filled(html="-", uuid="", queue=self.when.queue)
        fixed = length_problems(self._procedure, self.make(sample))
        if fixed:
            raise ValueError("; ".join(fixed))
        check_html_template(self.template)
        if self.name_template is not None and "" in placeholders(self.name_template):
            raise TemplateError("the name template has an empty {{}}")

    def row(self, index: int, raw: Any, columns: Sequence[str], now: datetime) -> _Row:
        """The row with this index (from 0) of data with these `columns`."""
        number = index + 1
        if not isinstance(raw, Mapping):
            return _Row(number, ("not an object of column values",))
        values, messages = _values(raw, self.needed, columns)
        date, late = self.when.check(index, values, now)
        messages += late
        if len(values) < len(self.needed):
            return _Row(number, tuple(messages))
        facts_of_row = {"date": date} if date is not None else {}
        queue = self.when.queue_of(values)
        if queue is not None:
            facts_of_row["queue"] = queue
        name = None
        if self.name_template is not None:
            facts_of_row["name"] = self.name_template
            name = fill(self.name_template, values, escape=False)
        key_values = {column: values[column] for column in self.used}
        row_id = row_uuid(self.kind, self.template, key_values, self.target, **facts_of_row)
        body = self.make(_Filled(fill(self.template, values), row_id, date, name, queue))
        lengths = _length_problems(self._procedure, body)
        messages += [message for message, _ in lengths]
        if key_values and any(too_long for _, too_long in lengths):
            longest = max(key_values, key=lambda column: len(key_values[column]))
            messages.append(f"its longest value is {longest!r} ({len(key_values[longest])})")
        item = BulkItem(number, row_id, body, date)
        return _Row(number, tuple(messages), item, late=bool(late))

    @property
    def _procedure(self) -> ProcedureName:
        return PROCEDURES[self.kind]


def _values(
    raw: Mapping[Any, Any], needed: Sequence[str], columns: Sequence[str]
) -> tuple[dict[str, str], list[str]]:
    """The row's text for each needed column, and what is missing."""
    values: dict[str, str] = {}
    messages: list[str] = []
    for column in needed:
        text = cell_text(raw.get(column))
        if text is not None:
            values[column] = text
        elif column in columns:
            messages.append(f"no value in column {column!r}")
        else:
            listed = ", ".join(columns) or "none"
            messages.append(f"no column {column!r} (the data's columns: {listed})")
    if None in raw:  # csv.DictReader's key for fields beyond the header
        messages.append("more fields than the header has columns")
    return values, messages

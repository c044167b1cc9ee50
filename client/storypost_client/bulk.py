"""Bulk stories and drafts from a template and rows of data: one design per row.

The pure part plans the run: it fills the template (`{{column}}` placeholders, values
HTML-escaped), checks every row (missing columns, dates, the catalog's length limits) and
derives each row's UUID from what the row posts, so that a second run of the same data names
the same posts and the API's idempotency keeps them from being made twice. The runners send
the planned requests with a concurrency limit, wait out 429s as the answer asks (the client's
`RetryPolicy`), and report each finished row to a progress callback.
"""

from __future__ import annotations

import asyncio
import html
import json
import re
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta, timezone
from functools import cached_property
from typing import TYPE_CHECKING, Any, Literal, TypedDict

from storypost_client.errors import ApiError, RateLimitedError, StorypostError
from storypost_client.generated.procedures import ProcedureName
from storypost_client.generated.types import CreateDraftRequest, SchedulePhotoappStoryRequest
from storypost_client.isodate import parse_iso
from storypost_client.polling import KINDS, PollPolicy
from storypost_client.retry import RetryPolicy
from storypost_client.transport import iso_date

if TYPE_CHECKING:
    from storypost_client.async_client import AsyncStorypostClient
    from storypost_client.sync_client import StorypostClient

BulkKind = Literal["story", "draft"]

# `{{column}}`, spaces inside the braces allowed: `{{ title }}`.
PLACEHOLDER = re.compile(r"\{\{\s*([^{}]*?)\s*\}\}")
_TAG_OPEN = re.compile(r"</?([A-Za-z][A-Za-z0-9:-]*)")
# Elements whose content is not HTML: escaping does not protect a value placed there.
_RAW_TEXT = frozenset({"script", "style"})

# minLength/maxLength of the string fields a bulk row fills, as the catalog's input schemas
# give them (tests/unit/client/test_bulk.py compares them with `edge.catalog`).
LENGTH_LIMITS: Mapping[ProcedureName, Mapping[str, tuple[int, int]]] = {
    "schedule-photoapp-story": {"html": (1, 10_485_760), "photoappUsername": (1, 64)},
    "create-draft": {"html": (1, 10_485_760), "name": (1, 200), "folderName": (1, 512)},
}

# Row UUIDs are uuid5 names in this namespace: never change it, or every earlier run's rows
# would be posted again.
BULK_NAMESPACE = uuid.UUID("7f5d3c9e-8a41-5b7e-9c2d-2f6b1a0e4d83")
UUID_KEY_VERSION = 1

DEFAULT_CONCURRENCY = 4
# How long a run waits for each row's previewUrl (rendering usually takes under a minute).
DEFAULT_PREVIEW_TIMEOUT = 120.0

# What happened to a row in this run.
SCHEDULED = "scheduled"  # a story: the API accepted it now
CREATED = "created"  # a draft: the API accepted it now
ALREADY_SCHEDULED = "already-scheduled"  # the earlier results say it was sent: not sent again
ALREADY_CREATED = "already-created"
SKIPPED = "skipped"  # a bad row, left out (skip_bad_rows)
FAILED = "failed"  # the API refused it, could not be reached, or the post failed
DONE_STATUSES = frozenset({SCHEDULED, CREATED, ALREADY_SCHEDULED, ALREADY_CREATED})


@dataclass(frozen=True)
class _KindFacts:
    procedure: ProcedureName
    uuid_field: str
    status_procedure: str
    sent: str
    already: str
    final_states: frozenset[str]


def _facts(kind: BulkKind, procedure: ProcedureName, sent: str, already: str) -> _KindFacts:
    return _KindFacts(
        procedure=procedure,
        uuid_field=KINDS[kind].uuid_field,
        status_procedure=KINDS[kind].status_procedure,
        sent=sent,
        already=already,
        final_states=KINDS[kind].final_states,
    )


_KIND_FACTS: Mapping[BulkKind, _KindFacts] = {
    "story": _facts("story", "schedule-photoapp-story", SCHEDULED, ALREADY_SCHEDULED),
    "draft": _facts("draft", "create-draft", CREATED, ALREADY_CREATED),
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
    other request facts (`date`, the draft `name` template). The same row of the same run
    always gets the same UUID; changing any of these makes another post."""
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
    problems = []
    for key, (shortest, longest) in LENGTH_LIMITS.get(procedure, {}).items():
        value = body.get(key)
        if not isinstance(value, str):
            continue
        if len(value) < shortest:
            problems.append(f"{key} is empty")
        elif len(value) > longest:
            problems.append(f"{key} would be {len(value)} characters; at most {longest}")
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
    def facts(self) -> _KindFacts:
        return _KIND_FACTS[self.kind]


@dataclass(frozen=True)
class _When:
    """When each row is posted: a column of dates, a start and a step, or at once."""

    at_column: str | None = None
    start: datetime | None = None
    every: timedelta | None = None

    @classmethod
    def of(
        cls,
        at_column: str | None,
        start: str | datetime | None,
        every: str | timedelta | None,
    ) -> _When:
        if at_column is not None and (start is not None or every is not None):
            raise ValueError("give a date column (at_column) or start and every, not both")
        if (start is None) != (every is None):
            raise ValueError("start and every go together")
        first = parse_date(start, "start") if isinstance(start, str) else start
        if first is not None:
            iso_date(first)  # a naive datetime is refused here
        step = parse_duration(every) if isinstance(every, str) else every
        if step is not None and step <= timedelta(0):
            raise ValueError("every must be positive")
        return cls(at_column, first, step)

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


# Makes the request of a row; the generated TypedDicts name (and mypy checks) its fields.
_BodyMaker = Callable[[_Filled], Mapping[str, Any]]


class StoryFields(TypedDict, total=False):
    """`plan_stories`' optional arguments, as the clients' `bulk_schedule_stories` take them
    (`story_run` passes them on)."""

    at_column: str | None
    start: str | datetime | None
    every: str | timedelta | None
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
    ai_generated: bool | None = None,
    share_to_linknet: bool | None = None,
    linknet_destination_id: str | int | None = None,
    now: datetime | None = None,
) -> BulkPlan:
    """Checks every row and makes its `schedule-photoapp-story` request: posted at the date in
    the row's `at_column`, at `start + n * every` for the n-th row (from 0), or at once."""
    when = _When.of(at_column, start, every)

    def body(row: _Filled) -> SchedulePhotoappStoryRequest:
        request: SchedulePhotoappStoryRequest = {
            "html": row.html,
            "photoappUsername": photoapp_username,
            "storyPostUuid": row.uuid,
        }
        if row.date is not None:
            request["date"] = row.date
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
        """The columns each row needs: those and the date column."""
        at_column = (self.when.at_column,) if self.when.at_column else ()
        return tuple(dict.fromkeys(self.used + at_column))

    def check(self) -> None:
        """Refuses what would make every row bad: the fixed fields (account, folder), checked
        once with a page that passes, and the templates."""
        fixed = length_problems(self._procedure, self.make(_Filled(html="-", uuid="")))
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
        name = None
        if self.name_template is not None:
            facts_of_row["name"] = self.name_template
            name = fill(self.name_template, values, escape=False)
        key_values = {column: values[column] for column in self.used}
        row_id = row_uuid(self.kind, self.template, key_values, self.target, **facts_of_row)
        body = self.make(_Filled(fill(self.template, values), row_id, date, name))
        too_long = length_problems(self._procedure, body)
        if too_long and key_values:
            longest = max(key_values, key=lambda column: len(key_values[column]))
            too_long.append(f"its longest value is {longest!r} ({len(key_values[longest])})")
        messages += too_long
        item = BulkItem(number, row_id, body, date)
        return _Row(number, tuple(messages), item, late=bool(late))

    @property
    def _procedure(self) -> ProcedureName:
        return _KIND_FACTS[self.kind].procedure


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


# Results.


@dataclass(frozen=True, kw_only=True)
class RowResult:
    """What became of one row; `status` is one of the constants above (`scheduled` …)."""

    row: int
    status: str
    uuid: str | None = None
    date: str | None = None
    preview_url: str | None = None
    editor_url: str | None = None
    warnings: tuple[str, ...] = ()
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.status in DONE_STATUSES


@dataclass(frozen=True)
class BulkReport:
    kind: BulkKind
    results: tuple[RowResult, ...]

    @property
    def ok(self) -> bool:
        """Every row was sent (now or by an earlier run) and none failed."""
        return all(result.ok for result in self.results)

    def counts(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for result in self.results:
            counts[result.status] = counts.get(result.status, 0) + 1
        return counts


# progress(result, done, total): called once per row as it finishes (skipped rows and rows
# an earlier run sent first), on the caller's thread (the event loop's, for the async client).
BulkProgress = Callable[[RowResult, int, int], None]


def _sent(plan: BulkPlan, item: BulkItem, answer: Mapping[str, Any]) -> RowResult:
    warnings = answer.get("warnings")
    return RowResult(
        row=item.row,
        status=plan.facts.sent,
        uuid=item.uuid,
        date=item.date,
        editor_url=answer.get("editorUrl"),
        warnings=tuple(warnings) if isinstance(warnings, list) else (),
    )


def _failed(item: BulkItem, error: StorypostError) -> RowResult:
    message = error.error_message if isinstance(error, ApiError) else str(error)
    status = f" (HTTP {error.status})" if isinstance(error, ApiError) else ""
    return RowResult(
        row=item.row, status=FAILED, uuid=item.uuid, date=item.date, error=message + status
    )


def _with_status(plan: BulkPlan, result: RowResult, answer: Mapping[str, Any]) -> RowResult:
    """The result with what a status answer tells: previewUrl, and a post that failed."""
    preview = answer.get("previewUrl") or result.preview_url
    editor = answer.get("editorUrl") or result.editor_url
    if answer.get("status") == "failed":
        error = answer.get("errorMessage") or f"the {plan.kind} failed"
        return replace(result, status=FAILED, preview_url=preview, editor_url=editor, error=error)
    return replace(result, preview_url=preview, editor_url=editor)


def _preview_known(plan: BulkPlan, answer: Mapping[str, Any]) -> bool:
    return bool(answer.get("previewUrl")) or answer.get("status") in plan.facts.final_states


class _Previewing:
    """One sent row's preview polling without its calls and sleeps (which the runners make,
    blocking or awaited): what to poll, and after each answer how long to sleep."""

    def __init__(self, plan: BulkPlan, result: RowResult, poll: PollPolicy, seconds: float) -> None:
        self.procedure = plan.facts.status_procedure
        self.body = {plan.facts.uuid_field: result.uuid}
        # The row's result as the latest status answer tells it.
        self.result = result
        self._plan = plan
        self._deadline = time.monotonic() + seconds
        self._intervals = poll.intervals()

    def pause(self, answer: Mapping[str, Any]) -> float | None:
        """Takes in a status answer; None when the preview is known, the row is final or the
        time is up, else the seconds to sleep before the next poll."""
        self.result = _with_status(self._plan, self.result, answer)
        left = self._deadline - time.monotonic()
        if _preview_known(self._plan, answer) or left <= 0:
            return None
        return min(next(self._intervals), left)


@dataclass(frozen=True)
class RunOptions:
    """How a runner sends a plan: the bulk methods' arguments of the same names."""

    skip_bad_rows: bool = False
    concurrency: int = DEFAULT_CONCURRENCY
    progress: BulkProgress | None = None
    previous: Iterable[RowResult] = ()
    preview: bool = True
    preview_timeout: float = DEFAULT_PREVIEW_TIMEOUT


class RunFields(TypedDict, total=False):
    """`RunOptions` as the bulk methods' keyword arguments (left out: RunOptions' default)."""

    skip_bad_rows: bool
    concurrency: int
    progress: BulkProgress | None
    previous: Iterable[RowResult]
    preview: bool
    preview_timeout: float


class StoryRunFields(StoryFields, RunFields, total=False):
    """`bulk_schedule_stories`' keyword arguments besides `photoapp_username`."""


def story_run(
    template: str,
    rows: Iterable[Mapping[str, Any]],
    photoapp_username: str,
    options: StoryRunFields,
) -> tuple[BulkPlan, RunOptions]:
    """`bulk_schedule_stories`' plan (`plan_stories`), and how to send it."""
    given: Mapping[str, Any] = options
    run = {key: value for key, value in given.items() if key in RunFields.__optional_keys__}
    story = {key: value for key, value in given.items() if key not in run}
    return plan_stories(template, rows, photoapp_username, **story), RunOptions(**run)


def _start(plan: BulkPlan, options: RunOptions) -> tuple[list[RowResult], list[BulkItem]]:
    """Results known before sending (skipped rows, rows an earlier run sent), reported to
    `progress` at once, and what to send."""
    done = {result.uuid: result for result in options.previous if result.ok and result.uuid}
    known = [
        RowResult(row=problem.row, status=SKIPPED, error="; ".join(problem.messages))
        for problem in plan.problems
    ]
    to_send: list[BulkItem] = []
    for item in plan.items:
        earlier = done.get(item.uuid)
        if earlier is None:
            to_send.append(item)
            continue
        known.append(
            RowResult(
                row=item.row,
                status=plan.facts.already,
                uuid=item.uuid,
                date=item.date,
                preview_url=earlier.preview_url,
                editor_url=earlier.editor_url,
                warnings=earlier.warnings,
            )
        )
    known.sort(key=lambda result: result.row)
    results: list[RowResult] = []
    for result in known:
        _finished(plan, options, results, result)
    return results, to_send


def _finished(
    plan: BulkPlan, options: RunOptions, results: list[RowResult], result: RowResult
) -> None:
    """Adds a finished row to `results` and reports it to `progress`."""
    results.append(result)
    if options.progress:
        options.progress(result, len(results), plan.total)


def _rate_limit_wait(retry: RetryPolicy, error: StorypostError, rounds: int) -> float | None:
    """How long every worker pauses after a 429 the client's retries did not get through;
    None when the row fails (not a 429, too many rounds, or a Retry-After too long to wait:
    a quota, not a rate)."""
    if not isinstance(error, RateLimitedError) or rounds >= retry.max_attempts:
        return None
    return retry.delay(rounds + 1, error.retry_after)


def _finish(plan: BulkPlan, results: list[RowResult]) -> BulkReport:
    return BulkReport(plan.kind, tuple(sorted(results, key=lambda result: result.row)))


def check_plan(plan: BulkPlan, *, skip_bad_rows: bool, concurrency: int) -> None:
    """Raises BadRowsError when rows are bad and they are not to be skipped."""
    if concurrency < 1:
        raise ValueError("concurrency must be at least 1")
    if plan.total == 0:
        raise ValueError("the data has no rows")
    if plan.problems and not skip_bad_rows:
        raise BadRowsError(plan.problems, plan.total)


def check_account(answer: Mapping[str, Any], username: str) -> None:
    """Raises ValueError unless `list-photoapp-users` lists the account (before sending, so a
    misspelt account is one error, not one per row)."""
    names = [user.get("photoappUsername") for user in answer.get("photoappUsers", [])]
    if username not in names:
        listed = ", ".join(str(name) for name in names) or "none"
        raise ValueError(f"photoapp account {username!r} is not connected (connected: {listed})")


# The asyncio runner.


@dataclass
class _AsyncPause:
    until: float = 0.0

    async def wait(self) -> None:
        # Another 429 may lengthen the pause while this one sleeps: look again after it.
        while (left := self.until - time.monotonic()) > 0:  # noqa: ASYNC110
            await asyncio.sleep(left)

    def hold(self, seconds: float) -> None:
        self.until = max(self.until, time.monotonic() + seconds)


async def run_async(
    client: AsyncStorypostClient, plan: BulkPlan, options: RunOptions, *, account: str | None = None
) -> BulkReport:
    """Sends a plan's rows, at most `concurrency` at a time; see `bulk_schedule_stories`. With
    `account` (stories), checks first that the photoapp account is connected."""
    check_plan(plan, skip_bad_rows=options.skip_bad_rows, concurrency=options.concurrency)
    if account is not None and plan.items:
        check_account(await client.list_photoapp_users(), account)
    results, to_send = _start(plan, options)
    pause = _AsyncPause()
    gate = asyncio.Semaphore(options.concurrency)

    async def one(item: BulkItem) -> RowResult:
        async with gate:
            result = await _send_async(client, plan, item, pause)
            if options.preview and result.ok:
                result = await _preview_async(client, plan, result, options.preview_timeout)
            return result

    tasks = [asyncio.ensure_future(one(item)) for item in to_send]
    try:
        for finished in asyncio.as_completed(tasks):
            _finished(plan, options, results, await finished)
    finally:
        # A failure that is not an API error (or a cancel) stops the rows still in flight.
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    return _finish(plan, results)


async def _send_async(
    client: AsyncStorypostClient, plan: BulkPlan, item: BulkItem, pause: _AsyncPause
) -> RowResult:
    rounds = 0
    while True:
        await pause.wait()
        try:
            answer = await client.call(plan.facts.procedure, item.body)
        except StorypostError as error:
            wait = _rate_limit_wait(client.retry, error, rounds)
            if wait is None:
                return _failed(item, error)
            pause.hold(wait)
            rounds += 1
            continue
        return _sent(plan, item, answer)


async def _preview_async(
    client: AsyncStorypostClient, plan: BulkPlan, result: RowResult, seconds: float
) -> RowResult:
    previewing = _Previewing(plan, result, client.poll, seconds)
    while True:
        try:
            answer = await client.call(previewing.procedure, previewing.body)
        except StorypostError:
            return previewing.result  # the row was sent; its preview is only not known
        pause = previewing.pause(answer)
        if pause is None:
            return previewing.result
        await asyncio.sleep(pause)


# The thread runner (the sync client: httpx.Client is safe to share between threads).


@dataclass
class _ThreadPause:
    until: float = 0.0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def wait(self) -> None:
        while (left := self.until - time.monotonic()) > 0:
            time.sleep(left)

    def hold(self, seconds: float) -> None:
        with self.lock:
            self.until = max(self.until, time.monotonic() + seconds)


def run_sync(
    client: StorypostClient, plan: BulkPlan, options: RunOptions, *, account: str | None = None
) -> BulkReport:
    """Sends a plan's rows from `concurrency` threads; progress is called on this thread. With
    `account` (stories), checks first that the photoapp account is connected."""
    check_plan(plan, skip_bad_rows=options.skip_bad_rows, concurrency=options.concurrency)
    if account is not None and plan.items:
        check_account(client.list_photoapp_users(), account)
    results, to_send = _start(plan, options)
    pause = _ThreadPause()

    def one(item: BulkItem) -> RowResult:
        result = _send_sync(client, plan, item, pause)
        if options.preview and result.ok:
            result = _preview_sync(client, plan, result, options.preview_timeout)
        return result

    if not to_send:
        return _finish(plan, results)
    with ThreadPoolExecutor(max_workers=options.concurrency, thread_name_prefix="bulk") as pool:
        futures = [pool.submit(one, item) for item in to_send]
        try:
            for finished in as_completed(futures):
                _finished(plan, options, results, finished.result())
        except BaseException:
            for future in futures:
                future.cancel()
            raise
    return _finish(plan, results)


def _send_sync(
    client: StorypostClient, plan: BulkPlan, item: BulkItem, pause: _ThreadPause
) -> RowResult:
    rounds = 0
    while True:
        pause.wait()
        try:
            answer = client.call(plan.facts.procedure, item.body)
        except StorypostError as error:
            wait = _rate_limit_wait(client.retry, error, rounds)
            if wait is None:
                return _failed(item, error)
            pause.hold(wait)
            rounds += 1
            continue
        return _sent(plan, item, answer)


def _preview_sync(
    client: StorypostClient, plan: BulkPlan, result: RowResult, seconds: float
) -> RowResult:
    previewing = _Previewing(plan, result, client.poll, seconds)
    while True:
        try:
            answer = client.call(previewing.procedure, previewing.body)
        except StorypostError:
            return previewing.result  # the row was sent; its preview is only not known
        pause = previewing.pause(answer)
        if pause is None:
            return previewing.result
        time.sleep(pause)

"""Bulk stories and drafts, the pure part: templates and escaping, row UUIDs, row checks, the
data and results files."""

from __future__ import annotations

import dataclasses
import inspect
import json
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from edge.catalog import build_catalog
from storypost_client import bulk
from storypost_client.bulk import (
    BadRowsError,
    RowResult,
    TemplateError,
    check_html_template,
    check_plan,
    fill,
    placeholders,
    plan_drafts,
    plan_stories,
    row_uuid,
)
from storypost_client.bulk_files import (
    RESULT_COLUMNS,
    DataFileError,
    read_results,
    read_rows,
    write_results,
)

NOW = datetime(2026, 11, 25, 12, 0, tzinfo=UTC)
LATER = "2026-12-01T09:00:00Z"
PAGE = '<h1 title="{{title}}">{{ title }}</h1><photoapp-link url="{{link}}"></photoapp-link>'


def story_plan(rows: list[Any], **options: Any) -> bulk.BulkPlan:
    options.setdefault("at_column", "when")
    return plan_stories(PAGE, rows, "alice", now=NOW, **options)


def three_rows_from(start: str, *, every: str) -> bulk.BulkPlan:
    """Three stories at `start`, `start + every`, `start + 2 * every`."""
    return plan_stories(
        PAGE, [row(title=str(n)) for n in range(3)], "alice", start=start, every=every, now=NOW
    )


def row(**values: Any) -> dict[str, Any]:
    return {"title": "Sale", "link": "https://shop.example/sale", "when": LATER, **values}


# Templates and escaping.


def test_placeholders_in_order_of_first_use() -> None:
    assert placeholders("{{b}} {{ a }} {{b}} {{c d}}") == ("b", "a", "c d")


@pytest.mark.parametrize(
    ("value", "filled"),
    [
        ('" onload="alert(1)', '<p title="&quot; onload=&quot;alert(1)">'),
        ("' onload='alert(1)", '<p title="&#x27; onload=&#x27;alert(1)">'),
        (
            '"><script>alert(1)</script>',
            '<p title="&quot;&gt;&lt;script&gt;alert(1)&lt;/script&gt;">',
        ),
        ("Tom & Jerry", '<p title="Tom &amp; Jerry">'),
    ],
)
def test_values_cannot_leave_an_attribute(value: str, filled: str) -> None:
    assert fill('<p title="{{v}}">', {"v": value}) == filled


def test_values_cannot_make_tags_in_text() -> None:
    assert fill("<p>{{v}}</p>", {"v": "<img src=x onerror=alert(1)>"}) == (
        "<p>&lt;img src=x onerror=alert(1)&gt;</p>"
    )


def test_plain_text_fill_does_not_escape() -> None:
    assert fill("{{title}} & more", {"title": "A < B"}, escape=False) == "A < B & more"


@pytest.mark.parametrize(
    ("template", "why"),
    [
        ("<a href={{url}}>x</a>", "inside a tag"),
        ("<p {{attrs}}>x</p>", "inside a tag"),
        ("<{{tag}}>x", "right after '<'"),
        ("<script>var a = '{{v}}';</script>", "inside <script>"),
        ("<style>p { color: {{v}} }</style>", "inside <style>"),
        ("<p>{{}}</p>", "needs a column name"),
    ],
)
def test_unsafe_places_are_refused(template: str, why: str) -> None:
    with pytest.raises(TemplateError, match=why):
        check_html_template(template)


def test_safe_places_pass() -> None:
    check_html_template(
        "<!-- {{note}} --><p class='x' title=\"{{t}}\">{{t}}</p><script>1</script>"
        "<textarea>{{t}}</textarea><photoapp-poll options='{{options}}'></photoapp-poll>"
    )


# Row UUIDs.


def test_row_uuids_are_stable_uuid5() -> None:
    first = story_plan([row()]).items[0].uuid
    assert uuid.UUID(first).version == 5
    assert story_plan([row()]).items[0].uuid == first
    # Only what the post is made of counts: a column the template does not use, the order of
    # the keys and the spelling of the same instant do not.
    same = row(notes="internal", when="2026-12-01T10:00:00+01:00")
    assert story_plan([dict(reversed(list(same.items())))]).items[0].uuid == first
    assert first == row_uuid(
        "story",
        PAGE,
        {"title": "Sale", "link": "https://shop.example/sale"},
        "alice",
        date=LATER,
    )


def test_row_uuids_never_change_between_releases() -> None:
    # A changed serialization would make every earlier run's rows new posts: these are fixed.
    story = row_uuid("story", "<p>{{t}}</p>", {"t": "x"}, "alice", date="2026-12-01T09:00:00Z")
    draft = row_uuid("draft", "<p>{{t}}</p>", {"t": "x"}, "F", name="{{t}}")
    assert story == "ddcd6941-021f-5296-9b31-87ab152459e9"
    assert draft == "f32745ef-10f2-5383-a307-0f5a6e8c1701"


@pytest.mark.parametrize(
    "change",
    [
        {"template": PAGE + " "},
        {"account": "bob"},
        {"row": row(title="Sale!")},
        {"row": row(when="2026-12-02T09:00:00Z")},
    ],
)
def test_any_change_of_template_row_date_or_account_makes_another_uuid(
    change: dict[str, Any],
) -> None:
    first = story_plan([row()]).items[0].uuid
    other = plan_stories(
        change.get("template", PAGE),
        [change.get("row", row())],
        change.get("account", "alice"),
        at_column="when",
        now=NOW,
    )
    assert other.items[0].uuid != first


def test_drafts_and_stories_of_one_row_differ() -> None:
    story = story_plan([row()]).items[0]
    draft = plan_drafts(PAGE, [row()], now=NOW).items[0]
    assert story.uuid != draft.uuid
    assert draft.body == {"html": story.body["html"], "draftUuid": draft.uuid}


# Requests.


def test_story_requests_name_the_api_fields() -> None:
    plan = story_plan([row()], ai_generated=True, linknet_destination_id=42)
    item = plan.items[0]
    assert item.body == {
        "html": '<h1 title="Sale">Sale</h1><photoapp-link url="https://shop.example/sale">'
        "</photoapp-link>",
        "photoappUsername": "alice",
        "storyPostUuid": item.uuid,
        "date": LATER,
        "aiGenerated": True,
        "linknetDestinationId": 42,
    }


def test_start_and_every_date_the_rows_in_order() -> None:
    plan = three_rows_from("2026-12-01T09:00:00+01:00", every="1d6h")
    assert [item.date for item in plan.items] == [
        "2026-12-01T08:00:00Z",
        "2026-12-02T14:00:00Z",
        "2026-12-03T20:00:00Z",
    ]


def test_draft_names_and_folder() -> None:
    plan = plan_drafts(PAGE, [row(title="A & B")], folder_name="Campaign", name="{{title}} #1")
    assert plan.items[0].body["name"] == "A & B #1"
    assert plan.items[0].body["folderName"] == "Campaign"


# Row checks: every problem of every row, before anything is sent.


def test_bad_rows_are_all_reported_with_their_reasons() -> None:
    rows: list[Any] = [
        row(),
        {"title": "no link", "when": LATER},
        row(when="2025-01-01T00:00:00Z"),
        row(when="next tuesday"),
        row(when="2026-12-01T09:00:00"),
        row(title="x" * 10_485_700),
        row(),
        "not an object",
        {"title": None, "link": "https://x", "when": LATER},
    ]
    plan = story_plan(rows)
    assert [item.row for item in plan.items] == [1]
    messages = {problem.row: problem.messages for problem in plan.problems}
    assert messages[2] == ("no value in column 'link'",)
    assert messages[3] == ("date 2025-01-01T00:00:00Z is in the past",)
    assert messages[4] == (
        "column 'when': 'next tuesday' is not an ISO 8601 date-time (e.g. 2026-07-01T09:30:00Z)",
    )
    assert messages[5] == (
        "column 'when': '2026-12-01T09:00:00' has no UTC offset; add Z or +HH:MM",
    )
    assert messages[6][0].startswith("html would be 20971481 characters; at most 10485760")
    assert messages[6][1] == "its longest value is 'title' (10485700)"
    assert messages[7] == ("the same story as row 1 (the same values)",)
    assert messages[8] == ("not an object of column values",)
    assert messages[9] == ("no value in column 'title'",)
    with pytest.raises(BadRowsError) as refused:
        check_plan(plan, skip_bad_rows=False, concurrency=4)
    assert "8 of 9 rows cannot be sent; nothing was sent" in str(refused.value)
    assert "  row 3: date 2025-01-01T00:00:00Z is in the past" in str(refused.value)
    check_plan(plan, skip_bad_rows=True, concurrency=4)


def test_a_placeholder_without_a_column_is_reported_per_row() -> None:
    plan = plan_stories("<p>{{missing}}</p>", [row()], "alice", at_column="when", now=NOW)
    assert [str(problem) for problem in plan.problems] == [
        "row 1: no column 'missing' (the data's columns: title, link, when)"
    ]


def test_a_missing_date_and_a_past_date_of_one_row_are_both_reported() -> None:
    plan = story_plan([{"title": "a", "when": "2020-01-01T00:00:00Z"}])
    assert plan.problems[0].messages == (
        "no column 'link' (the data's columns: title, when)",
        "date 2020-01-01T00:00:00Z is in the past",
    )


def test_start_rows_in_the_past_are_bad() -> None:
    plan = three_rows_from("2026-11-25T11:00:00Z", every="1h")
    # The second row's date is now: not in the future either.
    assert [str(p) for p in plan.problems] == [
        "row 1: date 2026-11-25T11:00:00Z is in the past",
        "row 2: date 2026-11-25T12:00:00Z is in the past",
    ]
    assert [(item.row, item.date) for item in plan.items] == [(3, "2026-11-25T13:00:00Z")]


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"at_column": "when", "start": LATER, "every": "1h"}, "not both"),
        ({"start": LATER}, "start and every go together"),
        ({"start": LATER, "every": "soon"}, "write it like 1d, 6h, 1h30m or 90s"),
        ({"start": "2026-12-01", "every": "1h"}, "has no UTC offset"),
        ({"start": datetime(2026, 12, 1), "every": "1h"}, "needs a timezone"),
    ],
)
def test_bad_schedule_options_are_refused(options: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        plan_stories(PAGE, [row()], "alice", now=NOW, **options)


def test_rows_to_a_queue_send_its_name_instead_of_a_date() -> None:
    data = [row(title="A"), row(title="B")]
    plan = plan_stories(PAGE, data, "alice", queue_name="mornings", now=NOW)
    assert not plan.problems
    assert [dict(item.body)["queueName"] for item in plan.items] == ["mornings", "mornings"]
    assert all("date" not in item.body and item.date is None for item in plan.items)
    # The queue is part of what a row posts: another queue, or none, is another post.
    other = plan_stories(PAGE, data, "alice", queue_name="evenings", now=NOW)
    at_once = plan_stories(PAGE, data, "alice", now=NOW)
    uuids = [{item.uuid for item in p.items} for p in (plan, other, at_once)]
    assert not (uuids[0] & uuids[1]) and not (uuids[0] & uuids[2])


def test_a_queue_column_names_each_rows_queue() -> None:
    data = [row(title="A", queue="mornings"), row(title="B", queue=""), row(title="C")]
    plan = plan_stories(PAGE, data, "alice", queue_column="queue", now=NOW)
    assert [(item.row, dict(item.body)["queueName"]) for item in plan.items] == [(1, "mornings")]
    assert [str(problem) for problem in plan.problems] == [
        "row 2: queueName is empty",
        "row 3: no value in column 'queue'",
    ]


@pytest.mark.parametrize(
    "options",
    [
        {"queue_name": "q", "at_column": "when"},
        {"queue_name": "q", "start": LATER, "every": "1d"},
        {"queue_name": "q", "queue_column": "queue"},
    ],
)
def test_a_queue_goes_alone(options: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match="not both"):
        plan_stories(PAGE, [row()], "alice", now=NOW, **options)


def test_a_queue_name_too_long_is_refused_once() -> None:
    with pytest.raises(ValueError, match="queueName would be 65 characters; at most 64"):
        plan_stories(PAGE, [row()], "alice", queue_name="q" * 65, now=NOW)


def test_fixed_fields_outside_the_limits_are_refused_once() -> None:
    with pytest.raises(ValueError, match="photoappUsername would be 65 characters; at most 64"):
        plan_stories(PAGE, [row()], "a" * 65, at_column="when", now=NOW)
    with pytest.raises(ValueError, match="folderName would be 513 characters; at most 512"):
        plan_drafts(PAGE, [row()], folder_name="f" * 513)
    with pytest.raises(ValueError, match="folderName is empty"):
        plan_drafts(PAGE, [row()], folder_name="")


def test_a_draft_name_too_long_is_a_bad_row() -> None:
    plan = plan_drafts(PAGE, [row(), row(title="t" * 201)], name="{{title}}")
    assert str(plan.problems[0]).startswith("row 2: name would be 201 characters; at most 200")


def test_the_bulk_methods_keywords_are_the_planners_and_the_runners() -> None:
    # `story_run` passes each keyword on by name, which mypy does not check there.
    planner = inspect.signature(plan_stories).parameters
    for key in bulk.StoryFields.__optional_keys__:
        assert planner[key].kind is inspect.Parameter.KEYWORD_ONLY, key
    run_options = {option.name for option in dataclasses.fields(bulk.RunOptions)}
    assert bulk.RunFields.__optional_keys__ == run_options
    story_run = bulk.StoryRunFields.__optional_keys__
    assert story_run == bulk.StoryFields.__optional_keys__ | run_options


def test_the_limits_are_the_catalogs() -> None:
    catalog = build_catalog()
    for procedure, limits in bulk.LENGTH_LIMITS.items():
        record = catalog.get(procedure)
        assert record is not None
        properties = record.input_schema["properties"]
        for key, (shortest, longest) in limits.items():
            assert (properties[key]["minLength"], properties[key]["maxLength"]) == (
                shortest,
                longest,
            ), (procedure, key)


def test_no_rows_is_an_error() -> None:
    with pytest.raises(ValueError, match="no rows"):
        check_plan(story_plan([]), skip_bad_rows=True, concurrency=1)


# Data and results files.


def test_csv_and_json_rows_fill_alike(tmp_path: Path) -> None:
    csv_file = tmp_path / "rows.csv"
    csv_file.write_text(
        "\ufefftitle,link,when,count\n"
        'Sale,"https://shop.example/sale",2026-12-01T09:00:00Z,3\n'
        "short row\n"
        "a,b,c,d,e\n",
        encoding="utf-8",
    )
    json_file = tmp_path / "rows.json"
    json_file.write_text(json.dumps([{**row(), "count": 3}]))
    from_csv, from_json = read_rows(csv_file), read_rows(json_file)
    assert from_csv[0] == {**row(), "count": "3"}
    template = PAGE + "<p>{{count}}</p>"
    csv_plan = plan_stories(template, from_csv, "alice", at_column="when", now=NOW)
    json_plan = plan_stories(template, from_json, "alice", at_column="when", now=NOW)
    assert csv_plan.items[0].body == json_plan.items[0].body
    assert csv_plan.items[0].uuid == json_plan.items[0].uuid
    assert [str(p) for p in csv_plan.problems] == [
        "row 2: no value in column 'link'; no value in column 'count'; no value in column 'when'",
        "row 3: more fields than the header has columns; "
        "column 'when': 'c' is not an ISO 8601 date-time (e.g. 2026-07-01T09:30:00Z)",
    ]


def test_json_values_are_written_as_json(tmp_path: Path) -> None:
    data = tmp_path / "rows.json"
    data.write_text(json.dumps([{"q": "Best?", "options": ["a", 'b"c'], "n": 2.5, "yes": True}]))
    plan = plan_drafts(
        "<photoapp-poll question='{{q}}' options='{{options}}'></photoapp-poll>{{n}} {{yes}}",
        read_rows(data),
    )
    assert plan.items[0].body["html"] == (
        "<photoapp-poll question='Best?' options='[&quot;a&quot;, &quot;b\\&quot;c&quot;]'>"
        "</photoapp-poll>2.5 true"
    )


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("rows.txt", "a", "must end in .csv or .json"),
        ("rows.json", "{", "not JSON"),
        ("rows.json", '{"a": 1}', "expected a JSON array"),
        ("rows.csv", "a,a\n1,2\n", "the header repeats a"),
    ],
)
def test_unreadable_data_files(tmp_path: Path, name: str, content: str, message: str) -> None:
    path = tmp_path / name
    path.write_text(content)
    with pytest.raises(ValueError, match=message):
        read_rows(path)


@pytest.mark.parametrize("suffix", [".csv", ".json"])
def test_results_files_round_trip(tmp_path: Path, suffix: str) -> None:
    results = [
        RowResult(
            row=1,
            status="scheduled",
            uuid="5f0c7d38-94b1-5d4f-8d34-5d1c3e1e0d11",
            date=LATER,
            preview_url="https://media.example/p.jpg",
            warnings=("unknown attribute x", "overlap"),
        ),
        RowResult(row=2, status="skipped", error="no value in column 'link'"),
    ]
    path = tmp_path / f"results{suffix}"
    write_results(path, results)
    assert read_results(path) == results
    if suffix == ".csv":
        assert path.read_text().splitlines()[0] == ",".join(RESULT_COLUMNS)
    else:
        assert json.loads(path.read_text())[1] == {
            "row": 2,
            "uuid": None,
            "status": "skipped",
            "date": None,
            "previewUrl": None,
            "editorUrl": None,
            "warnings": [],
            "error": "no value in column 'link'",
        }
    assert read_results(tmp_path / f"none{suffix}") == []
    with pytest.raises(DataFileError):
        (tmp_path / "bad.json").write_text("{}")
        read_results(tmp_path / "bad.json")


def test_parse_duration() -> None:
    assert bulk.parse_duration("1h30m") == timedelta(minutes=90)
    assert bulk.parse_duration("2d") == timedelta(days=2)
    assert bulk.parse_duration("45s") == timedelta(seconds=45)
    with pytest.raises(ValueError, match="at least one second"):
        bulk.parse_duration("0m")

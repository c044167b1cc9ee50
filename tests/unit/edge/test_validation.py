"""Request validation: every kind of error gets the spec's explanation, and the 400 body."""

from __future__ import annotations

import json
from typing import Any

import pytest

from edge import validation
from edge.catalog import Procedure, build_catalog
from edge.validation import (
    validate_params,
    validation_body,
)

CATALOG = build_catalog()
STORY_UUID = "bc604f8c-650a-46ed-8726-def3cdf9d0c0"


def by_name(name: str) -> Procedure:
    procedure = CATALOG.get(name)
    assert procedure is not None, name
    return procedure


STORY = by_name("schedule-photoapp-story")
BLOB = by_name("create-temp-blob-upload-url")
CLIPAPP = by_name("schedule-clipapp-post")
SOCIAL = by_name("schedule-social-post")


def story(**changes: Any) -> dict[str, Any]:
    params: dict[str, Any] = {
        "html": "<photoapp-story></photoapp-story>",
        "photoappUsername": "sunnyshop",
        "storyPostUuid": STORY_UUID,
    }
    params.update(changes)
    return {key: value for key, value in params.items() if value is not None}


def explain(procedure: Procedure, params: object) -> dict[str, list[str]]:
    explanation = validate_params(procedure, params)
    assert explanation is not None
    return explanation


# --- valid input ----------------------------------------------------------------------------


def test_valid_params_give_none() -> None:
    assert validate_params(STORY, story()) is None
    assert validate_params(STORY, story(date="2026-07-01T09:30:00Z", aiGenerated=True)) is None


@pytest.mark.parametrize("value", ["104857512345678", 104857512345678])
def test_linknet_destination_id_is_string_or_integer(value: object) -> None:
    assert validate_params(STORY, story(shareToLinknet=True, linknetDestinationId=value)) is None


def test_empty_input_procedures_take_empty_object_only() -> None:
    procedure = by_name("generate-uuid")
    assert validate_params(procedure, {}) is None
    assert explain(procedure, {"count": 3}) == {"count": ["disallowed key"]}


def test_social_post_options_is_any_object() -> None:
    params = {
        "url": "https://example.com/page",
        "socialPostUuid": "6e3ad904-5df2-4afb-a744-18c526bb4e39",
        "socialAccountId": "sa_1",
        "postType": "VIDEO",
        "options": {"privacyLevel": "SELF_ONLY", "nested": {"a": [1]}},
    }
    assert validate_params(SOCIAL, params) is None
    assert explain(SOCIAL, {**params, "options": []}) == {"options": ["expected object, got array"]}


# --- unknown keys -------------------------------------------------------------------------


def test_unknown_key_is_disallowed_with_a_suggestion() -> None:
    params = story(storyPostUuid=None, storyPostUid=STORY_UUID)
    assert explain(STORY, params) == {
        "storyPostUuid": ["required key missing"],
        "storyPostUid": ["disallowed key", "did you mean 'storyPostUuid'?"],
    }


def test_suggestion_ignores_case() -> None:
    assert explain(STORY, story(sharetolinknet=True)) == {
        "sharetolinknet": ["disallowed key", "did you mean 'shareToLinknet'?"]
    }


def test_unknown_key_without_a_close_match_gets_no_suggestion() -> None:
    assert explain(STORY, story(priority=3)) == {"priority": ["disallowed key"]}


def test_every_unknown_key_is_reported() -> None:
    explanation = explain(STORY, story(foo=1, bar=2))
    assert explanation == {"foo": ["disallowed key"], "bar": ["disallowed key"]}


# --- missing keys and wrong types ---------------------------------------------------------


def test_missing_required_keys() -> None:
    assert explain(STORY, {"html": "<p>hi</p>"}) == {
        "photoappUsername": ["required key missing"],
        "storyPostUuid": ["required key missing"],
    }


@pytest.mark.parametrize(
    ("value", "got"),
    [
        (5, "integer"),
        (5.5, "number"),
        (True, "boolean"),
        (None, "null"),
        ([], "array"),
        ({}, "object"),
    ],
)
def test_wrong_type(value: object, got: str) -> None:
    params = story()
    params["photoappUsername"] = value
    assert explain(STORY, params) == {"photoappUsername": [f"expected string, got {got}"]}


def test_wrong_type_of_a_boolean_and_an_integer() -> None:
    assert explain(STORY, story(aiGenerated="yes")) == {
        "aiGenerated": ["expected boolean, got string"]
    }
    assert explain(STORY, story(linknetDestinationId=False)) == {
        "linknetDestinationId": ["expected string or integer, got boolean"]
    }
    params = {"tempBlobUuid": STORY_UUID, "contentType": "video/mp4", "contentLengthBytes": "9"}
    assert explain(BLOB, params) == {"contentLengthBytes": ["expected integer, got string"]}


@pytest.mark.parametrize("body", [[], "params", 3, None])
def test_a_body_that_is_not_an_object(body: object) -> None:
    explanation = explain(STORY, body)
    assert list(explanation) == ["$"]
    assert explanation["$"][0].startswith("expected object, got ")


# --- formats ------------------------------------------------------------------------------


BAD_UUIDS = (
    "not-a-uuid",
    "bc604f8c650a46ed8726def3cdf9d0c0",
    "{bc604f8c-650a-46ed-8726-def3cdf9d0c0}",
    "urn:uuid:bc604f8c-650a-46ed-8726-def3cdf9d0c0",
    "bc604f8c-650a-46ed-8726-def3cdf9d0c-0",
    "bc604f8c-650a-46ed-8726-def3cdf9d0cg",
    " bc604f8c-650a-46ed-8726-def3cdf9d0c0",
    "",
)
BAD_DATE_TIMES = (
    "2026-07-01",
    "2026-07-01 09:30:00Z",
    "2026-07-01T09:30:00",
    "tomorrow",
    "2026-13-01T00:00:00Z",
)


@pytest.mark.parametrize(
    ("name", "value", "problem"),
    [
        *(pytest.param("storyPostUuid", v, "not a valid uuid", id=f"uuid:{v}") for v in BAD_UUIDS),
        *(
            pytest.param("date", v, "not a valid ISO 8601 date-time", id=f"date-time:{v}")
            for v in BAD_DATE_TIMES
        ),
    ],
)
def test_bad_format(name: str, value: str, problem: str) -> None:
    assert explain(STORY, story(**{name: value})) == {name: [problem]}


def test_uppercase_uuid_is_a_uuid() -> None:
    assert validate_params(STORY, story(storyPostUuid=STORY_UUID.upper())) is None


@pytest.mark.parametrize(
    "value", ["2026-07-01T09:30:00Z", "2026-07-01T09:30:00.250Z", "2026-07-01T11:30:00+02:00"]
)
def test_good_date_time(value: str) -> None:
    assert validate_params(STORY, story(date=value)) is None


# --- bounds, enums, patterns --------------------------------------------------------------


def test_too_long_and_empty_strings() -> None:
    assert explain(STORY, story(photoappUsername="u" * 65)) == {
        "photoappUsername": ["must be at most 64 characters long (got 65)"]
    }
    assert explain(STORY, story(photoappUsername="")) == {"photoappUsername": ["must not be empty"]}
    assert explain(
        by_name("create-connect-link"),
        {
            "connectLinkUuid": STORY_UUID,
            "description": "d" * 501,
        },
    ) == {"description": ["must be at most 500 characters long (got 501)"]}


def test_html_up_to_10485760_characters() -> None:
    limit = 10_485_760
    assert validate_params(STORY, story(html="x" * limit)) is None
    assert explain(STORY, story(html="x" * (limit + 1))) == {
        "html": [f"must be at most {limit} characters long (got {limit + 1})"]
    }


def test_numeric_bounds() -> None:
    base = {"tempBlobUuid": STORY_UUID, "contentType": "video/mp4"}
    assert validate_params(BLOB, {**base, "contentLengthBytes": 104_857_600}) is None
    assert explain(BLOB, {**base, "contentLengthBytes": 0}) == {
        "contentLengthBytes": ["must be at least 1"]
    }
    assert explain(BLOB, {**base, "contentLengthBytes": 104_857_601}) == {
        "contentLengthBytes": ["must be at most 104857600"]
    }


def test_enum_and_minimum() -> None:
    params = {
        "url": "https://example.com/page",
        "clipappAccountId": "7096538120371831814",
        "clipappPostUuid": "54ba01fa-7f90-4e90-95c7-961c8cd5ceee",
        "privacyLevel": "PUBLIC",
        "videoCoverTimestampMs": -1,
    }
    assert explain(CLIPAPP, params) == {
        "privacyLevel": [
            "must be one of 'PUBLIC_TO_EVERYONE', 'MUTUAL_FOLLOW_FRIENDS', "
            "'FOLLOWER_OF_CREATOR', 'SELF_ONLY'"
        ],
        "videoCoverTimestampMs": ["must be at least 0"],
    }


@pytest.mark.parametrize("value", ["image/png", "video/mp4", "audio/mpeg", "image/svg+xml"])
def test_good_content_type(value: str) -> None:
    params = {"tempBlobUuid": STORY_UUID, "contentType": value, "contentLengthBytes": 10}
    assert validate_params(BLOB, params) is None


@pytest.mark.parametrize(
    "value", ["text/plain", "application/pdf", "video/", "video", "image/png; charset=x", ""]
)
def test_bad_content_type(value: str) -> None:
    params = {"tempBlobUuid": STORY_UUID, "contentType": value, "contentLengthBytes": 10}
    assert explain(BLOB, params) == {
        "contentType": ["must be an image/*, video/* or audio/* media type, e.g. 'video/mp4'"]
    }


def test_page_url_must_be_http_or_https() -> None:
    params = story(html=None, url="ftp://example.com/page")
    assert explain(STORY, params) == {"url": ["must start with http:// or https://"]}
    assert validate_params(STORY, story(html=None, url="https://example.com/p?a=1")) is None
    assert "url" in explain(STORY, story(html=None, url="https://exa mple.com/"))


def test_several_problems_with_one_key_are_all_listed_once() -> None:
    explanation = explain(STORY, story(html=None, url="not a url"))
    assert explanation["url"] == ["not a valid URI", "must start with http:// or https://"]


# --- nested values --------------------------------------------------------------------------

NESTED = Procedure(
    name="test-nested",
    summary="A procedure with nested input.",
    doc="Only for tests.",
    input_schema={
        "type": "object",
        "properties": {
            "options": {
                "type": "object",
                "properties": {
                    "privacy": {"type": "string", "enum": ["public", "private"]},
                    "tags": {"type": "array", "items": {"type": "string"}},
                },
                "required": ["privacy"],
                "additionalProperties": False,
            }
        },
        "additionalProperties": False,
    },
    output_schema={"type": "object"},
    example_input={"options": {"privacy": "public"}},
    example_output={},
)


def test_nested_errors_are_keyed_by_dotted_path() -> None:
    assert validate_params(NESTED, {"options": {"privacy": "public", "tags": ["a"]}}) is None
    assert explain(NESTED, {"options": {"privacy": 1, "tags": ["a", 2], "privcy": "x"}}) == {
        "options.privacy": ["expected string, got integer", "must be one of 'public', 'private'"],
        "options.tags.1": ["expected string, got integer"],
        "options.privcy": ["disallowed key", "did you mean 'privacy'?"],
    }
    assert explain(NESTED, {"options": {}}) == {"options.privacy": ["required key missing"]}


# --- the 400 body ---------------------------------------------------------------------------


def test_validation_body_has_the_spec_fields() -> None:
    explanation = explain(STORY, story(storyPostUuid=None, storyPostUid=STORY_UUID))
    body = validation_body(STORY, explanation)
    assert body["errorMessage"] == "invalid params for procedure: schedule-photoapp-story"
    assert body["procedureName"] == "schedule-photoapp-story"
    assert body["validationErrorExplanation"] == explanation
    schema = body["paramsJsonSchema"]
    assert schema["additionalProperties"] is False
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert {key: value for key, value in schema.items() if key != "$schema"} == STORY.input_schema
    json.dumps(body)


def test_validation_body_is_a_copy() -> None:
    body = validation_body(STORY, {"x": ["disallowed key"]})
    body["paramsJsonSchema"]["properties"].clear()
    assert STORY.input_schema["properties"]


# --- url / html: an expected error, not a validation error -----------------------------------


def test_both_or_neither_of_url_and_html_passes_the_schema() -> None:
    # The edge answers these with an expected error (400 with errorMessage) after the schema.
    assert validate_params(STORY, story(url="https://example.com/page")) is None
    assert validate_params(STORY, story(html=None)) is None


# --- validators are built once --------------------------------------------------------------


def test_validators_are_built_once_per_procedure() -> None:
    validation.prepare_validators(CATALOG)
    first = validation._validator(STORY)
    validate_params(STORY, story())
    assert validation._validator(STORY) is first


def test_an_empty_body_is_answered_from_its_first_answer_and_each_caller_gets_its_own() -> None:
    assert validate_params(by_name("generate-uuid"), {}) is None
    first = validate_params(STORY, {})
    assert first is not None
    assert first["storyPostUuid"] == ["required key missing"]
    first["storyPostUuid"].append("changed by a caller")
    first.clear()
    again = validate_params(STORY, {})
    assert again is not None
    assert again["storyPostUuid"] == ["required key missing"]
    assert again == validation._explain_all(STORY, {})

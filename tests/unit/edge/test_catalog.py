"""The procedure catalog: spec coverage, schema soundness, examples, catalog.json and OpenAPI."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import pytest
from jsonschema import Draft202012Validator  # type: ignore[import-untyped, unused-ignore]

from edge.catalog import Catalog, Procedure, build_catalog
from edge.validation import FORMAT_CHECKER, validate_params

# The spec's list of procedures, in the order its Endpoints section documents them.
SPEC_PROCEDURES = (
    "generate-uuid",
    "list-photoapp-users",
    "list-clipapp-accounts",
    "list-social-accounts",
    "create-connect-link",
    "create-temp-blob-upload-url",
    "upload-temp-blob",
    "create-draft",
    "status-draft",
    "delete-draft",
    "schedule-photoapp-story",
    "status-photoapp-story",
    "cancel-photoapp-story",
    "schedule-photoapp-reel",
    "status-photoapp-reel",
    "cancel-photoapp-reel",
    "schedule-clipapp-post",
    "status-clipapp-post",
    "cancel-clipapp-post",
    "schedule-social-post",
    "status-social-post",
    "cancel-social-post",
)
# Procedures added since (issue 51), after the spec's, in catalog order (catalogVersion 1).
ADDED_PROCEDURES = (
    *("list-posts", "reschedule-post", "set-queue", "list-queues", "preview-queue"),
    *("delete-queue", "status-series", "cancel-series", "get-post-insights"),
    "list-account-insights",
)
ALL_PROCEDURES = SPEC_PROCEDURES + ADDED_PROCEDURES
RENDER_PROCEDURES = {
    "create-draft",
    "schedule-photoapp-story",
    "schedule-photoapp-reel",
    "schedule-clipapp-post",
    "schedule-social-post",
}
NO_INPUT_PROCEDURES = {
    "generate-uuid",
    "list-photoapp-users",
    "list-clipapp-accounts",
    "list-social-accounts",
}
CATALOG = build_catalog()
PROCEDURES = CATALOG.procedures


def by_name(name: str) -> Procedure:
    procedure = CATALOG.get(name)
    assert procedure is not None, name
    return procedure


def ids(procedure: Procedure) -> str:
    return procedure.name


def prop(name: str, key: str) -> dict[str, Any]:
    properties: dict[str, Any] = by_name(name).input_schema["properties"]
    return dict(properties[key])


# --- the catalog as a whole -------------------------------------------------------------


def test_catalog_has_the_22_procedures_of_the_spec_in_order_then_the_added_ones() -> None:
    assert len(SPEC_PROCEDURES) == 22
    assert CATALOG.names() == ALL_PROCEDURES
    assert len(CATALOG) == len(ALL_PROCEDURES)
    assert [procedure.name for procedure in CATALOG] == list(ALL_PROCEDURES)


def test_get_finds_procedures_by_name_and_none_otherwise() -> None:
    assert by_name("generate-uuid").name == "generate-uuid"
    assert CATALOG.get("schedule-story") is None
    assert "create-draft" in CATALOG
    assert "create_draft" not in CATALOG


def test_build_catalog_is_built_once() -> None:
    assert build_catalog() is CATALOG


def test_duplicate_names_are_refused() -> None:
    procedure = by_name("generate-uuid")
    with pytest.raises(ValueError, match="share a name"):
        Catalog([procedure, procedure])


# --- every procedure ----------------------------------------------------------------------


@pytest.mark.parametrize("procedure", PROCEDURES, ids=ids)
def test_schemas_are_valid_draft_2020_12(procedure: Procedure) -> None:
    Draft202012Validator.check_schema(procedure.input_schema)
    Draft202012Validator.check_schema(procedure.output_schema)


@pytest.mark.parametrize("procedure", PROCEDURES, ids=ids)
def test_input_schema_is_a_closed_object(procedure: Procedure) -> None:
    schema = procedure.input_schema
    assert schema["type"] == "object"
    assert schema["additionalProperties"] is False
    assert set(schema.get("required", ())) <= set(schema["properties"])


@pytest.mark.parametrize("procedure", PROCEDURES, ids=ids)
def test_output_schema_is_an_open_object(procedure: Procedure) -> None:
    schema = procedure.output_schema
    assert schema["type"] == "object"
    # New entries may be added to responses at any time.
    assert schema.get("additionalProperties", True) is not False
    assert set(schema["required"]) <= set(schema["properties"])


@pytest.mark.parametrize("procedure", PROCEDURES, ids=ids)
def test_example_input_is_valid(procedure: Procedure) -> None:
    assert validate_params(procedure, dict(procedure.example_input)) is None
    if procedure.render_input:
        assert len({"url", "html"} & set(procedure.example_input)) == 1


@pytest.mark.parametrize("procedure", PROCEDURES, ids=ids)
def test_example_output_is_valid(procedure: Procedure) -> None:
    validator = Draft202012Validator(procedure.output_schema, format_checker=FORMAT_CHECKER)
    errors = [error.message for error in validator.iter_errors(procedure.example_output)]
    assert errors == []


@pytest.mark.parametrize("procedure", PROCEDURES, ids=ids)
def test_docs_are_written(procedure: Procedure) -> None:
    assert re.fullmatch(r"[a-z]+(-[a-z]+)+", procedure.name)
    assert procedure.summary.endswith(".")
    assert "\n" not in procedure.summary
    assert len(procedure.doc) > len(procedure.summary)
    assert procedure.tags
    assert procedure.idempotent


@pytest.mark.parametrize("procedure", PROCEDURES, ids=ids)
def test_every_property_is_described(procedure: Procedure) -> None:
    for schema in (procedure.input_schema, procedure.output_schema):
        for key, field in schema["properties"].items():
            assert field.get("description"), f"{procedure.name}: {key}"


@pytest.mark.parametrize("procedure", PROCEDURES, ids=ids)
def test_identifiers_are_uuids(procedure: Procedure) -> None:
    for schema in (procedure.input_schema, procedure.output_schema):
        for key, field in schema["properties"].items():
            if key.endswith("Uuid") or key == "uuid":
                assert (field["type"], field["format"]) == ("string", "uuid"), key


@pytest.mark.parametrize("procedure", PROCEDURES, ids=ids)
def test_dates_are_date_times(procedure: Procedure) -> None:
    for schema in (procedure.input_schema, procedure.output_schema):
        if "date" in schema["properties"]:
            assert schema["properties"]["date"]["format"] == "date-time"


@pytest.mark.parametrize("procedure", PROCEDURES, ids=ids)
def test_render_procedures_take_url_or_html_and_a_long_timeout(procedure: Procedure) -> None:
    properties = procedure.input_schema["properties"]
    required = procedure.input_schema.get("required", [])
    if procedure.name in RENDER_PROCEDURES:
        assert procedure.render_input
        assert procedure.client_timeout_seconds == 120
        assert properties["html"]["maxLength"] == 10_485_760
        assert properties["url"]["type"] == "string"
        # Exactly-one is an expected error checked by the edge, not a schema rule.
        assert "url" not in required
        assert "html" not in required
        assert not {"oneOf", "anyOf", "not"} & set(procedure.input_schema)
    else:
        assert not procedure.render_input
        assert procedure.client_timeout_seconds == 30
        assert "url" not in properties
        assert "html" not in properties


@pytest.mark.parametrize("name", sorted(NO_INPUT_PROCEDURES))
def test_procedures_without_input_take_the_empty_object(name: str) -> None:
    assert by_name(name).input_schema == {
        "type": "object",
        "properties": {},
        "additionalProperties": False,
    }


# --- fields, bounds and states of the spec ----------------------------------------------

REQUIRED_INPUTS = {
    "create-connect-link": ["connectLinkUuid"],
    "create-temp-blob-upload-url": ["tempBlobUuid", "contentType", "contentLengthBytes"],
    "upload-temp-blob": ["tempBlobUuid", "contentBase64", "contentType"],
    "create-draft": ["draftUuid"],
    "status-draft": ["draftUuid"],
    "delete-draft": ["draftUuid"],
    "schedule-photoapp-story": ["photoappUsername", "storyPostUuid"],
    "status-photoapp-story": ["storyPostUuid"],
    "cancel-photoapp-story": ["storyPostUuid"],
    "schedule-photoapp-reel": ["photoappUsername", "reelPostUuid"],
    "status-photoapp-reel": ["reelPostUuid"],
    "cancel-photoapp-reel": ["reelPostUuid"],
    "schedule-clipapp-post": ["clipappAccountId", "clipappPostUuid"],
    "status-clipapp-post": ["clipappPostUuid"],
    "cancel-clipapp-post": ["clipappPostUuid"],
    "schedule-social-post": ["socialPostUuid", "socialAccountId", "postType"],
    "status-social-post": ["socialPostUuid"],
    "cancel-social-post": ["socialPostUuid"],
    "reschedule-post": ["kind", "uuid"],  # and date, queueName or both (neither: a 400)
    "set-queue": ["socialAccountId", "timeZone", "slots"],
    "preview-queue": ["socialAccountId", "queueName"],
    "delete-queue": ["socialAccountId", "queueName"],
}


@pytest.mark.parametrize(("name", "required"), REQUIRED_INPUTS.items())
def test_required_inputs_are_those_of_the_spec(name: str, required: list[str]) -> None:
    assert by_name(name).input_schema["required"] == required


INPUT_FIELDS = {
    "create-connect-link": {"connectLinkUuid", "description"},
    "create-temp-blob-upload-url": {"tempBlobUuid", "contentType", "contentLengthBytes"},
    "upload-temp-blob": {"tempBlobUuid", "contentBase64", "contentType"},
    "create-draft": {"url", "html", "draftUuid", "name", "folderName"},
    "schedule-photoapp-story": {
        *("url", "html", "photoappUsername", "storyPostUuid", "date", "aiGenerated"),
        *("shareToLinknet", "linknetDestinationId", "queueName", "repeat"),
    },
    "schedule-photoapp-reel": {
        *("url", "html", "photoappUsername", "reelPostUuid", "caption", "date"),
        *("shareToFeed", "aiGenerated", "shareToLinknet", "queueName", "repeat"),
    },
    "schedule-clipapp-post": {
        *("url", "html", "clipappAccountId", "clipappPostUuid", "date", "title"),
        *("description", "privacyLevel", "videoCoverTimestampMs", "disableDuet"),
        *("disableComment", "disableStitch", "brandOrganic", "brandedContent"),
        *("aiGenerated", "autoAudio", "queueName", "repeat"),
    },
    "schedule-social-post": {
        *("url", "html", "socialAccountId", "socialPostUuid", "postType", "text"),
        *("options", "date", "queueName", "repeat"),
    },
    "list-posts": {
        *("kind", "status", "socialAccountId", "from", "to", "seriesUuid", "limit"),
        "cursor",
    },
    "reschedule-post": {"kind", "uuid", "date", "queueName"},
    "status-series": {"seriesUuid"},
    "cancel-series": {"seriesUuid"},
}


@pytest.mark.parametrize(("name", "fields"), INPUT_FIELDS.items())
def test_input_fields_are_exactly_those_of_the_spec(name: str, fields: set[str]) -> None:
    assert set(by_name(name).input_schema["properties"]) == fields


BOUNDS: list[tuple[str, str, dict[str, Any]]] = [
    ("create-connect-link", "description", {"type": "string", "maxLength": 500}),
    ("create-temp-blob-upload-url", "contentLengthBytes", {"minimum": 1, "maximum": 104857600}),
    ("create-temp-blob-upload-url", "contentLengthBytes", {"type": "integer"}),
    ("upload-temp-blob", "contentBase64", {"type": "string", "maxLength": 41943040}),
    ("create-draft", "name", {"minLength": 1, "maxLength": 200}),
    ("create-draft", "folderName", {"minLength": 1, "maxLength": 512}),
    ("schedule-photoapp-story", "photoappUsername", {"minLength": 1, "maxLength": 64}),
    ("schedule-photoapp-story", "aiGenerated", {"type": "boolean"}),
    ("schedule-photoapp-story", "shareToLinknet", {"type": "boolean"}),
    ("schedule-photoapp-story", "linknetDestinationId", {"type": ["string", "integer"]}),
    ("schedule-photoapp-reel", "photoappUsername", {"minLength": 1, "maxLength": 64}),
    ("schedule-photoapp-reel", "caption", {"type": "string", "maxLength": 2200}),
    ("schedule-photoapp-reel", "shareToFeed", {"type": "boolean", "default": False}),
    ("schedule-photoapp-reel", "shareToLinknet", {"type": "boolean", "default": True}),
    ("schedule-clipapp-post", "clipappAccountId", {"minLength": 1, "maxLength": 128}),
    ("schedule-clipapp-post", "title", {"maxLength": 2200}),
    ("schedule-clipapp-post", "description", {"maxLength": 2200}),
    ("schedule-clipapp-post", "videoCoverTimestampMs", {"type": "integer", "minimum": 0}),
    (
        "schedule-clipapp-post",
        "privacyLevel",
        {
            "enum": [
                "PUBLIC_TO_EVERYONE",
                "MUTUAL_FOLLOW_FRIENDS",
                "FOLLOWER_OF_CREATOR",
                "SELF_ONLY",
            ],
            "default": "SELF_ONLY",
        },
    ),
    ("schedule-social-post", "options", {"type": "object"}),
    ("schedule-social-post", "socialAccountId", {"minLength": 1, "maxLength": 128}),
    ("schedule-social-post", "postType", {"minLength": 1, "maxLength": 64}),
]


@pytest.mark.parametrize(("name", "key", "expected"), BOUNDS)
def test_bounds_are_those_of_the_spec(name: str, key: str, expected: dict[str, Any]) -> None:
    field = prop(name, key)
    assert {rule: field.get(rule) for rule in expected} == expected


@pytest.mark.parametrize(
    "name", ["create-temp-blob-upload-url", "upload-temp-blob"], ids=lambda name: name
)
def test_content_type_allows_only_image_video_audio(name: str) -> None:
    pattern = prop(name, "contentType")["pattern"]
    assert pattern == r"^(image|video|audio)/[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]{0,126}$"


STATUSES = {
    "status-draft": ["rendering", "ready", "failed", "deleted"],
    "delete-draft": ["deleted"],
    "schedule-photoapp-story": ["scheduled"],
    "status-photoapp-story": ["scheduled", "executed", "failed", "canceled"],
    "cancel-photoapp-story": ["canceled", "executed", "failed"],
    "schedule-photoapp-reel": ["scheduled"],
    "status-photoapp-reel": ["scheduled", "in-progress", "executed", "failed", "canceled"],
    "cancel-photoapp-reel": ["canceled"],
    "schedule-clipapp-post": ["scheduled"],
    "status-clipapp-post": ["scheduled", "in-progress", "executed", "failed", "canceled"],
    "cancel-clipapp-post": ["canceled"],
    # A repeated UUID answers with the post's current status, whatever it is.
    "schedule-social-post": ["scheduled", "in-progress", "executed", "failed", "canceled"],
    "status-social-post": ["scheduled", "in-progress", "executed", "failed", "canceled"],
    "cancel-social-post": ["canceled"],
    "reschedule-post": ["scheduled"],
}


@pytest.mark.parametrize(("name", "statuses"), STATUSES.items())
def test_statuses_are_those_of_the_spec(name: str, statuses: list[str]) -> None:
    schema = by_name(name).output_schema
    assert schema["properties"]["status"]["enum"] == statuses
    assert "status" in schema["required"]


REQUIRED_OUTPUTS = {
    "generate-uuid": ["uuid"],
    "list-photoapp-users": ["photoappUsers"],
    "list-clipapp-accounts": ["clipappAccounts"],
    "list-social-accounts": ["socialAccounts"],
    "create-connect-link": ["connectLinkUuid", "connectLinkUrl"],
    "create-temp-blob-upload-url": ["tempBlobUuid", "url"],
    "upload-temp-blob": ["tempBlobUuid", "url"],
    "create-draft": ["draftUuid", "editorUrl"],
    "status-draft": ["draftUuid", "status"],
    "status-photoapp-story": ["storyPostUuid", "status"],
    "status-clipapp-post": ["clipappPostUuid", "status"],
    "status-social-post": ["socialPostUuid", "status"],
    "list-posts": ["posts"],
    "reschedule-post": ["kind", "uuid", "status", "date"],
}


def test_queue_inputs() -> None:
    slots = prop("set-queue", "slots")
    assert (slots["minItems"], slots["maxItems"]) == (1, 100)
    assert slots["items"]["properties"]["weekday"]["enum"][0] == "monday"
    assert prop("set-queue", "queueName")["default"] == "default"
    assert (
        prop("preview-queue", "count")["maximum"],
        prop("preview-queue", "count")["default"],
    ) == (50, 10)
    procedure = by_name("set-queue")
    good = {
        "socialAccountId": "sa_1",
        "timeZone": "UTC",
        "slots": [{"weekday": "monday", "time": "09:00"}],
    }
    assert validate_params(procedure, good) is None
    for slot in ({"weekday": "monday", "time": "25:00"}, {"weekday": "mon", "time": "09:00"}):
        assert validate_params(procedure, {**good, "slots": [slot]}) is not None, slot
    assert validate_params(procedure, {**good, "slots": [good["slots"][0]] * 101}) is not None


def test_list_posts_pages_and_posts() -> None:
    procedure = by_name("list-posts")
    assert prop("list-posts", "limit") == {
        "type": "integer",
        "minimum": 1,
        "maximum": 100,
        "description": "Posts per page.",
        "default": 50,
    }
    assert prop("list-posts", "kind")["enum"] == ["story", "reel", "clipapp", "social"]
    assert prop("list-posts", "seriesUuid")["format"] == "uuid"
    post = procedure.output_schema["properties"]["posts"]["items"]
    assert post["required"] == ["kind", "uuid", "status", "date", "socialAccountId"]
    assert set(post["properties"]) == {
        *("kind", "uuid", "status", "date", "socialAccountId", "seriesUuid", "previewUrl"),
        *("errorMessage", "permalink"),
    }
    assert "nextCursor" in procedure.output_schema["properties"]
    for bad in ({"limit": 0}, {"limit": 101}, {"kind": "tweet"}, {"from": "2026-07-01"}):
        assert validate_params(procedure, bad) is not None, bad


@pytest.mark.parametrize(("name", "required"), REQUIRED_OUTPUTS.items())
def test_required_outputs_are_those_of_the_spec(name: str, required: list[str]) -> None:
    assert by_name(name).output_schema["required"] == required


def test_optional_outputs_of_the_spec_are_declared() -> None:
    def optional(name: str) -> set[str]:
        schema = by_name(name).output_schema
        return set(schema["properties"]) - set(schema["required"])

    assert optional("create-temp-blob-upload-url") == {"uploadUrl"}
    assert optional("create-draft") == {"warnings"}
    assert optional("status-draft") == {"previewUrl", "editorUrl"}
    # `date` only when the post took it from a queue (`queueName`, issue 51), `seriesUuid`
    # only with `repeat`.
    assert optional("schedule-photoapp-story") == {"warnings", "date", "seriesUuid"}
    assert optional("status-photoapp-story") == {"errorMessage", "previewUrl"}
    assert optional("status-photoapp-reel") == {"errorMessage"}
    assert optional("status-clipapp-post") == {"errorMessage", "clipappStatus"}
    assert optional("status-social-post") == {
        *("errorMessage", "permalink", "socialAccountId", "platform", "postType", "date"),
    }


def test_photoapp_user_and_clipapp_account_records() -> None:
    user = by_name("list-photoapp-users").output_schema["properties"]["photoappUsers"]["items"]
    assert user["required"] == ["photoappId", "photoappUsername"]
    assert user["properties"]["photoappId"]["pattern"] == r"^\d{1,50}$"
    destination = user["properties"]["linknetDestinations"]["items"]
    assert destination["required"] == [
        "linknetDestinationId",
        "linknetDestinationName",
        "linknetDestinationType",
    ]
    account = by_name("list-clipapp-accounts").output_schema["properties"]["clipappAccounts"]
    fields = account["items"]["properties"]
    assert (
        fields["clipappAccountName"]["minLength"],
        fields["clipappAccountName"]["maxLength"],
    ) == (
        1,
        100,
    )


def test_social_account_layout() -> None:
    schema = by_name("list-social-accounts").output_schema
    account = schema["properties"]["socialAccounts"]["items"]
    assert set(account["required"]) == {
        *("socialAccountId", "platform", "connection", "displayName", "disconnected"),
    }
    assert account["properties"]["connection"]["enum"] == ["direct", "social"]
    post_type = account["properties"]["postTypes"]["items"]
    assert {"postType", "procedure", "media", "maxCaptionLength", "options"} <= set(
        post_type["required"]
    )
    assert post_type["properties"]["media"]["enum"] == ["image", "video"]
    example = by_name("list-social-accounts").example_output["socialAccounts"]
    # A clipapp account may appear twice; a direct video-channel account has no postTypes.
    assert [a["connection"] for a in example if a["platform"] == "CLIPAPP"] == ["direct", "social"]
    channel = next(a for a in example if a["platform"] == "VIDEOCHANNEL")
    assert "postTypes" not in channel
    procedures = {t["procedure"] for a in example for t in a.get("postTypes", [])}
    assert procedures <= set(SPEC_PROCEDURES)


# --- catalog.json -------------------------------------------------------------------------


def test_catalog_json_lists_every_procedure_with_its_facts() -> None:
    document = CATALOG.to_catalog_json()
    assert document["catalogVersion"] == 1
    entries = document["procedures"]
    assert [entry["name"] for entry in entries] == list(ALL_PROCEDURES)
    for entry, procedure in zip(entries, PROCEDURES, strict=True):
        assert set(entry) == {
            *("name", "summary", "doc", "inputSchema", "outputSchema", "exampleInput"),
            *("exampleOutput", "renderInput", "idempotent", "clientTimeoutSeconds"),
        }
        assert entry["inputSchema"] == procedure.input_schema
        assert entry["outputSchema"] == procedure.output_schema
        assert entry["renderInput"] is procedure.render_input
        assert entry["clientTimeoutSeconds"] in (30, 120)
        assert isinstance(entry["clientTimeoutSeconds"], int)
    json.dumps(document)


def test_catalog_json_is_a_copy() -> None:
    document = CATALOG.to_catalog_json()
    document["procedures"][0]["inputSchema"]["properties"]["x"] = {}
    assert "x" not in PROCEDURES[0].input_schema["properties"]


# --- OpenAPI ------------------------------------------------------------------------------

OPENAPI = CATALOG.to_openapi("https://storypost.example.com/")
OPENAPI_TOP_LEVEL = {
    *("openapi", "info", "jsonSchemaDialect", "servers", "paths", "webhooks"),
    *("components", "security", "tags", "externalDocs"),
}
COMPONENT_KINDS = {
    *("schemas", "responses", "parameters", "examples", "requestBodies", "headers"),
    *("securitySchemes", "links", "callbacks", "pathItems"),
}
OPERATION_KEYS = {
    *("tags", "summary", "description", "externalDocs", "operationId", "parameters"),
    *("requestBody", "responses", "callbacks", "deprecated", "security", "servers"),
}


def refs(node: object) -> Iterator[str]:
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "$ref" and isinstance(value, str):
                yield value
            else:
                yield from refs(value)
    elif isinstance(node, list):
        for item in node:
            yield from refs(item)


def resolve(document: dict[str, Any], ref: str) -> Any:
    assert ref.startswith("#/"), ref
    node: Any = document
    for part in ref[2:].split("/"):
        node = node[part.replace("~1", "/").replace("~0", "~")]
    return node


def test_openapi_top_level_shape() -> None:
    assert OPENAPI["openapi"] == "3.1.0"
    assert set(OPENAPI) <= OPENAPI_TOP_LEVEL
    assert OPENAPI["info"]["title"]
    assert isinstance(OPENAPI["info"]["version"], str)
    assert OPENAPI["servers"] == [{"url": "https://storypost.example.com"}]
    assert OPENAPI["jsonSchemaDialect"] == "https://json-schema.org/draft/2020-12/schema"
    assert set(OPENAPI["components"]) <= COMPONENT_KINDS
    assert OPENAPI["components"]["securitySchemes"]["bearerAuth"] == {
        "type": "http",
        "scheme": "bearer",
        "description": OPENAPI["components"]["securitySchemes"]["bearerAuth"]["description"],
    }
    assert OPENAPI["security"] == [{"bearerAuth": []}]
    tag_names = [tag["name"] for tag in OPENAPI["tags"]]
    assert len(tag_names) == len(set(tag_names))
    json.dumps(OPENAPI)


def test_openapi_has_one_post_path_per_procedure() -> None:
    paths = OPENAPI["paths"]
    assert list(paths) == [f"/o/{{organizationId}}/api/v1/{name}" for name in ALL_PROCEDURES]
    operation_ids = []
    declared_tags = {tag["name"] for tag in OPENAPI["tags"]}
    for path, item in paths.items():
        assert set(item) == {"parameters", "post"}
        operation = item["post"]
        assert {key for key in operation if not key.startswith("x-")} <= OPERATION_KEYS
        operation_ids.append(operation["operationId"])
        assert set(operation["tags"]) <= declared_tags
        # Every template variable of the path is declared as a required path parameter.
        parameters = [resolve(OPENAPI, p["$ref"]) for p in item["parameters"]]
        for variable in re.findall(r"{([^}]+)}", path):
            declared = [p for p in parameters if p["name"] == variable and p["in"] == "path"]
            assert declared and declared[0]["required"] is True
    assert len(set(operation_ids)) == len(ALL_PROCEDURES)
    assert by_name("schedule-photoapp-story") and "schedulePhotoappStory" in operation_ids


def test_openapi_responses_cover_success_and_every_error() -> None:
    rate_limit = {"RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset"}
    for item in OPENAPI["paths"].values():
        responses = item["post"]["responses"]
        assert set(responses) == {"200", "400", "401", "404", "413", "429", "500", "503"}
        for status, response in responses.items():
            response = resolve(OPENAPI, response["$ref"]) if "$ref" in response else response
            assert response["description"]
            assert "application/json" in response["content"]
            headers = set(response["headers"])
            assert "X-Request-Id" in headers
            # The caller's organization is unknown without a valid token.
            assert rate_limit <= headers if status != "401" else not rate_limit & headers
            assert ("Retry-After" in headers) == (status in ("429", "503"))
            for header in response["headers"].values():
                assert "schema" in resolve(OPENAPI, header["$ref"])
    responses = OPENAPI["components"]["responses"]
    assert responses["Unauthenticated"]["content"]["application/json"]["example"] == {
        "errorMessage": "not authenticated"
    }
    too_many = resolve(OPENAPI, "#/components/headers/Retry-After")
    assert too_many["schema"]["type"] == "integer"


def test_openapi_error_examples_match_their_schemas() -> None:
    for response in OPENAPI["components"]["responses"].values():
        media = response["content"]["application/json"]
        validator = Draft202012Validator(
            {**media["schema"], "components": OPENAPI["components"]},
        )
        assert validator.is_valid(media["example"])


def test_openapi_refs_resolve_and_schemas_are_valid() -> None:
    for ref in refs(OPENAPI):
        resolve(OPENAPI, ref)
    for name, schema in OPENAPI["components"]["schemas"].items():
        assert re.fullmatch(r"[A-Za-z0-9._-]+", name)
        Draft202012Validator.check_schema(schema)


def test_openapi_examples_match_their_schemas() -> None:
    for item in OPENAPI["paths"].values():
        operation = item["post"]
        request = operation["requestBody"]["content"]["application/json"]
        response = operation["responses"]["200"]["content"]["application/json"]
        for media in (request, response):
            schema = resolve(OPENAPI, media["schema"]["$ref"])
            # Nested records are named components: their refs resolve in the document's.
            validator = Draft202012Validator(
                {**schema, "components": OPENAPI["components"]}, format_checker=FORMAT_CHECKER
            )
            assert list(validator.iter_errors(media["example"])) == []


def test_openapi_error_bodies() -> None:
    schemas = OPENAPI["components"]["schemas"]
    error = Draft202012Validator(schemas["ErrorBody"])
    validation = Draft202012Validator(schemas["ValidationErrorBody"])
    assert error.is_valid({"errorMessage": "not authenticated"})
    assert not error.is_valid({})
    body = {
        "errorMessage": "invalid params for procedure: create-draft",
        "procedureName": "create-draft",
        "paramsJsonSchema": {"type": "object"},
        "validationErrorExplanation": {"draftUuid": ["required key missing"]},
    }
    assert validation.is_valid(body)
    assert not validation.is_valid({**body, "validationErrorExplanation": {"x": []}})
    assert not validation.is_valid({"errorMessage": "invalid params for procedure: x"})


def test_openapi_document_passes_the_official_validator() -> None:
    from openapi_spec_validator import validate

    validate(build_catalog().to_openapi("http://127.0.0.1:8080"))

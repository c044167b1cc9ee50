"""The catalog of all procedures, and the documents built from it: catalog.json and OpenAPI."""

from __future__ import annotations

import copy
import functools
import json
from collections.abc import Iterable, Iterator
from typing import Any

from edge.catalog import accounts, clipapp, insights, media, misc, photoapp, planning, social
from edge.catalog.model import Procedure

CATALOG_VERSION = 1
JSON_SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"
PROCEDURE_PATH = "/o/{organizationId}/api/v1/"

_TAGS = {
    "utilities": "Helpers that need no stored resource.",
    "accounts": "Connected accounts and connect links.",
    "media": "Temporary media blobs used as `src` in pages.",
    "drafts": "Renderings kept as drafts in the gallery, not posted.",
    "photoapp": "Stories and reels on the photo network (photoapp).",
    "clipapp": "Posts on the short-video network (clipapp), connected directly.",
    "social": "Posts on any platform connected through the social integrations.",
    "planning": "Posts of every kind: listing them and moving scheduled ones.",
    "insights": "What the platforms report about published posts and connected accounts.",
}
_API_DESCRIPTION = (
    "Renders pages built from story components into images or videos and posts them as "
    "photoapp stories and reels, clipapp posts and posts on other social platforms, or "
    "keeps them as drafts.\n\n"
    "An HTTP RPC interface: every procedure is `POST {base_url}/<procedure-name>` with a "
    "JSON object as body (`{}` when it takes no input) and answers a JSON object; "
    "`{base_url}` is `/o/<organizationId>/api/v1` and a token only works for its own "
    "organization. Unknown request keys are rejected; clients must ignore unknown "
    "response keys, because new ones may be added at any time.\n\n"
    "Retry 429, 502, 503 and 504 with exponential backoff (or every 2 seconds plus a "
    "random 0 to 999 ms), giving up after about 5 attempts; every procedure of v1 is "
    "idempotent, so retrying with the same body is safe."
)
_ERROR_RESPONSES = {
    "400": "BadRequest",
    "401": "Unauthenticated",
    "404": "NotFound",
    "413": "PayloadTooLarge",
    "429": "TooManyRequests",
    "500": "InternalError",
    "503": "Unavailable",
}
_RATE_LIMIT_HEADERS = ("RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset")


class Catalog:
    """The procedures of the API in spec order, looked up by name."""

    def __init__(self, procedures: Iterable[Procedure]) -> None:
        self._procedures = tuple(procedures)
        self._by_name = {procedure.name: procedure for procedure in self._procedures}
        if len(self._by_name) != len(self._procedures):
            raise ValueError("two procedures share a name")

    @property
    def procedures(self) -> tuple[Procedure, ...]:
        """Every procedure, in spec order."""
        return self._procedures

    def get(self, name: str) -> Procedure | None:
        """The procedure called `name`, or None when there is none."""
        return self._by_name.get(name)

    def names(self) -> tuple[str, ...]:
        """The procedure names, in spec order."""
        return tuple(procedure.name for procedure in self._procedures)

    def __iter__(self) -> Iterator[Procedure]:
        return iter(self._procedures)

    def __len__(self) -> int:
        return len(self._procedures)

    def __contains__(self, name: object) -> bool:
        return name in self._by_name

    def to_catalog_json(self) -> dict[str, Any]:
        """The machine-readable catalog served as `GET /api/v1/catalog.json`."""
        return {
            "catalogVersion": CATALOG_VERSION,
            "jsonSchemaDialect": JSON_SCHEMA_DIALECT,
            "procedures": [_catalog_entry(procedure) for procedure in self._procedures],
        }

    def to_openapi(self, server_url: str) -> dict[str, Any]:
        """An OpenAPI 3.1 document of every procedure, served as `GET /api/v1/openapi.json`."""
        schemas: dict[str, Any] = {
            "ErrorBody": _error_body_schema(),
            "ValidationErrorBody": _open_objects(_validation_error_body_schema()),
        }
        paths: dict[str, Any] = {}
        for procedure in self._procedures:
            prefix = _pascal_case(procedure.name)
            request = _defaults_described(
                _open_objects(copy.deepcopy(dict(procedure.input_schema)))
            )
            response = _open_objects(copy.deepcopy(dict(procedure.output_schema)))
            for name, schema in ((f"{prefix}Request", request), (f"{prefix}Response", response)):
                schemas[name] = _named_parts(schema, name, schemas)
            paths[PROCEDURE_PATH + procedure.name] = {
                "parameters": [
                    {"$ref": "#/components/parameters/OrganizationId"},
                    {"$ref": "#/components/parameters/RequestId"},
                ],
                "post": _operation(procedure, prefix),
            }
        used_tags = {tag for procedure in self._procedures for tag in procedure.tags}
        return {
            "openapi": "3.1.0",
            "jsonSchemaDialect": JSON_SCHEMA_DIALECT,
            "info": {
                "title": "storypost API",
                "version": f"v{CATALOG_VERSION}",
                "summary": "Render story pages and post them on schedule.",
                "description": _API_DESCRIPTION,
            },
            "servers": [{"url": server_url.rstrip("/")}],
            "security": [{"bearerAuth": []}],
            "tags": [
                {"name": name, "description": text}
                for name, text in _TAGS.items()
                if name in used_tags
            ],
            "paths": paths,
            "components": {
                "schemas": schemas,
                "parameters": {
                    "OrganizationId": _organization_parameter(),
                    "RequestId": _request_id_parameter(),
                },
                "headers": _headers(),
                "responses": _error_responses(),
                "securitySchemes": {
                    "bearerAuth": {
                        "type": "http",
                        "scheme": "bearer",
                        "description": (
                            "`Authorization: Bearer <API_TOKEN>`; API credentials are "
                            "created in the account settings of the app."
                        ),
                    }
                },
            },
        }


@functools.cache
def build_catalog() -> Catalog:
    """The catalog of API v1: the spec's 22 procedures in the order it lists them, then the
    ones added since (catalogVersion stays 1: additions only)."""
    return Catalog(
        (
            *misc.PROCEDURES,
            *accounts.PROCEDURES,
            *media.PROCEDURES,
            *photoapp.PROCEDURES,
            *clipapp.PROCEDURES,
            *social.PROCEDURES,
            *planning.PROCEDURES,
            *insights.PROCEDURES,
        )
    )


def _catalog_entry(procedure: Procedure) -> dict[str, Any]:
    return {
        "name": procedure.name,
        "summary": procedure.summary,
        "doc": procedure.doc,
        "inputSchema": copy.deepcopy(dict(procedure.input_schema)),
        "outputSchema": copy.deepcopy(dict(procedure.output_schema)),
        "exampleInput": copy.deepcopy(dict(procedure.example_input)),
        "exampleOutput": copy.deepcopy(dict(procedure.example_output)),
        "renderInput": procedure.render_input,
        "idempotent": procedure.idempotent,
        "clientTimeoutSeconds": _number(procedure.client_timeout_seconds),
    }


def _number(value: float) -> int | float:
    # 120 rather than 120.0 in JSON: generated clients then see an integer type.
    return int(value) if value.is_integer() else value


def _pascal_case(name: str) -> str:
    return "".join(part.capitalize() for part in name.split("-"))


def _open_objects(node: Any) -> Any:
    """`node` with `additionalProperties: true` on each object schema that says nothing of its
    keys (an `options` map, the validation body's `paramsJsonSchema`).

    JSON Schema reads such an object as open; openapi-typescript reads it as closed
    (`Record<string, never>`: no key can be given), so the document says it."""
    if isinstance(node, dict):
        for value in node.values():
            _open_objects(value)
        if (
            node.get("type") == "object"
            and "properties" not in node
            and "additionalProperties" not in node
        ):
            node["additionalProperties"] = True
    elif isinstance(node, list):
        for item in node:
            _open_objects(item)
    return node


def _defaults_described(request: dict[str, Any]) -> dict[str, Any]:
    """A request schema whose keys' `default`s are said in their descriptions instead.

    A default is what the API uses when the key is left out. Generators read it otherwise:
    openapi-typescript makes a key with a default required in a named schema, and
    openapi-python-client sends the default itself; without it both leave the key out, as
    the SDKs do, and the API's default applies."""
    for prop in request.get("properties", {}).values():
        if isinstance(prop, dict) and "default" in prop:
            shown = json.dumps(prop.pop("default"))
            description = str(prop.get("description", "")).rstrip()
            prop["description"] = f"{description} Default when omitted: `{shown}`.".lstrip()
    return request


def _type_name(key: str) -> str:
    """The name of what a property holds: `postTypes` → `PostType`, `options` → `Option`."""
    name = key[:1].upper() + key[1:]
    return name[:-1] if name.endswith("s") and not name.endswith("ss") else name


def _named_parts(schema: dict[str, Any], owner: str, named: dict[str, Any]) -> dict[str, Any]:
    """`schema` (the component `owner`) with each nested object that has properties moved
    into `named` and referenced by name.

    Generators name an inline object after its path (openapi-python-client's
    `ListSocialAccountsResponseSocialAccountsItemPostTypesItem`), and openapi-typescript
    leaves it without a name at all: a named component is a type a caller can write down.
    Names follow the Python SDK's (`SocialAccount`, `PostType`, `PostTypeOption`): what a
    property holds, in the singular (the values of a map prefixed with their owner); the
    same schema under the same name is one component, another one is prefixed with its
    owner."""
    properties = schema.get("properties")
    if not isinstance(properties, dict):
        return schema
    for key, prop in properties.items():
        if _is_record(prop):
            description = prop.pop("description", None)
            ref = _component(prop, _type_name(key), owner, named)
            properties[key] = ref | ({"description": description} if description else {})
        elif prop.get("type") == "array" and _is_record(prop.get("items")):
            prop["items"] = _component(prop["items"], _type_name(key), owner, named)
        elif prop.get("type") == "object" and _is_record(prop.get("additionalProperties")):
            value_name = owner + _type_name(key)
            prop["additionalProperties"] = _component(
                prop["additionalProperties"], value_name, owner, named
            )
    return schema


def _is_record(schema: object) -> bool:
    return isinstance(schema, dict) and schema.get("type") == "object" and "properties" in schema


def _component(
    schema: dict[str, Any], name: str, owner: str, named: dict[str, Any]
) -> dict[str, str]:
    """A `$ref` to `schema` under `name` in `named` (under `owner + name` when `name` is
    another schema's already; its own parts are then named under that longer name, so the
    parts of two schemas of one name, such as each schedule procedure's `repeat`, differ)."""
    trial = dict(named)
    try:
        parts: dict[str, Any] | None = _named_parts(copy.deepcopy(schema), name, trial)
    except ValueError:
        parts = None
    if parts is not None and (name not in trial or trial[name] == parts):
        named.update(trial)
        named[name] = parts
        return {"$ref": f"#/components/schemas/{name}"}
    name = owner + name
    parts = _named_parts(schema, name, named)
    if name in named and named[name] != parts:
        raise ValueError(f"two different schemas would be called {name}")
    named[name] = parts
    return {"$ref": f"#/components/schemas/{name}"}


def _operation(procedure: Procedure, prefix: str) -> dict[str, Any]:
    operation_id = prefix[0].lower() + prefix[1:]
    responses: dict[str, Any] = {
        "200": {
            "description": "Success.",
            "headers": _header_refs("X-Request-Id", *_RATE_LIMIT_HEADERS),
            "content": {
                "application/json": {
                    "schema": {"$ref": f"#/components/schemas/{prefix}Response"},
                    "example": copy.deepcopy(dict(procedure.example_output)),
                }
            },
        }
    }
    for status, name in _ERROR_RESPONSES.items():
        responses[status] = {"$ref": f"#/components/responses/{name}"}
    return {
        "operationId": operation_id,
        "summary": procedure.summary,
        "description": procedure.doc,
        "tags": list(procedure.tags),
        "requestBody": {
            "required": True,
            "content": {
                "application/json": {
                    "schema": {"$ref": f"#/components/schemas/{prefix}Request"},
                    "example": copy.deepcopy(dict(procedure.example_input)),
                }
            },
        },
        "responses": responses,
        # Facts a generated client needs that OpenAPI has no field for.
        "x-storypost-procedure": procedure.name,
        "x-storypost-render-input": procedure.render_input,
        "x-storypost-idempotent": procedure.idempotent,
        "x-storypost-client-timeout-seconds": _number(procedure.client_timeout_seconds),
    }


def _organization_parameter() -> dict[str, Any]:
    return {
        "name": "organizationId",
        "in": "path",
        "required": True,
        "description": "The organization the bearer token belongs to.",
        "schema": {"type": "string", "minLength": 1, "maxLength": 64},
    }


def _request_id_parameter() -> dict[str, Any]:
    return {
        "name": "X-Request-Id",
        "in": "header",
        "required": False,
        "description": (
            "Your own id for the request, echoed in the answer and written to every log line "
            "of it; a new one is made when absent or not of this shape."
        ),
        "schema": {"type": "string", "pattern": "^[A-Za-z0-9._:-]{1,128}$"},
    }


def _error_body_schema() -> dict[str, Any]:
    return {
        "type": "object",
        "description": "Every error answer carries a human-readable `errorMessage`.",
        "properties": {
            "errorMessage": {"type": "string", "description": "What went wrong."},
            "errorCode": {
                "type": "string",
                "description": (
                    "A machine-readable reason such as `RATE_LIMITED` or `QUOTA_EXCEEDED`, "
                    "when there is one; do not depend on it being present."
                ),
            },
        },
        "required": ["errorMessage"],
    }


def _validation_error_body_schema() -> dict[str, Any]:
    return {
        "type": "object",
        "description": "The request body does not match the procedure's input schema.",
        "properties": {
            "errorMessage": {
                "type": "string",
                "pattern": "^invalid params for procedure: ",
                "description": "`invalid params for procedure: <procedure-name>`.",
            },
            "procedureName": {"type": "string", "description": "The procedure called."},
            "paramsJsonSchema": {
                "type": "object",
                "description": "JSON Schema (draft 2020-12) of the procedure's input.",
            },
            "validationErrorExplanation": {
                "type": "object",
                "description": (
                    "Offending key (a dotted path for nested values, `$` for the body "
                    "itself) to explanations, e.g. `disallowed key`, `did you mean "
                    "'storyPostUuid'?`, `required key missing`, `expected string, got "
                    "integer`."
                ),
                "additionalProperties": {
                    "type": "array",
                    "items": {"type": "string"},
                    "minItems": 1,
                },
            },
        },
        "required": [
            "errorMessage",
            "procedureName",
            "paramsJsonSchema",
            "validationErrorExplanation",
        ],
    }


def _headers() -> dict[str, Any]:
    def integer(description: str) -> dict[str, Any]:
        return {"description": description, "schema": {"type": "integer", "minimum": 0}}

    return {
        "Retry-After": integer("Seconds to wait before retrying."),
        "RateLimit-Limit": integer("Requests the organization may make per minute."),
        "RateLimit-Remaining": integer("Requests left right now."),
        "RateLimit-Reset": integer("Seconds until the allowance is full again."),
        "X-Request-Id": {
            "description": "The id of the request (yours when you sent a valid one).",
            "schema": {"type": "string"},
        },
    }


def _header_refs(*names: str) -> dict[str, Any]:
    return {name: {"$ref": f"#/components/headers/{name}"} for name in names}


def _error_response(
    description: str, example: dict[str, str], *, headers: tuple[str, ...] = _RATE_LIMIT_HEADERS
) -> dict[str, Any]:
    return {
        "description": description,
        "headers": _header_refs("X-Request-Id", *headers),
        "content": {
            "application/json": {
                "schema": {"$ref": "#/components/schemas/ErrorBody"},
                "example": example,
            }
        },
    }


def _error_responses() -> dict[str, Any]:
    retry_headers = ("Retry-After", *_RATE_LIMIT_HEADERS)
    bad_request = _error_response(
        "Invalid params (a validation error body: unknown key, missing required key, wrong "
        "type, bad format or a value out of bounds), or an expected error with "
        "`errorMessage`: a body that is not a JSON object, both or neither of `url` and "
        "`html`, a video that does not meet the requirements, a state that forbids the call, "
        "a quota.",
        {"errorMessage": "exactly one of url or html must be given (both were)"},
    )
    bad_request["content"]["application/json"]["schema"] = {
        # anyOf, not oneOf: a validation body is also a valid error body.
        "anyOf": [
            {"$ref": "#/components/schemas/ValidationErrorBody"},
            {"$ref": "#/components/schemas/ErrorBody"},
        ]
    }
    return {
        "BadRequest": bad_request,
        "Unauthenticated": _error_response(
            "Missing or invalid bearer token, or a token of another organization.",
            {"errorMessage": "not authenticated"},
            headers=(),
        ),
        "NotFound": _error_response(
            "The path names no procedure of this API.",
            {"errorMessage": "unknown procedure: schedule-story"},
        ),
        "PayloadTooLarge": _error_response(
            "The request body is too large.",
            {"errorMessage": "request body too large"},
        ),
        "TooManyRequests": _error_response(
            "Too many requests: the rate limit (60 requests per minute per organization, a "
            "token bucket) is exceeded, the servers are too busy, every connected photoapp "
            "account is busy resolving a mention, or a social post being uploaded cannot be "
            "canceled yet. Retry after `Retry-After` seconds with the same body.",
            {"errorMessage": "rate limit exceeded", "errorCode": "RATE_LIMITED"},
            headers=retry_headers,
        ),
        "InternalError": _error_response(
            "Unexpected server error; retry only if the procedure is idempotent (every "
            "procedure of v1 is).",
            {"errorMessage": "internal server error"},
        ),
        "Unavailable": _error_response(
            "A service is temporarily unavailable or too slow (for example during a "
            "deploy); retry after `Retry-After` seconds with the same body.",
            {"errorMessage": "a service is temporarily unavailable; retry with the same request"},
            headers=retry_headers,
        ),
    }

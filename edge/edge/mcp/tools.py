"""The MCP side of the catalog: a tool per procedure, the catalog document as a resource, and
an API answer as a tool result. Everything is read from `catalog.json`'s entries, the document
the API serves, so the tools and the API cannot differ (and new procedures appear as tools)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import mcp.types as types

SERVER_NAME = "storypost"
CATALOG_URI = "storypost://api/v1/catalog.json"
INSTRUCTIONS = (
    "Each tool is one procedure of the storypost HTTP RPC API, with the same input schema "
    "and answer. Resource identifiers (storyPostUuid, draftUuid, ...) are chosen by the "
    "caller: use generate-uuid or any random UUID, and reuse it to retry safely. An error "
    "answer is a tool result with isError true and the API's error body (errorMessage; "
    "a validation error also names each offending key). The catalog of every procedure "
    f"is the resource {CATALOG_URI}."
)
# The HTTP status the API would have answered, in an error result's `_meta`.
STATUS_META_KEY = "storypost/httpStatus"


def tool_of(entry: Mapping[str, Any]) -> types.Tool:
    """The tool of one catalog.json procedure entry."""
    return types.Tool(
        name=entry["name"],
        description=f"{entry['summary']}\n\n{entry['doc']}",
        input_schema=dict(entry["inputSchema"]),
        output_schema=dict(entry["outputSchema"]),
        annotations=types.ToolAnnotations(idempotent_hint=bool(entry.get("idempotent"))),
    )


def tools_of(catalog_json: Mapping[str, Any]) -> list[types.Tool]:
    return [tool_of(entry) for entry in catalog_json["procedures"]]


def catalog_resource() -> types.Resource:
    return types.Resource(
        uri=CATALOG_URI,
        name="catalog",
        title="storypost API catalog",
        description="Every procedure of the API: input and output JSON Schemas, examples, "
        "timeouts (the document GET /api/v1/catalog.json serves).",
        mime_type="application/json",
    )


def catalog_contents(catalog_json: Mapping[str, Any]) -> types.ReadResourceResult:
    return types.ReadResourceResult(
        contents=[
            types.TextResourceContents(
                uri=CATALOG_URI, mime_type="application/json", text=json.dumps(catalog_json)
            )
        ]
    )


def success(body: Mapping[str, Any]) -> types.CallToolResult:
    """A procedure's answer: its JSON body as text and as structured content."""
    return types.CallToolResult(
        content=[types.TextContent(text=json.dumps(body, ensure_ascii=False))],
        structured_content=dict(body),
    )


def failure(status: int, body: Mapping[str, Any]) -> types.CallToolResult:
    """An error answer of the API: its body unchanged (errorMessage, a validation error's
    explanation), isError set, the HTTP status in `_meta`."""
    return types.CallToolResult(
        content=[types.TextContent(text=json.dumps(body, ensure_ascii=False))],
        structured_content=dict(body),
        is_error=True,
        _meta={STATUS_META_KEY: status},
    )


def unknown_resource(uri: str) -> ValueError:
    return ValueError(f"unknown resource: {uri}")

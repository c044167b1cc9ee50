"""The procedure model: one record per API procedure, the single source of truth for its shape."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

JsonObject = Mapping[str, Any]


@dataclass(frozen=True, kw_only=True)
class Procedure:
    """One procedure of the HTTP RPC API (`POST {base_url}/<name>`)."""

    name: str
    # One line for lists, then the full description (Markdown).
    summary: str
    doc: str
    # JSON Schema (draft 2020-12) of the request body; always `type: object`,
    # `additionalProperties: false`.
    input_schema: JsonObject
    # JSON Schema of the success response body (clients must ignore unknown fields, so
    # output schemas allow additional properties).
    output_schema: JsonObject
    example_input: JsonObject
    example_output: JsonObject
    # Exactly one of `url` / `html` must be given (checked beyond the schema).
    render_input: bool = False
    # Safe to retry with the same body (every procedure of v1 is).
    idempotent: bool = True
    # Client read timeout the caller should use, in seconds.
    client_timeout_seconds: float = 30.0
    tags: tuple[str, ...] = field(default=())

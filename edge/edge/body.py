"""Reads a request body as one JSON object, with clear 400/413 answers for anything else."""

from __future__ import annotations

import json
import math
from typing import Any

import falcon

from edge.errors import ApiError


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _parse_float(text: str) -> float | int:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{text} is out of range")
    # JSON Schema counts 2.0 as an integer: integer fields must get a Python int (protobuf
    # refuses a float for an int field). Beyond 2**53 a float is not an exact integer.
    if value.is_integer() and abs(value) <= 2**53:
        return int(value)
    return value


def read_json_object(req: falcon.Request, max_bytes: int) -> dict[str, Any]:
    media_type = (req.content_type or "").split(";", 1)[0].strip().lower()
    if media_type != "application/json":
        raise ApiError(400, "Content-Type must be application/json")
    length = req.content_length
    if length is not None and length > max_bytes:
        raise ApiError(413, f"request body too large: at most {max_bytes} bytes")
    raw = req.bounded_stream.read(max_bytes + 1)
    if len(raw) > max_bytes:
        raise ApiError(413, f"request body too large: at most {max_bytes} bytes")
    if raw == b"{}":  # no input, the commonest body: nothing to parse
        return {}
    if not raw.strip():
        raise ApiError(400, "request body must be a JSON object; send {} for no input")
    try:
        value = json.loads(raw, parse_constant=_reject_constant, parse_float=_parse_float)
    except (ValueError, RecursionError):
        raise ApiError(400, "request body is not valid JSON") from None
    if not isinstance(value, dict):
        raise ApiError(400, "request body must be a JSON object")
    return value

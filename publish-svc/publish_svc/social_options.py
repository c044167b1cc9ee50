"""A social post's `options` and caption checked against its post type."""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from typing import Any

from google.protobuf.json_format import MessageToDict

from storypost.account.v1 import account_pb2 as apb
from storypost_runtime.errors import InvalidArgument

_JSON_TYPES: dict[str, tuple[type, ...]] = {
    "boolean": (bool,),
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
}


def _value(value: Any) -> Any:
    """A google.protobuf.Value as plain JSON."""
    return MessageToDict(value) if hasattr(value, "ListFields") else value


def _problems(key: str, spec: apb.PostTypeOption, value: Any) -> list[str]:
    wanted = _JSON_TYPES.get(spec.type, (object,))
    if (isinstance(value, bool) and bool not in wanted) or not isinstance(value, wanted):
        return [f"expected {spec.type}"]
    allowed = [_value(v) for v in spec.enum_values]
    if allowed and value not in allowed:
        return ["must be one of " + ", ".join(repr(a) for a in allowed)]
    found: list[str] = []
    if spec.HasField("minimum") and isinstance(value, int | float) and value < spec.minimum:
        found.append(f"must be at least {spec.minimum:g}")
    if spec.HasField("maximum") and isinstance(value, int | float) and value > spec.maximum:
        found.append(f"must be at most {spec.maximum:g}")
    if spec.HasField("max_length") and isinstance(value, str) and len(value) > spec.max_length:
        found.append(f"must be at most {spec.max_length} characters long")
    return found


def check_options(post_type: apb.PostType, options: Mapping[str, Any]) -> dict[str, Any]:
    """The options with defaults filled in; a validation-style error names each bad key."""
    specs = dict(post_type.options)
    violations: dict[str, list[str]] = {}
    for key, value in options.items():
        spec = specs.get(key)
        if spec is None:
            explanation = ["disallowed key"]
            close = difflib.get_close_matches(key, list(specs), n=1, cutoff=0.7)
            if close:
                explanation.append(f"did you mean '{close[0]}'?")
            violations[f"options.{key}"] = explanation
            continue
        problems = _problems(key, spec, value)
        if problems:
            violations[f"options.{key}"] = problems
    for key, spec in specs.items():
        if spec.required and key not in options:
            violations[f"options.{key}"] = ["required key missing"]
    if violations:
        raise InvalidArgument(
            f"options do not fit post type '{post_type.post_type}'", field_violations=violations
        )
    checked = dict(options)
    for key, spec in specs.items():
        if key not in checked and spec.HasField("default_value"):
            checked[key] = _value(spec.default_value)
    return checked


def shorten_caption(post_type: apb.PostType, text: str | None) -> str:
    """The caption cut to the post type's maxCaptionLength; required where the platform needs it."""
    text = text or ""
    if post_type.caption_required and not text.strip():
        raise InvalidArgument(
            f"text is required for post type '{post_type.post_type}'",
            field_violations={"text": ["required key missing"]},
        )
    limit = post_type.max_caption_length
    if limit and len(text) > limit:
        return text[:limit]
    return text

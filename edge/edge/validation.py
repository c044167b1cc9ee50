"""Validates request params against a procedure's input schema and explains what is wrong."""

from __future__ import annotations

import copy
import difflib
import json
import re
import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from jsonschema import (  # type: ignore[import-untyped, unused-ignore]
    Draft202012Validator,
    FormatChecker,
    ValidationError,
)

from edge.catalog import fragments
from edge.catalog.model import Procedure
from edge.catalog.registry import JSON_SCHEMA_DIALECT

# The key that stands for the request body itself (e.g. when it is not an object).
ROOT_KEY = "$"
DISALLOWED_KEY = "disallowed key"
REQUIRED_KEY_MISSING = "required key missing"

_UUID = re.compile(r"[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}")
_FORMAT_EXPLANATIONS = {
    "uuid": "not a valid uuid",
    "date-time": "not a valid ISO 8601 date-time",
    "uri": "not a valid URI",
}
_PATTERN_EXPLANATIONS = {
    fragments.CONTENT_TYPE_PATTERN: (
        "must be an image/*, video/* or audio/* media type, e.g. 'video/mp4'"
    ),
    fragments.PAGE_URL_PATTERN: "must start with http:// or https://",
}
_BOUNDS = {
    "minimum": "must be at least {}",
    "maximum": "must be at most {}",
    "exclusiveMinimum": "must be greater than {}",
    "exclusiveMaximum": "must be less than {}",
    "multipleOf": "must be a multiple of {}",
    "minItems": "must have at least {} items",
    "maxItems": "must have at most {} items",
    "minProperties": "must have at least {} keys",
    "maxProperties": "must have at most {} keys",
}
# Close enough for a spelling suggestion (`storyPostUid` -> `storyPostUuid`), not so loose
# that unrelated short keys get suggested.
_SUGGESTION_CUTOFF = 0.7


def _is_uuid(instance: object) -> bool:
    # jsonschema's own check lets through odd shapes (`{...}`, extra hyphens): we accept
    # only the canonical 8-4-4-4-12 form, in either case.
    return not isinstance(instance, str) or _UUID.fullmatch(instance) is not None


def _make_format_checker() -> FormatChecker:
    checker = FormatChecker()
    checker.checks("uuid")(_is_uuid)
    return checker


# Enforces `format` (uuid, date-time, uri, ...); jsonschema only annotates it by default.
FORMAT_CHECKER = _make_format_checker()

_validators: dict[int, tuple[Procedure, Draft202012Validator]] = {}
_validators_lock = threading.Lock()
# validate_params's answer for `{}`, by procedure (keyed as `_validators`).
_empty_answers: dict[int, tuple[Procedure, dict[str, list[str]] | None]] = {}


def prepare_validators(procedures: Iterable[Procedure]) -> None:
    """Checks every input schema and builds its validator now (at start-up), not on first use."""
    for procedure in procedures:
        _validator(procedure)


def validate_params(procedure: Procedure, params: object) -> dict[str, list[str]] | None:
    """None when `params` is a valid input of `procedure`, else offending key -> explanations.

    Keys are the offending top-level param names; a nested value is named by its dotted
    path (`options.privacy`, `items.0`) and the body itself by `$`.
    """
    if params == {}:
        # The commonest body of all (`{}`: no input): its answer is the same every time.
        empty = _empty_answers.get(id(procedure))
        if empty is None or empty[0] is not procedure:
            empty = (procedure, _explain_all(procedure, {}))
            with _validators_lock:
                _empty_answers[id(procedure)] = empty
        return None if empty[1] is None else copy.deepcopy(empty[1])
    return _explain_all(procedure, params)


def _explain_all(procedure: Procedure, params: object) -> dict[str, list[str]] | None:
    explanation: dict[str, list[str]] = {}
    for error in _validator(procedure).iter_errors(params):
        for key, message in _explain(error):
            messages = explanation.setdefault(key, [])
            if message not in messages:
                messages.append(message)
    return explanation or None


def validation_body(
    procedure: Procedure, explanation: Mapping[str, Sequence[str]]
) -> dict[str, Any]:
    """The spec's HTTP 400 body for invalid params of `procedure`."""
    return {
        "errorMessage": f"invalid params for procedure: {procedure.name}",
        "procedureName": procedure.name,
        "paramsJsonSchema": {
            "$schema": JSON_SCHEMA_DIALECT,
            **copy.deepcopy(dict(procedure.input_schema)),
        },
        "validationErrorExplanation": {key: list(value) for key, value in explanation.items()},
    }


def _validator(procedure: Procedure) -> Draft202012Validator:
    # Keyed by identity: procedures hold dicts, so they are not hashable. The entry keeps
    # the procedure alive, so its id cannot be reused by another object.
    entry = _validators.get(id(procedure))
    if entry is not None and entry[0] is procedure:
        return entry[1]
    Draft202012Validator.check_schema(procedure.input_schema)
    validator = Draft202012Validator(procedure.input_schema, format_checker=FORMAT_CHECKER)
    with _validators_lock:
        _validators[id(procedure)] = (procedure, validator)
    return validator


def _explain(error: ValidationError) -> Iterator[tuple[str, str]]:
    path = [str(part) for part in error.absolute_path]
    keyword = error.validator
    value = error.validator_value
    instance = error.instance
    if keyword in ("additionalProperties", "unevaluatedProperties"):
        yield from _explain_disallowed(path, error.schema, instance)
    elif keyword == "required":
        if isinstance(value, list) and isinstance(instance, dict):
            for key in value:
                if key not in instance:
                    yield _key(path, str(key)), REQUIRED_KEY_MISSING
    else:
        yield _key(path), _message(keyword, value, instance)


def _explain_disallowed(
    path: list[str], schema: object, instance: object
) -> Iterator[tuple[str, str]]:
    if not isinstance(instance, dict) or not isinstance(schema, Mapping):
        return
    allowed = [str(key) for key in schema.get("properties", {})]
    patterns = [re.compile(pattern) for pattern in schema.get("patternProperties", {})]
    by_lower = {key.lower(): key for key in allowed}
    for key in instance:
        if key in allowed or any(pattern.search(key) for pattern in patterns):
            continue
        yield _key(path, key), DISALLOWED_KEY
        # Compare case-insensitively, so `storypostuuid` still finds `storyPostUuid`.
        close = difflib.get_close_matches(key.lower(), by_lower, n=1, cutoff=_SUGGESTION_CUTOFF)
        if close:
            yield _key(path, key), f"did you mean '{by_lower[close[0]]}'?"


def _message(keyword: object, value: Any, instance: object) -> str:
    if keyword == "type":
        return f"expected {_expected_types(value)}, got {_json_type(instance)}"
    if keyword == "format":
        return _FORMAT_EXPLANATIONS.get(str(value), f"not a valid {value}")
    if keyword == "pattern":
        return _PATTERN_EXPLANATIONS.get(str(value), f"must match the pattern {value}")
    if keyword == "minLength":
        if value == 1:
            return "must not be empty"
        return f"must be at least {value} characters long (got {_length(instance)})"
    if keyword == "maxLength":
        return f"must be at most {value} characters long (got {_length(instance)})"
    if keyword == "enum":
        return "must be one of " + ", ".join(_show(choice) for choice in value)
    if keyword == "const":
        return f"must be {_show(value)}"
    if keyword == "uniqueItems":
        return "must not contain duplicate items"
    if isinstance(keyword, str) and keyword in _BOUNDS:
        return _BOUNDS[keyword].format(value)
    # Never echo the instance: it may be megabytes of html.
    return f"does not satisfy the schema keyword '{keyword}'"


def _key(path: list[str], *more: str) -> str:
    return ".".join([*path, *more]) or ROOT_KEY


def _expected_types(value: object) -> str:
    if isinstance(value, str):
        return value
    return " or ".join(str(name) for name in value) if isinstance(value, list) else str(value)


def _json_type(instance: object) -> str:
    # bool before int: True is an int in Python but a boolean in JSON.
    if instance is None:
        return "null"
    if isinstance(instance, bool):
        return "boolean"
    if isinstance(instance, int):
        return "integer"
    if isinstance(instance, float):
        return "integer" if instance.is_integer() else "number"
    if isinstance(instance, str):
        return "string"
    if isinstance(instance, list | tuple):
        return "array"
    if isinstance(instance, Mapping):
        return "object"
    return type(instance).__name__


def _length(instance: object) -> int:
    return len(instance) if isinstance(instance, str) else 0


def _show(value: object) -> str:
    return f"'{value}'" if isinstance(value, str) else json.dumps(value)

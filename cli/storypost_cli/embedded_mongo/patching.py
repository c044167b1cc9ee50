"""How a patch replaces a mongoeco function (once), and the SQL spellings the patches share."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

# The path suffix under which mongoeco's codec stores a tagged value's type.
TAG = '."$mongoeco".type'


# Every value SQLite's json_type() gives for a field that is present.
JSON_TYPES = "'null', 'true', 'false', 'integer', 'real', 'text', 'array', 'object'"


# mongoeco's uniform sort types: every document's field of these JSON types.
UNIFORM_SORT_TYPES = {"number": ("integer", "real"), "string": ("text",), "bool": ("true", "false")}


def replace_once(owner: Any, name: str, wrap: Callable[[Any], Any]) -> None:
    """Sets `owner.<name>` to `wrap(original)`: each patch below, however often it is called,
    wraps mongoeco's function once (the replacement lists the patches applied in
    `storypost_patches`; two patches of one function wrap one another)."""
    original = getattr(owner, name)
    applied: frozenset[str] = getattr(original, "storypost_patches", frozenset())
    if wrap.__qualname__ in applied:
        return
    replacement = wrap(original)
    replacement.storypost_patches = applied | {wrap.__qualname__}
    setattr(owner, name, replacement)


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _typed_value(path: str) -> str:
    """The two expressions mongoeco's equality SQL tests for a field, as index columns."""
    return f"json_type(document, {_literal(path)}), json_extract(document, {_literal(path)})"

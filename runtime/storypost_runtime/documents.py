"""Reading a stored MongoDB document into a dataclass: every service stores a field under the
camelCase of its Python name (`created_at` as `createdAt`), so that mapping lives here once."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from _typeshed import DataclassInstance


def camel_case(name: str) -> str:
    """The stored key of a field: `created_at` -> `createdAt`."""
    head, *words = name.split("_")
    return head + "".join(word[:1].upper() + word[1:] for word in words)


def from_document[T: DataclassInstance](cls: type[T], doc: Mapping[str, Any], /, **given: Any) -> T:
    """A `cls` read from `doc`.

    The fields in `given` take those values: what is stored under another key (`_id`) or
    read another way. Every other field is `doc[camel_case(name)]`; a field with a default
    may be missing from the document (records stored before it existed) and then takes its
    default, a field without one must be there (KeyError, as `doc[key]` would raise)."""
    values = dict(given)
    for field in dataclasses.fields(cls):
        if field.name in values or not field.init:
            continue
        key = camel_case(field.name)
        if key in doc:
            values[field.name] = doc[key]
        elif field.default is dataclasses.MISSING and field.default_factory is dataclasses.MISSING:
            raise KeyError(key)
    # A dataclass's constructor takes its fields by name; the type checker only knows
    # DataclassInstance, which declares none.
    return cast(Callable[..., T], cls)(**values)

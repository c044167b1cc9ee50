"""Service objects declared by their collaborators: the dataclass that stores them.

A store, a client, a loop or a servicer is built once, in its service's `build()`, from the
collaborators it uses. Declared as fields of a `@component` class, each collaborator is named
once; the standard library writes the constructor that stores them, where a hand-written
`__init__` named each three times (parameter, type, assignment). State a component derives
from its collaborators goes in `__post_init__` or a `field(init=False, ...)`.

A component with more than two fields opens them with `_: KW_ONLY`: it is built by keyword
(`PostIntake(store=..., quota=..., clock=...)`), so no two collaborators of one type, a
`timedelta` or a callable can be passed in the wrong order
(tests/unit/test_keyword_construction.py checks every one).

`eq=False`: a component holds connections and tasks, not a value; it equals only itself and
stays hashable. `repr=False`: it holds clients and credentials, which a repr would print into
a log.
"""

from __future__ import annotations

import dataclasses
from typing import dataclass_transform


@dataclass_transform(eq_default=False, field_specifiers=(dataclasses.field,))
def component[C](cls: type[C]) -> type[C]:
    return dataclasses.dataclass(eq=False, repr=False)(cls)

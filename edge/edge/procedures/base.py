"""What a procedure handler gets and gives: a call context in, a JSON object out."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

JsonObject = dict[str, Any]


@dataclass(frozen=True)
class CallContext:
    organization_id: str
    credential_id: str
    request_id: str
    # `http://HOST:PORT/o/<org>/api/v1`: for URLs handed back to the caller (temp blobs).
    base_url: str
    # `http://HOST:PORT/o/<org>`: for app pages (the draft editor).
    app_url: str


Handler = Callable[[CallContext, Mapping[str, Any]], JsonObject]


Method = TypeVar("Method", bound=Callable[..., JsonObject])
# The attribute `procedure` puts on a handler: the name of the procedure it answers.
PROCEDURE_ATTRIBUTE = "storypost_procedure"


def procedure(name: str) -> Callable[[Method], Method]:
    """Names the procedure a handler answers, where the handler is defined (grepping a
    procedure's name lands here): `@procedure("schedule-photoapp-story")`."""

    def mark(method: Method) -> Method:
        setattr(method, PROCEDURE_ATTRIBUTE, name)
        return method

    return mark


def procedure_methods(area: object) -> dict[str, Handler]:
    """An area's handlers by procedure name: its methods marked with `@procedure`. Two
    methods answering one procedure are a mistake, refused here."""
    found: dict[str, Handler] = {}
    for attribute in dir(type(area)):
        name = getattr(getattr(type(area), attribute), PROCEDURE_ATTRIBUTE, None)
        if name is None:
            continue
        if name in found:
            raise ValueError(f"two handlers of {name} in {type(area).__name__}")
        found[name] = getattr(area, attribute)
    return found

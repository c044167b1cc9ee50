"""What a procedure handler gets and gives: a call context in, a JSON object out."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

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


def procedure_methods(area: object) -> dict[str, Handler]:
    """An area's handlers by procedure name: each public method of its class is the procedure
    of its name with `-` for `_` (`schedule_photoapp_story` is `schedule-photoapp-story`)."""
    return {
        name.replace("_", "-"): getattr(area, name)
        for name, member in vars(type(area)).items()
        if callable(member) and not name.startswith("_")
    }

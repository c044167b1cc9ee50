"""The handler of every procedure; those whose service has not landed answer 501."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from edge.backends import Backends
from edge.config import EdgeSettings
from edge.errors import ApiError
from edge.procedures import accounts, clipapp, media, misc, photoapp, social
from edge.procedures.base import CallContext, Handler, JsonObject


def not_implemented(name: str) -> Handler:
    def handler(_ctx: CallContext, _params: Mapping[str, Any]) -> JsonObject:
        raise ApiError(501, f"procedure {name} is not available yet")

    return handler


def build_handlers(
    procedure_names: Iterable[str], *areas: Mapping[str, Handler]
) -> dict[str, Handler]:
    """One handler per catalog procedure: from the areas given, else a 501 answer."""
    known: dict[str, Handler] = dict(misc.handlers())
    for area in areas:
        known.update(area)
    return {name: known.get(name) or not_implemented(name) for name in procedure_names}


def all_handlers(
    procedure_names: Iterable[str], backends: Backends, settings: EdgeSettings
) -> dict[str, Handler]:
    """The handlers of every area, wired to the services."""
    areas = (accounts, media, photoapp, clipapp, social)
    return build_handlers(procedure_names, *(area.handlers(backends, settings) for area in areas))

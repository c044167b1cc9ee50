"""The handler of every procedure; the edge refuses to start when one has none."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from edge.backends import Backends
from edge.config import EdgeSettings
from edge.procedures import (
    accounts,
    clipapp,
    insights,
    media,
    misc,
    photoapp,
    planning,
    social,
)
from edge.procedures.base import Handler


class HandlerMismatch(RuntimeError):
    """A catalog procedure without a handler, or a handler of no catalog procedure."""


def build_handlers(
    procedure_names: Iterable[str], *areas: Mapping[str, Handler]
) -> dict[str, Handler]:
    """Exactly one handler per catalog procedure, from the areas given."""
    known: dict[str, Handler] = dict(misc.handlers())
    for area in areas:
        known.update(area)
    names = list(procedure_names)
    missing = [name for name in names if name not in known]
    unknown = sorted(set(known) - set(names))
    if missing or unknown:
        raise HandlerMismatch(
            "the edge's handlers do not match the catalog: "
            f"no handler for {missing or 'none'}; handlers of no procedure: {unknown or 'none'}"
        )
    return {name: known[name] for name in names}


def all_handlers(
    procedure_names: Iterable[str], backends: Backends, settings: EdgeSettings
) -> dict[str, Handler]:
    """The handlers of every area, wired to the services."""
    areas = (accounts, media, photoapp, clipapp, social, planning, insights)
    return build_handlers(procedure_names, *(area.handlers(backends, settings) for area in areas))

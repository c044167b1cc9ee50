"""The edge's procedures over a fake publish-svc stub, for unit tests of what they ask it and
how they answer."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from edge.config import EdgeSettings
from edge.procedures.planning import PlanningProcedures


@dataclass
class PublishBackends:
    """The edge's Backends with only publish-svc's stub (a test's fake)."""

    publish_stub: Any


def planning_with(publish: Any) -> PlanningProcedures:
    """The planning procedures (list-posts, reschedule-post, queues, series) over `publish`."""
    return PlanningProcedures(PublishBackends(publish), EdgeSettings())  # type: ignore[arg-type]

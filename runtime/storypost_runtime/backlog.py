"""Backlog gauges: how much work waits, and how long the oldest has waited, sampled from the
records themselves (so a stalled worker, or none at all, shows as growth, not as silence).

Each replica samples the same collections, so every replica exports the same values: alerts
and autoscalers read them with `max` (docs/operations.md). A sample is two indexed queries
per backlog: a capped count and the oldest record.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import KW_ONLY, dataclass
from datetime import UTC, datetime

from prometheus_client import Gauge
from pymongo import ASCENDING
from pymongo.asynchronous.collection import AsyncCollection

from storypost_runtime.clock import Clock
from storypost_runtime.component import component
from storypost_runtime.logs import get_logger
from storypost_runtime.metrics import Metrics, gauge
from storypost_runtime.mongo import Document
from storypost_runtime.tasks import run_passes

log = get_logger(__name__)


@dataclass(frozen=True)
class Backlog:
    """One backlog: the records `query(now)` selects, the oldest by `since_field` (a date the
    query's index is ordered by)."""

    name: str
    collection: AsyncCollection[Document]
    query: Callable[[datetime], Document]
    since_field: str


class BacklogMetrics(Metrics):
    size: Gauge = gauge(
        "storypost_backlog_records",
        "Records waiting in a backlog at the latest sample (counted up to a cap)",
        "backlog",
    )
    oldest: Gauge = gauge(
        "storypost_backlog_oldest_seconds",
        "How long the oldest record of a backlog has waited at the latest sample (0: none)",
        "backlog",
    )


@component
class BacklogSampler:
    _: KW_ONLY
    backlogs: Sequence[Backlog]
    metrics: BacklogMetrics
    clock: Clock
    poll_seconds: float = 15.0
    # Counting stops here: past it the size only says "very large" (the age says how bad).
    cap: int = 100_000

    async def run(self) -> None:
        await run_passes(self.sample, self._failed, poll_seconds=self.poll_seconds)

    async def sample(self) -> int:
        """Sets every backlog's gauges; answers 0 (the next sample comes after the poll)."""
        now = self.clock.now()
        for backlog in self.backlogs:
            query = backlog.query(now)
            size = await backlog.collection.count_documents(query, limit=self.cap)
            oldest = await backlog.collection.find_one(
                query, {backlog.since_field: 1}, sort=[(backlog.since_field, ASCENDING)]
            )
            since = (oldest or {}).get(backlog.since_field)
            age = (now - _utc(since)).total_seconds() if isinstance(since, datetime) else 0.0
            self.metrics.size.labels(backlog.name).set(size)
            self.metrics.oldest.labels(backlog.name).set(max(0.0, age))
        return 0

    def _failed(self, error: Exception) -> None:
        log.warning("backlog sample failed", error=str(error) or type(error).__name__)


def _utc(moment: datetime) -> datetime:
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)

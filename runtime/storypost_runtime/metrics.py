"""Prometheus metrics: one registry per process, served on its own port."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import Field, dataclass, field, fields
from typing import Any, ClassVar, Self, dataclass_transform

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, start_http_server

LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120)


class MetricsIn:
    """Declares metrics in one registry (None: declared but registered nowhere); the labels
    follow the name and its help text."""

    def __init__(self, registry: CollectorRegistry | None) -> None:
        self._registry = registry

    def counter(self, name: str, documentation: str, *labels: str) -> Counter:
        return Counter(name, documentation, labels, registry=self._registry)

    def gauge(self, name: str, documentation: str, *labels: str) -> Gauge:
        return Gauge(name, documentation, labels, registry=self._registry)

    def histogram(
        self, name: str, documentation: str, *labels: str, buckets: Sequence[float]
    ) -> Histogram:
        return Histogram(name, documentation, labels, buckets=buckets, registry=self._registry)


# The field metadata key under which a `Metrics` field keeps how its metric is declared.
_DECLARATION = "storypost_metric"


def _declared[M: (Counter, Gauge, Histogram)](declaration: Callable[[MetricsIn], M]) -> M:
    """A `Metrics` field without a default: `Metrics.create` fills it with `declaration`'s
    metric. Typed as that metric, as `dataclasses.field` is typed as its value."""
    declared: M = field(metadata={_DECLARATION: declaration})
    return declared


def counter(name: str, documentation: str, *labels: str) -> Counter:
    """A `Metrics` field: the counter `name` (exported as `name_total`)."""
    return _declared(lambda declare: declare.counter(name, documentation, *labels))


def gauge(name: str, documentation: str, *labels: str) -> Gauge:
    """A `Metrics` field: the gauge `name`."""
    return _declared(lambda declare: declare.gauge(name, documentation, *labels))


def histogram(name: str, documentation: str, *labels: str, buckets: Sequence[float]) -> Histogram:
    """A `Metrics` field: the histogram `name` with these bucket bounds."""
    return _declared(
        lambda declare: declare.histogram(name, documentation, *labels, buckets=buckets)
    )


@dataclass_transform(frozen_default=True, field_specifiers=(counter, gauge, histogram))
class Metrics:
    """A group of metrics, declared as fields: `requests: Counter = counter(name, help,
    *labels)` states each metric's name, help text and labels once. A subclass is a frozen
    dataclass; `create` declares its fields' metrics in one registry (None: registered
    nowhere), in the order of the fields."""

    __dataclass_fields__: ClassVar[dict[str, Field[Any]]]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        dataclass(frozen=True)(cls)

    @classmethod
    def create(cls, registry: CollectorRegistry | None = None) -> Self:
        declare = MetricsIn(registry)
        made = {each.name: each.metadata[_DECLARATION](declare) for each in fields(cls)}
        return cls(**made)


class RpcMetrics(Metrics):
    """Request count and latency per gRPC method and outcome code."""

    requests: Counter = counter(
        "storypost_grpc_requests",
        "gRPC requests handled, by method and status code",
        "method",
        "code",
    )
    latency: Histogram = histogram(
        "storypost_grpc_request_seconds",
        "gRPC request latency, by method",
        "method",
        buckets=LATENCY_BUCKETS,
    )


def serve_metrics(registry: CollectorRegistry, host: str, port: int) -> int | None:
    """Starts the /metrics endpoint in a thread; port 0 picks one, -1 turns it off."""
    if port < 0:
        return None
    server, _thread = start_http_server(port, addr=host, registry=registry)
    bound: int = server.server_address[1]
    return bound

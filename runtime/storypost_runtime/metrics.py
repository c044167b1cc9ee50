"""Prometheus metrics: one registry per process, served on its own port."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

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


@dataclass(frozen=True)
class RpcMetrics:
    """Request count and latency per gRPC method and outcome code."""

    requests: Counter
    latency: Histogram

    @classmethod
    def create(cls, registry: CollectorRegistry) -> RpcMetrics:
        declare = MetricsIn(registry)
        return cls(
            requests=declare.counter(
                "storypost_grpc_requests",
                "gRPC requests handled, by method and status code",
                "method",
                "code",
            ),
            latency=declare.histogram(
                "storypost_grpc_request_seconds",
                "gRPC request latency, by method",
                "method",
                buckets=LATENCY_BUCKETS,
            ),
        )


def serve_metrics(registry: CollectorRegistry, host: str, port: int) -> int | None:
    """Starts the /metrics endpoint in a thread; port 0 picks one, -1 turns it off."""
    if port < 0:
        return None
    server, _thread = start_http_server(port, addr=host, registry=registry)
    bound: int = server.server_address[1]
    return bound

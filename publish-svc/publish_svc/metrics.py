"""publish-svc's own metrics: how late posts go out, and how attempts end."""

from __future__ import annotations

from prometheus_client import Counter, Histogram

from storypost_runtime.metrics import Metrics, counter, histogram

LAG_BUCKETS = (0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 120, 300, 900, 1800, 3600)


class PublishMetrics(Metrics):
    # Publish time minus due time of each executed post (the scheduler's lag).
    lag: Histogram = histogram(
        "storypost_publish_lag_seconds",
        "Seconds from a post's due time to its publication",
        "kind",
        buckets=LAG_BUCKETS,
    )
    # Attempt outcomes by platform: executed, failed, retry, held (credits, rendering).
    outcomes: Counter = counter(
        "storypost_publish_attempts",
        "Publish attempts by platform and outcome",
        "platform",
        "outcome",
    )

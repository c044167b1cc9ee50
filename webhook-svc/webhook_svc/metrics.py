"""Prometheus metrics of webhook deliveries."""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram

from storypost_runtime.metrics import Metrics, counter, gauge, histogram

LAG_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 300, 3600)


class WebhookMetrics(Metrics):
    # Attempts by outcome: success, http_error, timeout, connect_error, refused.
    attempts: Counter = counter(
        "storypost_webhook_attempts", "webhook delivery attempts, by outcome", "outcome"
    )
    # Seconds from the status change (occurredAt) to the end of the first attempt.
    first_attempt_lag: Histogram = histogram(
        "storypost_webhook_first_attempt_lag_seconds",
        "seconds from the status change to the end of a delivery's first attempt",
        buckets=LAG_BUCKETS,
    )
    # Deferred deliveries this replica holds in memory for their URL's next free slot; at
    # STORYPOST_WEBHOOK_HOLD_PER_REPLICA for long, URLs answer slower than events come.
    held: Gauge = gauge(
        "storypost_webhook_held_deliveries",
        "deferred deliveries this replica holds for their URL's next free slot",
    )
    # Bus events by what came of them: delivered, no_subscriber, duplicate, invalid.
    events: Counter = counter(
        "storypost_webhook_events",
        "status events taken from the bus, by what came of them",
        "result",
    )


def attempt_outcome(ok: bool, status_code: int, error: str) -> str:
    if ok:
        return "success"
    if status_code:
        return "http_error"
    if error.startswith("timed out"):
        return "timeout"
    if error.startswith("refused"):
        return "refused"
    return "connect_error"

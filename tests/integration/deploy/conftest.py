"""The production-shape figures (per-replica request counters), printed after the run."""

from __future__ import annotations

import pytest

# Component (or figure) → one value per replica.
REPLICA_COUNTERS: dict[str, list[float]] = {}


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if REPLICA_COUNTERS:
        terminalreporter.section("production shape: requests counted by each replica")
        for name, values in REPLICA_COUNTERS.items():
            shown = "  ".join(f"{value:g}" for value in values)
            terminalreporter.write_line(f"{name}: {shown}")

"""What the client needs to know of a procedure to call it well (filled in from the catalog)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, kw_only=True)
class ProcedureInfo:
    """Call facts of one procedure, generated from the catalog (`clientTimeoutSeconds` …)."""

    name: str
    summary: str
    # Safe to retry with the same body: the client retries only these.
    idempotent: bool
    # The read timeout the catalog asks callers to use (120 s for the render procedures).
    client_timeout_seconds: float
    # Exactly one of `url` and `html` must be given.
    render_input: bool


def unknown_procedure(name: str) -> ProcedureInfo:
    """Facts for a procedure newer than this client: no retries, a long read timeout."""
    return ProcedureInfo(
        name=name, summary="", idempotent=False, client_timeout_seconds=120.0, render_input=False
    )

"""Finished and failed renderings are read from the database once per replica; others always."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from render_svc.renderings import FAILED, FINISHED, FINISHING, PREPARED, Renderings
from storypost_runtime.clock import FrozenClock

NOW = datetime(2026, 11, 24, 12, 0, tzinfo=UTC)


class CountingRenderings:
    def __init__(self) -> None:
        self.docs: dict[tuple[str, str], dict[str, Any]] = {}
        self.reads = 0

    async def find_one(self, query: dict[str, Any]) -> dict[str, Any] | None:
        self.reads += 1
        doc = self.docs.get((query["organizationId"], query["renderingId"]))
        return dict(doc) if doc else None


def doc(org: str, rendering_id: str, state: str) -> dict[str, Any]:
    return {
        "organizationId": org,
        "renderingId": rendering_id,
        "state": state,
        "mediaKind": "image",
        "captureKey": f"{org}/{rendering_id}/capture.jpg",
        "createdAt": NOW,
    }


def test_only_final_renderings_are_remembered() -> None:
    collection = CountingRenderings()
    records: Any = SimpleNamespace(renderings=collection)
    renderings = Renderings(
        records=records,
        store=None,  # type: ignore[arg-type]
        renderer=None,  # type: ignore[arg-type]
        clock=FrozenClock(NOW),
        work_root=Path("/nonexistent"),
    )

    async def reads_for(state: str, rendering_id: str) -> int:
        collection.docs[("o1", rendering_id)] = doc("o1", rendering_id, state)
        before = collection.reads
        for _ in range(3):
            found = await renderings.find("o1", rendering_id)
            assert found is not None and found.state == state
        return collection.reads - before

    async def scenario() -> None:
        assert await reads_for(PREPARED, "a") == 3
        assert await reads_for(FINISHING, "b") == 3
        assert await reads_for(FINISHED, "c") == 1
        assert await reads_for(FAILED, "d") == 1
        # A rendering read while finishing, then finished: the new state is seen at once.
        collection.docs[("o1", "b")] = doc("o1", "b", FINISHED)
        found = await renderings.find("o1", "b")
        assert found is not None and found.state == FINISHED
        # Another organization's rendering of the same id is its own record.
        assert await renderings.find("o2", "c") is None

    asyncio.run(scenario())

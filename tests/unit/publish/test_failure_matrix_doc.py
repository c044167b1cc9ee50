"""docs/publishing.md shows the failure matrix the integration test runs, cell for cell."""

from __future__ import annotations

from pathlib import Path

from storypost_runtime.vocabulary import SOCIAL_API_PLATFORMS
from tests.support.failure_matrix import CALLS, CELLS, HEADER, Expect, Mode, table

DOC = Path(__file__).resolve().parents[3] / "docs" / "publishing.md"


def documented_table() -> str:
    lines = DOC.read_text().splitlines()
    start = lines.index(HEADER.splitlines()[0])
    end = start
    while end < len(lines) and lines[end].startswith("|"):
        end += 1
    return "\n".join(lines[start:end])


def test_the_documented_matrix_is_the_tested_one() -> None:
    # Regenerate with `python -m tests.support.failure_matrix`.
    assert documented_table() == table()


def test_every_driver_call_has_its_three_cells_or_says_why_not() -> None:
    names = [cell.name for cell in CELLS]
    assert len(names) == len(set(names))
    for call in CALLS:
        modes = set(call.outcomes)
        # Only a look-up (it changes nothing on the platform) goes without a kill cell.
        assert modes == set(Mode) or (call.after_lost and modes == {Mode.FAIL, Mode.LATE})
        # A refusal before anything was published fails the post; a late answer or a kill
        # never does unless the platform offers no way to find out.
        assert call.outcomes.get(Mode.LATE) in (Expect.EXECUTED, Expect.UNKNOWN)
    drivers = {call.driver.name for call in CALLS}
    for wanted in ("photoapp story", "photoapp reel", "linknet cross-post"):
        assert wanted in drivers
    assert {"clipapp video", "clipapp photo"} <= drivers
    platforms = {call.driver.platform for call in CALLS if call.driver.kind == "social"}
    # Every platform publish-svc has a social driver for, and clipapp as a social post.
    assert platforms == {"clipapp", *(platform.key for platform in SOCIAL_API_PLATFORMS)}

"""render-svc keeps at most `render_kept_video_sources` prepared video sources on local disk;
past that, a new one is dropped and its composite fetches the source again (the finisher's
path for a rendering prepared elsewhere), so /tmp stays within what deploy/ sized it for."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from render_svc.renderer import SOURCE_FILE
from render_svc.renderings import Renderings
from storypost_runtime.clock import FrozenClock


def prepared(root: Path, name: str) -> Path:
    work = root / f"org__{name}" / "0a1b2c3d"
    work.mkdir(parents=True)
    (work / SOURCE_FILE).write_bytes(b"video")
    return work


def test_sources_past_the_limit_are_dropped_for_a_later_fetch(tmp_path: Path) -> None:
    none: Any = None
    renderings = Renderings(
        records=none,
        store=none,
        renderer=none,
        clock=FrozenClock(datetime.now(UTC)),
        work_root=tmp_path,
        kept_video_sources=2,
    )
    kept = [renderings.keep_source(prepared(tmp_path, f"r{n}")) for n in range(4)]
    assert kept == [True, True, False, False]
    assert len(list(tmp_path.glob(f"*/*/{SOURCE_FILE}"))) == 2
    # Once a composite is done with its source (the work dir removed), room comes back.
    for work in tmp_path.glob(f"*/*/{SOURCE_FILE}"):
        work.unlink()
        break
    assert renderings.keep_source(prepared(tmp_path, "r5")) is True

"""Chromium runs at a lower CPU priority than the services beside it.

A render is seconds of CPU in Chromium; the calls around it (statuses, listings, the rate
limit, MongoDB) are milliseconds each. On a machine the browsers share with other processes
(the development stack, a node packing several pods), equal priority lets a burst of
renders slow every other call down; lowered, renders use what CPU the rest leaves and wait
in render-svc's queue (then 429) when it is not enough.

Two steps, both before any browser starts:
- Chromium raises some of its threads (compositor, IO) to nice -8 when it may, i.e. when it
  runs as root with CAP_SYS_NICE. `forbid_raising_priority` drops that capability from the
  bounding set of this process, so no program it starts (Playwright's driver, Chromium)
  holds it; this process keeps its own capabilities. Without the right to drop it (not
  root), Chromium cannot raise priorities anyway.
- `at_lower_priority` sets the nice value of the processes started inside it (Playwright's
  driver) and of their threads; every browser the driver launches afterwards inherits it.
  Raising one's own processes' nice value needs no privilege.
"""

from __future__ import annotations

import ctypes
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from render_svc.browser.memory import processes
from storypost_runtime.logs import get_logger

log = get_logger(__name__)

PR_CAPBSET_DROP = 24  # <linux/prctl.h>
CAP_SYS_NICE = 23  # <linux/capability.h>


def forbid_raising_priority() -> bool:
    """Drops CAP_SYS_NICE from the bounding set; False when this process may not (not root)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
    except OSError:
        return False
    return bool(libc.prctl(PR_CAPBSET_DROP, CAP_SYS_NICE, 0, 0, 0) == 0)


def children(proc: Path = Path("/proc")) -> set[int]:
    me = os.getpid()
    return {p.pid for p in processes(proc).values() if p.ppid == me}


def lower(pids: set[int], nice: int, proc: Path = Path("/proc")) -> None:
    """Sets every thread of `pids` to a nice value of at least `nice`."""
    for pid in pids:
        try:
            threads = [int(entry.name) for entry in (proc / str(pid) / "task").iterdir()]
        except OSError:
            continue  # it ended meanwhile
        for tid in threads:
            try:
                # On Linux a nice value belongs to a thread: PRIO_PROCESS with a thread id.
                if os.getpriority(os.PRIO_PROCESS, tid) < nice:
                    os.setpriority(os.PRIO_PROCESS, tid, nice)
            except OSError:
                continue


@asynccontextmanager
async def at_lower_priority(nice: int) -> AsyncIterator[None]:
    """Lowers the processes this process starts inside the block (`nice` 0: does nothing).

    Meant around the start of Playwright's driver: the browsers it launches later inherit.
    """
    if nice <= 0:
        yield
        return
    forbidden = forbid_raising_priority()
    before = children()
    yield
    started = children() - before
    lower(started, nice)
    log.info(
        "browsers run at lower CPU priority",
        nice=nice,
        driver_pids=sorted(started),
        raising_forbidden=forbidden,
    )

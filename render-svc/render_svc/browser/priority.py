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

And one after each browser launch: Playwright starts a browser in a session of its own
(setsid), and where the kernel groups the scheduling of sessions (autogroup, on by default
in Debian's kernels and most desktops and VMs) CPU time is first shared equally between
sessions, then by nice value inside one. A browser's nice value then only orders its own
threads, and its session takes as much CPU as the whole of MongoDB's or the edge's
(measured on the development stack: Chromium at nice 10 still took 60% of a core while the
calls beside it queued). `lower_sessions` gives the session of every process this one
started (the browsers') the nice value too, through /proc/PID/autogroup; again no
privilege is needed to lower it. Without autogroup (no such file) nothing is to be done: the
threads' nice values already count. A process that never left the first session (a
container's processes, often) shows an empty file: it is in the default group, whose
processes each compete on their own against every other session's group, so a browser's
session still needs lowering.
"""

from __future__ import annotations

import ctypes
import os
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from render_svc.browser.memory import descendants, processes
from storypost_runtime.logs import get_logger

log = get_logger(__name__)

PR_CAPBSET_DROP = 24  # <linux/prctl.h>
CAP_SYS_NICE = 23  # <linux/capability.h>
AUTOGROUP_WRITE_INTERVAL_SECONDS = 0.11


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


def lower_sessions(nice: int, proc: Path = Path("/proc"), root: int | None = None) -> list[int]:
    """Sets the autogroup nice value of every process below this one (or `root`) that runs in a
    scheduling group other than this process's own to at least `nice`; returns the
    pids whose group it lowered (one per session in practice). Children in this process's
    group (ffmpeg) are left alone: lowering their group would lower this service.
    """
    if nice <= 0:
        return []
    own = _autogroup(proc / "self" / "autogroup")
    if own is None:
        return []  # the kernel has no autogroup: the threads' nice values already count
    lowered = []
    for pid in descendants(os.getpid() if root is None else root, processes(proc)):
        path = proc / str(pid) / "autogroup"
        group = _autogroup(path)
        if group is None or group[0] == own[0] or group[1] >= nice:
            continue
        if _write_autogroup_nice(path, nice):
            lowered.append(pid)
    return lowered


def _write_autogroup_nice(path: Path, nice: int) -> bool:
    # Without CAP_SYS_ADMIN the kernel takes one such write per 100 ms (EAGAIN otherwise);
    # a browser brings two crash handlers, each in a session of its own.
    for _attempt in range(5):
        try:
            path.write_text(str(nice))
            return True
        except BlockingIOError:
            time.sleep(AUTOGROUP_WRITE_INTERVAL_SECONDS)
        except OSError:
            return False  # it ended meanwhile
    return False


def _autogroup(path: Path) -> tuple[str, int] | None:
    """("/autogroup-42", 0) from "/autogroup-42 nice 0"; ("", 0) for the default group (an
    empty file); None without such a file (or an unreadable one)."""
    try:
        text = path.read_text()
    except OSError:
        return None
    if not text.strip():
        return "", 0
    try:
        name, _, value = text.split()
        return name, int(value)
    except ValueError:
        return None


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

"""A memory bound for renderer processes, which V8's heap limit alone does not give.

`--max-old-space-size` bounds the JavaScript heap, but typed-array buffers, decoded images
and the DOM live outside it: a page filling `new Uint8Array(256 << 20)` in a loop takes
gigabytes. This guard reads the resident size of every Chromium renderer process that
descends from this service (through Playwright's driver) and kills one that grows past the
limit; Playwright reports the page as crashed, and the render fails with the "crashed the
browser tab" error (a 400: it is the caller's page). Only renderers are touched: each render
has a context, hence a renderer, of its own, so no other render is hurt.
"""

from __future__ import annotations

import asyncio
import os
import signal
from dataclasses import KW_ONLY, dataclass, field
from pathlib import Path

from storypost_runtime.component import component
from storypost_runtime.logs import get_logger

log = get_logger(__name__)

PAGE_SIZE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096
TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


@dataclass(frozen=True)
class Process:
    pid: int
    ppid: int
    rss_bytes: int
    # CPU time used so far, user and system (the benches' per-process figures).
    cpu_seconds: float = 0.0


def _read(path: Path) -> str | None:
    try:
        return path.read_text()
    except OSError:  # the process ended meanwhile, or /proc is not there
        return None


def processes(proc: Path = Path("/proc")) -> dict[int, Process]:
    """Every process /proc shows: parent, resident size and CPU time.

    The guard calls this four times a second under every render, so it reads one file per
    process (`stat`, which holds all three) through plain `os` calls: with `statm` beside it
    and `pathlib` a look cost 6.3 ms of CPU on the development machine's ~90 processes,
    about 0.03 of a core taken from the renders; this way 1.7 ms."""
    root = os.fspath(proc)
    try:
        names = os.listdir(root)  # noqa: PTH208 (plain os: the docstring says why)
    except OSError:
        return {}
    table: dict[int, Process] = {}
    for name in names:
        if name.isdigit() and (found := _process(int(name), root)) is not None:
            table[found.pid] = found
    return table


def process(pid: int, proc: Path = Path("/proc")) -> Process | None:
    """One process's parent, resident size and CPU time; None once it has ended."""
    return _process(pid, os.fspath(proc))


def _process(pid: int, root: str) -> Process | None:
    try:
        with open(f"{root}/{pid}/stat", "rb") as file:  # noqa: PTH123 (as above)
            stat = file.read()
    except OSError:  # the process ended meanwhile
        return None
    # The command name may hold spaces and parentheses: fields follow the last ')'
    # (proc(5): ppid is field 4, utime 14, stime 15, rss 24, in pages).
    fields = stat.rsplit(b")", 1)[-1].split()
    try:
        return Process(
            pid,
            ppid=int(fields[1]),
            rss_bytes=int(fields[21]) * PAGE_SIZE,
            cpu_seconds=(int(fields[11]) + int(fields[12])) / TICKS,
        )
    except (IndexError, ValueError):
        return None


def descendants(root: int, table: dict[int, Process]) -> list[int]:
    children: dict[int, list[int]] = {}
    for process in table.values():
        children.setdefault(process.ppid, []).append(process.pid)
    found, todo = [], list(children.get(root, []))
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo.extend(children.get(pid, []))
    return found


def arguments(pid: int, proc: Path = Path("/proc")) -> list[str]:
    """A process's command line ([] once it has ended)."""
    # Chromium rewrites its process title: the arguments may be NUL- or space-separated.
    cmdline = _read(proc / str(pid) / "cmdline") or ""
    return cmdline.replace("\0", " ").split()


def is_renderer(pid: int, proc: Path = Path("/proc")) -> bool:
    return "--type=renderer" in arguments(pid, proc)


@component
class RendererMemoryGuard:
    """Kills renderer processes (descendants of `root`) whose resident size passes the limit."""

    _: KW_ONLY
    limit_bytes: int
    interval_seconds: float = 0.25
    root: int | None = None
    proc: Path = Path("/proc")
    # `root`, or this process when none is given.
    _root: int = field(init=False)
    killed: int = field(init=False, default=0)

    def __post_init__(self) -> None:
        self._root = self.root if self.root is not None else os.getpid()

    def check(self) -> list[int]:
        """One look: kills every renderer over the limit; returns their pids."""
        table = processes(self.proc)
        over = [
            pid
            for pid in descendants(self._root, table)
            if table[pid].rss_bytes > self.limit_bytes and is_renderer(pid, self.proc)
        ]
        for pid in over:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                continue
            self.killed += 1
            log.warning(
                "renderer over its memory limit killed; its render fails",
                pid=pid,
                rss_mib=table[pid].rss_bytes >> 20,
                limit_mib=self.limit_bytes >> 20,
            )
        return over

    async def run(self) -> None:
        if not self.proc.is_dir():
            log.warning("no /proc here: renderer memory is bounded by V8's heap limit only")
            return
        while True:
            await asyncio.to_thread(self.check)
            await asyncio.sleep(self.interval_seconds)

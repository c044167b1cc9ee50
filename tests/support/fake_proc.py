"""A fake /proc tree for render-svc's process readers (the renderer memory guard, the
browser sessions' priority): the few files of each process they read, nothing else."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from render_svc.browser.memory import PAGE_SIZE


@dataclass(frozen=True)
class FakeProcess:
    pid: int
    ppid: int
    rss_mib: int = 1
    cmdline: str = ""
    # The autogroup file's text ("/autogroup-2 nice 0\n"); None: no file, as on a kernel
    # without autogroup.
    autogroup: str | None = None


def fake_proc(root: Path, entries: Iterable[FakeProcess], own_autogroup: str | None = None) -> Path:
    """A /proc at `root` with `entries` and a `self` folder (holding `own_autogroup`)."""
    for entry in entries:
        folder = root / str(entry.pid)
        folder.mkdir(parents=True)
        # A command name with a space: the readers must split fields after the last ')'.
        pages = entry.rss_mib * 1024 * 1024 // PAGE_SIZE
        (folder / "stat").write_text(
            f"{entry.pid} (chrom ium) S {entry.ppid} 1 1 0 -1 0 0 0 0 0 7 3 0 0 20 0 1 0 5 999999"
            f" {pages} 18446744073709551615 1 1 0 0 0 0 0"
        )
        # Chromium rewrites its title: some command lines come space-separated.
        separator = " " if "--lang" in entry.cmdline else "\0"
        (folder / "cmdline").write_text(entry.cmdline.replace(" ", separator) + "\0")
        if entry.autogroup is not None:
            (folder / "autogroup").write_text(entry.autogroup)
    (root / "self").mkdir(parents=True)
    if own_autogroup is not None:
        (root / "self" / "autogroup").write_text(own_autogroup)
    return root

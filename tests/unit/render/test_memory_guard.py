"""The renderer memory guard: which processes it reads, which it kills."""

from __future__ import annotations

import subprocess
from pathlib import Path

from render_svc.browser.memory import (
    PAGE_SIZE,
    TICKS,
    RendererMemoryGuard,
    descendants,
    processes,
)


def fake_proc(root: Path, entries: list[tuple[int, int, int, str]]) -> Path:
    """A /proc with (pid, ppid, resident MiB, command line) entries."""
    for pid, ppid, rss_mib, cmdline in entries:
        folder = root / str(pid)
        folder.mkdir(parents=True)
        (folder / "stat").write_text(
            f"{pid} (chrom ium) S {ppid} 1 1 0 -1 0 0 0 0 0 7 3 0 0 20 0 1 0"
        )
        pages = rss_mib * 1024 * 1024 // PAGE_SIZE
        (folder / "statm").write_text(f"999999 {pages} 10 1 0 1 0")
        # Chromium rewrites its title: some command lines come space-separated.
        separator = " " if "--lang" in cmdline else "\0"
        (folder / "cmdline").write_text(cmdline.replace(" ", separator) + "\0")
    (root / "self").mkdir()
    return root


def test_processes_and_descendants_follow_parents(tmp_path: Path) -> None:
    proc = fake_proc(
        tmp_path,
        [(10, 1, 50, "python"), (11, 10, 80, "node"), (12, 11, 300, "chromium"),
         (13, 12, 900, "chromium --type=renderer"), (20, 1, 5000, "other")],
    )  # fmt: skip
    table = processes(proc)
    assert table[13].ppid == 12 and table[13].rss_bytes == 900 * 1024 * 1024
    assert table[13].cpu_seconds == (7 + 3) / TICKS  # user and system time
    assert sorted(descendants(10, table)) == [11, 12, 13]


def test_only_renderers_over_the_limit_and_below_the_root_are_killed(tmp_path: Path) -> None:
    victim = subprocess.Popen(["sleep", "30"])
    bystander = subprocess.Popen(["sleep", "30"])
    try:
        proc = fake_proc(
            tmp_path,
            [(10, 1, 50, "python"), (11, 10, 80, "node"),
             (victim.pid, 11, 3000, "chromium --type=renderer --lang=en"),
             (bystander.pid, 11, 3000, "chromium --type=gpu-process"),
             (99999, 11, 100, "chromium --type=renderer"),
             (99998, 1, 9000, "chromium --type=renderer")],
        )  # fmt: skip
        guard = RendererMemoryGuard(2048 * 1024 * 1024, root=10, proc=proc)
        assert guard.check() == [victim.pid]
        assert victim.wait(timeout=5) == -9
        assert bystander.poll() is None and guard.killed == 1
    finally:
        for process in (victim, bystander):
            process.kill()
            process.wait()

"""The renderer memory guard: which processes it reads, which it kills."""

from __future__ import annotations

import subprocess
from pathlib import Path

from render_svc.browser.memory import TICKS, RendererMemoryGuard, descendants, processes
from tests.support.fake_proc import FakeProcess, fake_proc


def test_processes_and_descendants_follow_parents(tmp_path: Path) -> None:
    proc = fake_proc(
        tmp_path,
        [FakeProcess(10, 1, 50, "python"), FakeProcess(11, 10, 80, "node"),
         FakeProcess(12, 11, 300, "chromium"),
         FakeProcess(13, 12, 900, "chromium --type=renderer"),
         FakeProcess(20, 1, 5000, "other")],
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
            [FakeProcess(10, 1, 50, "python"), FakeProcess(11, 10, 80, "node"),
             FakeProcess(victim.pid, 11, 3000, "chromium --type=renderer --lang=en"),
             FakeProcess(bystander.pid, 11, 3000, "chromium --type=gpu-process"),
             FakeProcess(99999, 11, 100, "chromium --type=renderer"),
             FakeProcess(99998, 1, 9000, "chromium --type=renderer")],
        )  # fmt: skip
        guard = RendererMemoryGuard(limit_bytes=2048 * 1024 * 1024, root=10, proc=proc)
        assert guard.check() == [victim.pid]
        assert victim.wait(timeout=5) == -9
        assert bystander.poll() is None and guard.killed == 1
    finally:
        for process in (victim, bystander):
            process.kill()
            process.wait()

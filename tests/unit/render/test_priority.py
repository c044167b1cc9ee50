"""Browsers at a lower CPU priority: what render-svc starts inherits a nice value it cannot undo.

Each case runs in a child interpreter: dropping a capability from the bounding set lasts
for the life of the process, which must not be the test runner's.
"""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys
import textwrap

from tests.support.fake_proc import FakeProcess, fake_proc

SCRIPT = textwrap.dedent(
    """
    import asyncio, os, subprocess, sys, time
    from render_svc.browser.priority import at_lower_priority

    async def main() -> None:
        before = subprocess.Popen(["sleep", "30"])
        async with at_lower_priority(7):
            # Started inside the block, like Playwright's driver.
            driver = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
            time.sleep(0.3)  # its threads are up
        print(
            os.getpriority(os.PRIO_PROCESS, 0),
            os.getpriority(os.PRIO_PROCESS, driver.pid),
            os.getpriority(os.PRIO_PROCESS, before.pid),
        )
        for child in (before, driver):
            child.kill()

    asyncio.run(main())
    """
)


def run(script: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_processes_started_inside_are_lowered_and_nothing_else() -> None:
    # The last line (the block logs a line of its own before it).
    own, started, untouched = (int(v) for v in run(SCRIPT).splitlines()[-1].split())
    assert (own, started, untouched) == (0, 7, 0)


def test_programs_started_afterwards_cannot_raise_their_priority() -> None:
    script = textwrap.dedent(
        """
        import asyncio, subprocess, sys
        from render_svc.browser.priority import at_lower_priority

        CHILD = (
            "import os\\n"
            "os.setpriority(os.PRIO_PROCESS, 0, 5)\\n"
            "try:\\n"
            "    os.setpriority(os.PRIO_PROCESS, 0, -8)\\n"
            "    print('raised')\\n"
            "except PermissionError:\\n"
            "    print('refused')\\n"
        )

        async def main() -> None:
            print(subprocess.run([sys.executable, "-c", CHILD], capture_output=True,
                                 text=True, check=True).stdout.strip())
            async with at_lower_priority(5):
                pass
            print(subprocess.run([sys.executable, "-c", CHILD], capture_output=True,
                                 text=True, check=True).stdout.strip())

        asyncio.run(main())
        """
    )
    # Root could raise a child's priority (as Chromium does, to -8) until render-svc set up
    # its browsers; afterwards no program it starts can (nor ever could, when not root).
    answers = [line for line in run(script).splitlines() if line in {"raised", "refused"}]
    assert answers == ["raised" if os.geteuid() == 0 else "refused", "refused"]


def test_sessions_started_below_get_the_lower_priority_too() -> None:
    # Playwright starts each browser in a session of its own; with the kernel's autogroup the
    # session's group, not the thread's nice value, decides its share against other sessions.
    script = textwrap.dedent(
        """
        import pathlib, subprocess, time
        from render_svc.browser.priority import lower_sessions

        def group(pid):
            # No file: a kernel without autogroup. An empty one: the default group (this
            # process never left the first session, as in many containers).
            path = pathlib.Path(f"/proc/{pid}/autogroup")
            if not path.exists():
                return "none"
            text = path.read_text().split()
            return text[-1] if text else "default"

        own_before = group("self")
        browser = subprocess.Popen(["sleep", "30"], start_new_session=True)
        same_session = subprocess.Popen(["sleep", "30"])
        time.sleep(0.2)
        lowered = lower_sessions(7)
        again = lower_sessions(7)
        print(own_before, group("self"), group(browser.pid), len(lowered), len(again),
              browser.pid in lowered)
        for child in (browser, same_session):
            child.kill()
        """
    )
    own_before, own_after, browser, lowered, again, browser_lowered = run(script).split()
    if own_before == "none":  # a kernel without autogroup: nothing to lower
        assert (browser, lowered) == ("none", "0")
        return
    assert browser == "7"  # the new session's group
    # The child in this process's session shares its group: lowering it would have lowered
    # the service itself.
    assert own_after == own_before
    assert browser_lowered == "True"
    assert again == "0"  # once lowered, left as it is


def test_a_group_write_the_kernel_asks_to_repeat_is_repeated() -> None:
    # Without CAP_SYS_ADMIN the kernel takes one autogroup write per 100 ms and answers
    # EAGAIN to the next: the browser's own group must not be left out for that.
    from render_svc.browser import priority

    class Busy:
        def __init__(self, refusals: int, then: OSError | None = None) -> None:
            self.refusals, self.then, self.written = refusals, then, ""

        def write_text(self, text: str) -> None:
            if self.refusals:
                self.refusals -= 1
                raise BlockingIOError(11, "Resource temporarily unavailable")
            if self.then is not None:
                raise self.then
            self.written = text

    twice_busy = Busy(2)
    assert priority._write_autogroup_nice(twice_busy, 10) is True  # type: ignore[arg-type]
    assert twice_busy.written == "10"
    gone = Busy(0, ProcessLookupError(3, "No such process"))
    assert priority._write_autogroup_nice(gone, 10) is False  # type: ignore[arg-type]
    always_busy = Busy(100)
    assert priority._write_autogroup_nice(always_busy, 10) is False  # type: ignore[arg-type]


def sessions(root: pathlib.Path, own: str | None, children: dict[int, str]) -> None:
    """A /proc with this process's autogroup file and children of it with theirs."""
    processes = [FakeProcess(pid, os.getpid(), autogroup=g) for pid, g in children.items()]
    fake_proc(root, processes, own)


def test_only_other_sessions_groups_are_lowered(tmp_path: pathlib.Path) -> None:
    sessions(
        tmp_path,
        "/autogroup-1 nice 0\n",
        {
            901: "/autogroup-1 nice 0\n",  # ffmpeg: this service's own group
            902: "/autogroup-2 nice 0\n",  # a browser's session
            903: "/autogroup-3 nice 12\n",  # already lower than asked
        },
    )
    from render_svc.browser.priority import lower_sessions

    assert lower_sessions(10, tmp_path) == [902]
    assert (tmp_path / "902" / "autogroup").read_text() == "10"
    assert (tmp_path / "901" / "autogroup").read_text() == "/autogroup-1 nice 0\n"
    assert (tmp_path / "903" / "autogroup").read_text() == "/autogroup-3 nice 12\n"


def test_from_the_default_group_other_sessions_are_lowered_too(tmp_path: pathlib.Path) -> None:
    # A process that never left the first session (a container's, often) reads an empty
    # autogroup file: the default group, whose processes each compete against a browser
    # session's whole group. The browser's session still needs lowering; a child in the
    # default group (same group) does not.
    sessions(tmp_path, "", {901: "", 902: "/autogroup-2 nice 0\n"})
    from render_svc.browser.priority import lower_sessions

    assert lower_sessions(10, tmp_path) == [902]
    assert (tmp_path / "902" / "autogroup").read_text() == "10"
    assert (tmp_path / "901" / "autogroup").read_text() == ""


def test_a_kernel_without_autogroup_gets_no_writes(tmp_path: pathlib.Path) -> None:
    sessions(tmp_path, None, {902: "/autogroup-2 nice 0\n"})
    from render_svc.browser.priority import lower_sessions

    assert lower_sessions(10, tmp_path) == []
    assert (tmp_path / "902" / "autogroup").read_text() == "/autogroup-2 nice 0\n"

"""One supervised child process: log file, death with its parent, stop with grace then kill."""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import os
import signal
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import KW_ONLY, field
from pathlib import Path

from storypost_runtime.component import component

_PR_SET_PDEATHSIG = 1
_PAUSE_SIGNALS = frozenset({signal.SIGSTOP, signal.SIGCONT, signal.SIGTSTP})


def die_with_parent() -> Callable[[], None]:
    """A preexec_fn asking the kernel to SIGKILL the child when its parent dies.

    Resolved in the parent so the child only makes one libc call between fork and exec. The
    signal fires when the *thread* that forked exits: the stack must run on a thread that
    lives as long as the stack (asyncio's loop thread does).
    """
    prctl = ctypes.CDLL(None, use_errno=True).prctl
    parent = os.getpid()

    def preexec() -> None:
        prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        # The parent may have died before prctl ran: then nobody would ever kill us.
        if os.getppid() != parent:
            os.kill(os.getpid(), signal.SIGKILL)

    return preexec


def read_tail(path: Path, lines: int = 20) -> str:
    """The last `lines` lines of a log file ('' when there is none)."""
    try:
        with path.open("rb") as log:
            log.seek(0, os.SEEK_END)
            # Logs can be large after many runs; the tail is in the last few tens of KiB.
            log.seek(max(0, log.tell() - 64 * 1024))
            tail = deque(log.read().splitlines(), maxlen=lines)
    except FileNotFoundError:
        return ""
    return "\n".join(line.decode("utf-8", "replace") for line in tail)


@component
class ManagedProcess:
    """A child in its own process group whose output is appended to a log file."""

    _: KW_ONLY
    name: str
    argv: Sequence[str]
    env: Mapping[str, str]
    log_path: Path
    _process: asyncio.subprocess.Process | None = field(init=False, default=None)
    _stopping: bool = field(init=False, default=False)

    def __post_init__(self) -> None:
        # Copies: a caller changing its list or mapping later does not change a (re)start.
        self.argv = list(self.argv)
        self.env = dict(self.env)

    @property
    def pid(self) -> int | None:
        return None if self._process is None else self._process.pid

    @property
    def returncode(self) -> int | None:
        return None if self._process is None else self._process.returncode

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.returncode is None

    @property
    def stopping(self) -> bool:
        """True when an exit is expected (stop or kill was asked for)."""
        return self._stopping

    async def start(self) -> None:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with self.log_path.open("ab") as log:
            stamp = time.strftime("%Y-%m-%dT%H:%M:%S%z")
            log.write(f"\n=== {stamp} starting {self.name}: {' '.join(self.argv)}\n".encode())
            log.flush()
            self._stopping = False
            # Own session: a terminal's Ctrl-C reaches only the supervisor, which then stops
            # the children in order; and the whole group can be killed, grandchildren too.
            self._process = await asyncio.create_subprocess_exec(
                *self.argv,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=log,
                stderr=asyncio.subprocess.STDOUT,
                env=self.env,
                start_new_session=True,
                preexec_fn=die_with_parent(),
            )

    async def wait(self) -> int:
        if self._process is None:
            raise RuntimeError(f"{self.name} was never started")
        return await self._process.wait()

    def send_signal(self, sig: int) -> None:
        """Signals the main process (an exit after this is expected)."""
        self._stopping = True
        if self.running and self._process is not None:
            with contextlib.suppress(ProcessLookupError):
                self._process.send_signal(sig)

    async def stop(self, grace: float, sig: int = signal.SIGTERM) -> None:
        """`sig`, up to `grace` seconds to exit, then SIGKILL; leftovers in its group die too."""
        if self._process is None:
            return
        if self.running:
            self.send_signal(sig)
            try:
                await asyncio.wait_for(asyncio.shield(self._process.wait()), grace)
            except TimeoutError:
                self._kill_group()
        self._stopping = True
        await self._process.wait()
        # Grandchildren (a browser, a helper) must not outlive the component.
        self._kill_group()

    async def kill(self, sig: int = signal.SIGKILL) -> None:
        """Sends `sig`; for a signal that ends the process, waits for the exit.

        SIGKILL takes the whole group. SIGSTOP/SIGCONT (a hung component) return at once.
        """
        if self._process is None or not self.running:
            return
        if sig in _PAUSE_SIGNALS:
            with contextlib.suppress(ProcessLookupError):
                self._process.send_signal(sig)
            return
        if sig == signal.SIGKILL:
            self._stopping = True
            self._kill_group()
        else:
            self.send_signal(sig)
        await self._process.wait()

    def _kill_group(self) -> None:
        if self._process is not None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self._process.pid, signal.SIGKILL)

    def log_tail(self, lines: int = 20) -> str:
        return read_tail(self.log_path, lines)

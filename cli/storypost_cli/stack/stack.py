"""The embedded stack: starts components stage by stage, waits for health, stops in reverse."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import time
from collections.abc import Collection, Mapping
from dataclasses import replace
from pathlib import Path

from storypost_cli.stack.base import StackBase
from storypost_cli.stack.components import (
    COMPONENTS,
    STAGES,
    ComponentSpec,
    build_specs,
    stack_env,
)
from storypost_cli.stack.credentials import stack_credentials
from storypost_cli.stack.errors import StackError
from storypost_cli.stack.ports import StackPorts
from storypost_cli.stack.process import ManagedProcess

_POLL_SECONDS = 0.2
# One probe attempt longer than this counts as a failed attempt, not a hang.
_PROBE_LIMIT_SECONDS = 5.0
_LOG_TAIL_LINES = 20


class EmbeddedStack(StackBase):
    """Every storypost process on loopback, each a child process with its own log file.

    `components` picks a subset (e.g. only the dependencies for tests); `extra_env` overrides
    or adds STORYPOST_* settings for every child and for `env()`; `start_timeout` replaces
    every component's own limit for becoming healthy.
    """

    def __init__(
        self,
        data_dir: Path,
        ports: StackPorts,
        *,
        components: Collection[str] | None = None,
        extra_env: Mapping[str, str] | None = None,
        log_level: str = "info",
        start_timeout: float | None = None,
    ) -> None:
        super().__init__(ports, components)
        self._data_dir = data_dir.absolute()
        self._credentials = stack_credentials(self._data_dir)
        self._env = stack_env(ports, log_level, extra_env or {}, self._credentials)
        self._specs = build_specs(self._data_dir, ports, self._env, self._credentials)
        if start_timeout is not None:
            self._specs = {
                name: replace(spec, start_timeout=start_timeout)
                for name, spec in self._specs.items()
            }
        self._processes: dict[str, ManagedProcess] = {}
        self._watchers: dict[str, asyncio.Task[None]] = {}
        self._failures: list[StackError] = []
        self._failed = asyncio.Event()
        # While start() runs, a dependency that dies fails the start at once (no waiting for
        # the services that need it to time out).
        self._starting = False

    @property
    def data_dir(self) -> Path:
        return self._data_dir

    def log_path(self, component: str) -> Path:
        self._spec(component)
        return self._data_dir / "logs" / f"{component}.log"

    def pids(self) -> dict[str, int]:
        """Process ids of the components running now."""
        return {
            name: process.pid
            for name, process in self._processes.items()
            if process.running and process.pid is not None
        }

    async def start(self) -> None:
        """Starts every chosen component stage by stage; on any failure stops what started."""
        self._data_dir.mkdir(parents=True, exist_ok=True)
        self._starting = True
        try:
            for stage in STAGES:
                async with asyncio.TaskGroup() as group:
                    for name in stage:
                        if name in self._selected:
                            group.create_task(self.start_component(name))
            if self._failures:
                raise self._failures[0]
        except BaseException as error:
            await self._fail_start(error)
        finally:
            self._starting = False

    async def stop(self) -> None:
        """Stops everything in reverse start order (grace, then SIGKILL). Idempotent."""
        for stage in reversed(STAGES):
            running = [name for name in stage if name in self._processes]
            await asyncio.gather(*(self._stop_one(name) for name in running))

    async def start_component(self, component: str) -> None:
        """Starts one component and waits until it answers its health check."""
        spec = self._spec(component)
        current = self._processes.get(component)
        if current is not None and current.running:
            raise StackError(component, "is already running")
        # Starting it again is the answer to an earlier unexpected exit.
        self._forget_failures(component)
        _check_ports_free(spec)
        try:
            spec.prepare()
        except OSError as error:
            raise StackError(component, f"cannot prepare its data directory: {error}") from error
        argv = spec.command()
        process = ManagedProcess(
            name=component, argv=argv, env=self._child_env(spec), log_path=self.log_path(component)
        )
        started = time.monotonic()
        try:
            await process.start()
        except OSError as error:
            raise StackError(component, f"cannot run {argv[0]}: {error}") from error
        self._processes[component] = process
        self._watchers[component] = asyncio.create_task(self._watch(spec, process))
        try:
            await self._wait_healthy(spec, process)
        except BaseException:
            # Never leave a half-started component behind (also when cancelled); its exit is
            # reported by the exception, not as a later failure.
            await self._stop_one(component)
            self._forget_failures(component)
            raise
        self._startup_seconds[component] = time.monotonic() - started

    async def restart(self, component: str) -> None:
        """Stops one component (grace, then SIGKILL) and starts it again."""
        await self._stop_one(component)
        await self.start_component(component)

    async def kill(self, component: str, sig: int = signal.SIGKILL) -> None:
        """Sends `sig` to one component (a crash test); waits for it to exit unless it pauses."""
        self._spec(component)
        process = self._processes.get(component)
        if process is None:
            raise StackError(component, "is not running")
        await process.kill(sig)
        watcher = self._watchers.get(component)
        if watcher is not None and not process.running:
            await watcher

    async def wait_for_failure(self) -> StackError:
        """Returns once a component exits without being asked to; the error names it."""
        await self._failed.wait()
        return self._failures[0]

    def _forget_failures(self, component: str) -> None:
        self._failures = [error for error in self._failures if error.component != component]
        if not self._failures:
            self._failed.clear()

    def _spec(self, component: str) -> ComponentSpec:
        try:
            return self._specs[component]
        except KeyError:
            raise ValueError(
                f"unknown component {component!r}; known: {list(COMPONENTS)}"
            ) from None

    def _child_env(self, spec: ComponentSpec) -> dict[str, str]:
        # The parent's environment (PATH, HOME, proxies off) + the stack's + the component's.
        return {**os.environ, **self._env, **spec.env, "PYTHONUNBUFFERED": "1"}

    async def _wait_healthy(self, spec: ComponentSpec, process: ManagedProcess) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + spec.start_timeout
        reason = "no answer yet"
        while True:
            if not process.running:
                message = f"exited with code {process.returncode} during start-up"
                raise StackError(spec.name, message, process.log_tail(_LOG_TAIL_LINES))
            if self._starting and self._failures:
                raise self._failures[0]
            try:
                async with asyncio.timeout(_PROBE_LIMIT_SECONDS):
                    await spec.probe()
                return
            except Exception as error:  # any failed probe means "not yet"; the reason is kept
                reason = f"{type(error).__name__}: {error}"[:300] or type(error).__name__
            remaining = deadline - loop.time()
            if remaining <= 0:
                message = f"not healthy after {spec.start_timeout:g} s (last probe: {reason})"
                raise StackError(spec.name, message, process.log_tail(_LOG_TAIL_LINES))
            await asyncio.sleep(min(_POLL_SECONDS, remaining))

    async def _watch(self, spec: ComponentSpec, process: ManagedProcess) -> None:
        code = await process.wait()
        spec.cleanup()
        with process.log_path.open("a") as log:
            stamp = time.strftime("%Y-%m-%dT%H:%M:%S%z")
            log.write(f"=== {stamp} {spec.name} exited with code {code}\n")
        if not process.stopping:
            tail = process.log_tail(_LOG_TAIL_LINES)
            self._failures.append(StackError(spec.name, f"exited unexpectedly (code {code})", tail))
            self._failed.set()

    async def _stop_one(self, component: str) -> None:
        process = self._processes.pop(component, None)
        if process is None:
            return
        spec = self._spec(component)
        await process.stop(spec.stop_grace, spec.stop_signal)
        watcher = self._watchers.pop(component, None)
        if watcher is not None:
            await watcher


def _check_ports_free(spec: ComponentSpec) -> None:
    """Fails at once, naming the port, when something already listens on one of ours."""
    for port in spec.listens_on:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
            # Like the servers themselves: a port in TIME_WAIT is free, a listening one is not.
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                probe.bind(("127.0.0.1", port))
            except OSError as error:
                taken = f"port {port} on 127.0.0.1 is taken ({error.strerror})"
                raise StackError(spec.name, f"{taken}; is another stack running?") from None

"""A small TCP load balancer: round robin over the backends whose /readyz says 200, as a
Kubernetes Service does over ready endpoints. Loopback only; stops with its block.

`running()` serves in the caller's event loop (a test that awaits); `BalancerThread` serves
in a thread of its own, for a stack whose callers may block the test's loop (a CLI run with
subprocess.run against the edge)."""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import httpx

from storypost_runtime.component import component


@dataclass
class Backend:
    port: int
    ready: bool = False
    # (started, ended) of every connection this backend served, in monotonic seconds.
    connections: list[tuple[float, float]] = field(default_factory=list)
    # Start times of the connections open to this backend now.
    open_since: list[float] = field(default_factory=list)

    def open_for(self, seconds: float) -> bool:
        """Whether a connection has been open to this backend for at least `seconds`."""
        return any(time.monotonic() - started >= seconds for started in self.open_since)


@component
class Balancer:
    backends: list[Backend]
    poll_seconds: float = 0.1
    _next: int = field(init=False, default=0)
    port: int = field(init=False, default=0)
    refused: int = field(init=False, default=0)

    async def _watch(self) -> None:
        async with httpx.AsyncClient(timeout=0.5, trust_env=False) as http:
            while True:
                for backend in self.backends:
                    try:
                        answer = await http.get(f"http://127.0.0.1:{backend.port}/readyz")
                        backend.ready = answer.status_code == 200
                    except httpx.HTTPError:
                        backend.ready = False
                await asyncio.sleep(self.poll_seconds)

    def _choose(self) -> list[Backend]:
        ready = [b for b in self.backends if b.ready]
        self._next += 1
        if not ready:
            return []
        start = self._next % len(ready)
        return ready[start:] + ready[:start]

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        started = time.monotonic()
        upstream: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None
        chosen: Backend | None = None
        # A connection refused before any byte was sent is safe to try elsewhere.
        for backend in self._choose():
            try:
                upstream = await asyncio.open_connection("127.0.0.1", backend.port)
            except OSError:
                self.refused += 1
                continue
            chosen = backend
            break
        if upstream is None or chosen is None:
            writer.close()
            return
        up_reader, up_writer = upstream
        chosen.open_since.append(started)

        async def pipe(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
            with contextlib.suppress(OSError):
                while data := await src.read(65536):
                    dst.write(data)
                    await dst.drain()
            with contextlib.suppress(OSError):
                dst.write_eof()

        try:
            await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))
        finally:
            chosen.open_since.remove(started)
        chosen.connections.append((started, time.monotonic()))
        for w in (writer, up_writer):
            w.close()

    @contextlib.asynccontextmanager
    async def running(self, port: int = 0) -> AsyncIterator[Balancer]:
        server = await asyncio.start_server(self._serve, "127.0.0.1", port)
        self.port = server.sockets[0].getsockname()[1]
        watcher = asyncio.create_task(self._watch())
        try:
            yield self
        finally:
            watcher.cancel()
            server.close()
            with contextlib.suppress(asyncio.CancelledError):
                await watcher


@component
class BalancerThread:
    """A Balancer on `port`, serving from its own thread and event loop until `stop()`."""

    backends: list[Backend]
    port: int
    balancer: Balancer = field(init=False)
    _loop: asyncio.AbstractEventLoop = field(init=False, default_factory=asyncio.new_event_loop)
    _stopping: asyncio.Event | None = field(init=False, default=None)
    _started: threading.Event = field(init=False, default_factory=threading.Event)
    _error: BaseException | None = field(init=False, default=None)
    _thread: threading.Thread = field(init=False)

    def __post_init__(self) -> None:
        self.balancer = Balancer(self.backends)
        self._thread = threading.Thread(target=self._run, name="balancer", daemon=True)

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        try:
            self._loop.run_until_complete(self._serve())
        except BaseException as error:  # reported to start()
            self._error = error
            self._started.set()
        finally:
            # Connections still being piped end with the balancer.
            pending = asyncio.all_tasks(self._loop)
            for task in pending:
                task.cancel()
            if pending:
                self._loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
            self._loop.close()

    async def _serve(self) -> None:
        self._stopping = asyncio.Event()
        async with self.balancer.running(self.port):
            self._started.set()
            await self._stopping.wait()

    def start(self) -> None:
        self._thread.start()
        self._started.wait(10)
        if self._error is not None:
            raise RuntimeError(f"the balancer did not start: {self._error}")

    def stop(self) -> None:
        if self._stopping is not None and self._thread.is_alive():
            self._loop.call_soon_threadsafe(self._stopping.set)
        self._thread.join(10)

"""A real local HTTPS webhook receiver with a throwaway CA, for tests and the benchmark."""

from __future__ import annotations

import asyncio
import json
import socket
import time
from collections import defaultdict, deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Self

from aiohttp import web

from storypost.testing.certificates import Certificates
from storypost_runtime.component import component


@dataclass(frozen=True)
class Received:
    """One POST as the receiver saw it."""

    path: str
    headers: dict[str, str]
    body: bytes
    at: float

    def header(self, name: str) -> str | None:
        return self.headers.get(name.lower())

    @property
    def json(self) -> Any:
        return json.loads(self.body)

    @property
    def delivery(self) -> str:
        return self.headers.get("x-service-delivery", "")


@dataclass(frozen=True)
class Answer:
    status: int = 200
    delay: float = 0.0


@component
class Receiver:
    """Records every POST per path and answers as told (a queue of answers per path, then 200).
    Each test uses its own path, so one receiver serves a whole session. `async with` starts
    it and closes it."""

    certs: Certificates
    host: str = "127.0.0.1"
    _received: dict[str, list[Received]] = field(
        init=False, default_factory=lambda: defaultdict(list)
    )
    _answers: dict[str, deque[Answer]] = field(
        init=False, default_factory=lambda: defaultdict(deque)
    )
    _default: dict[str, Answer] = field(init=False, default_factory=dict)
    _changed: asyncio.Condition = field(init=False, default_factory=asyncio.Condition)
    _runner: web.AppRunner | None = field(init=False, default=None)
    port: int = field(init=False, default=0)

    @property
    def base_url(self) -> str:
        return f"https://{self.host}:{self.port}"

    def url(self, path: str) -> str:
        return f"{self.base_url}{path}"

    def answer(self, path: str, *answers: Answer) -> None:
        """The next answers for `path`, in order; after them the default."""
        self._answers[path].extend(answers)

    def default(self, path: str, answer: Answer) -> None:
        self._default[path] = answer

    def received(self, path: str) -> list[Received]:
        return list(self._received[path])

    async def wait_for(
        self, path: str, done: Callable[[list[Received]], bool], timeout: float = 15.0
    ) -> list[Received]:
        async with asyncio.timeout(timeout):
            async with self._changed:
                await self._changed.wait_for(lambda: done(self._received[path]))
        return self.received(path)

    async def wait_count(self, path: str, count: int, timeout: float = 15.0) -> list[Received]:
        return await self.wait_for(path, lambda got: len(got) >= count, timeout)

    async def _handle(self, request: web.Request) -> web.Response:
        body = await request.read()
        got = Received(
            request.path, {k.lower(): v for k, v in request.headers.items()}, body, time.time()
        )
        async with self._changed:
            self._received[request.path].append(got)
            self._changed.notify_all()
        queue = self._answers[request.path]
        answer = queue.popleft() if queue else self._default.get(request.path, Answer())
        if answer.delay:
            await asyncio.sleep(answer.delay)
        return web.Response(status=answer.status, text="ok")

    async def start(self) -> None:
        app = web.Application()
        app.router.add_post("/{tail:.*}", self._handle)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        sock = socket.socket()
        sock.bind((self.host, 0))
        self.port = sock.getsockname()[1]
        site = web.SockSite(self._runner, sock, ssl_context=self.certs.server_context())
        await site.start()

    async def close(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(self, *_exc: object) -> None:
        await self.close()

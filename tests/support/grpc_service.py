"""A service process of a test's (or a bench's) own, started next to a stack: waited for until
its gRPC health service says SERVING."""

from __future__ import annotations

import asyncio

from storypost_cli.stack import health
from storypost_cli.stack.process import ManagedProcess


async def start_serving(process: ManagedProcess, port: int, attempts: int) -> None:
    """Starts `process` and returns once 127.0.0.1:`port` answers SERVING (a try every 0.2 s,
    `attempts` tries); raises with the log's tail when it exits or stays unready."""
    await process.start()
    probe = health.grpc_serving(f"127.0.0.1:{port}")
    for _ in range(attempts):
        if not process.running:
            raise RuntimeError(f"{process.name} exited:\n{process.log_tail(30)}")
        try:
            await probe()
            return
        except Exception:
            await asyncio.sleep(0.2)
    raise RuntimeError(f"{process.name} did not start:\n{process.log_tail(30)}")

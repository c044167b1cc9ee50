"""The edge's HTTP server under many open keep-alive connections, beside waitress.

A client pool (or an ingress) keeps connections open between calls. waitress, which served the
edge until 2026-11-28, looked at every open connection on each event, so its CPU per request
grew with them; the edge's server (cheroot, edge/serve.py) watches them with epoll. Both serve
the same bare Falcon route in a process of their own; the same open-loop load (100 requests/s)
is sent once over few connections and once over many, in rounds, and the server process's CPU
per request (user + system, /proc) is compared. Last line: the edge server's CPU per request
with many connections over few (flat is 1.0), and waitress's, for comparison.

    .venv/bin/python bench/connections.py [--seconds 15] [--many 400] [--rounds 2]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import sys
import time

import aiohttp

from render_svc.browser.memory import process
from storypost_cli.stack.ports import free_ports

SERVER = """
import sys, falcon
class Route:
    def on_post(self, req, resp):
        req.bounded_stream.read()
        resp.media = {"ok": True}
app = falcon.App()
app.add_route("/x", Route())
port = int(sys.argv[2])
if sys.argv[1] == "edge":
    from edge.config import EdgeSettings
    from edge.serve import create_server
    create_server(app, EdgeSettings(edge_port=port)).serve()
else:
    import waitress
    waitress.serve(app, host="127.0.0.1", port=port, threads=64, connection_limit=1000,
                   asyncore_use_poll=True, channel_timeout=180, _quiet=True)
"""
RATE = 100


def cpu_seconds(pid: int) -> float:
    found = process(pid)
    if found is None:
        raise RuntimeError(f"the server (pid {pid}) has exited")
    return found.cpu_seconds


async def wait_ready(url: str) -> None:
    async with aiohttp.ClientSession() as http:
        for _ in range(200):
            try:
                async with http.post(url, json={}) as answer:
                    await answer.read()
                    return
            except aiohttp.ClientError:
                await asyncio.sleep(0.05)
    raise RuntimeError(f"{url} did not answer")


async def cpu_per_request(url: str, pid: int, connections: int, seconds: float) -> float:
    """Opens `connections` keep-alive connections (one burst), then sends RATE requests a second
    for `seconds` over the pool; returns the server's CPU milliseconds per request."""
    connector = aiohttp.TCPConnector(limit=connections, keepalive_timeout=600)
    async with aiohttp.ClientSession(connector=connector) as http:

        async def one() -> None:
            async with http.post(url, json={"a": 1}) as answer:
                await answer.read()
                assert answer.status == 200, answer.status

        await asyncio.gather(*(one() for _ in range(connections)))
        count = int(seconds * RATE)
        before, start = cpu_seconds(pid), time.monotonic()
        sent = []
        for index in range(count):
            await asyncio.sleep(max(0.0, start + index / RATE - time.monotonic()))
            sent.append(asyncio.ensure_future(one()))
        await asyncio.gather(*sent)
        return 1000 * (cpu_seconds(pid) - before) / count


async def measure(
    servers: dict[str, tuple[str, subprocess.Popen[bytes]]], args: argparse.Namespace
) -> dict[tuple[str, int], list[float]]:
    for url, _process in servers.values():
        await wait_ready(url)
    figures: dict[tuple[str, int], list[float]] = {}
    for _ in range(args.rounds):
        for name, (url, server) in servers.items():
            for connections in (args.few, args.many):
                ms = await cpu_per_request(url, server.pid, connections, args.seconds)
                figures.setdefault((name, connections), []).append(ms)
                print(f"{name:9} {connections:4} connections: {ms:.2f} ms CPU a request")
    return figures


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=15)
    parser.add_argument("--few", type=int, default=10)
    parser.add_argument("--many", type=int, default=400)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    servers: dict[str, tuple[str, subprocess.Popen[bytes]]] = {}
    try:
        for name, port in zip(("edge", "waitress"), free_ports(2), strict=True):
            server = subprocess.Popen([sys.executable, "-c", SERVER, name, str(port)])
            servers[name] = (f"http://127.0.0.1:{port}/x", server)
        figures = asyncio.run(measure(servers, args))
    finally:
        for _url, server in servers.values():
            server.terminate()
            server.wait(10)

    def growth(name: str) -> float:
        many, few = figures[name, args.many], figures[name, args.few]
        return statistics.median(many) / statistics.median(few)

    print(
        f"CPU per request, {args.many} over {args.few} open connections: "
        f"edge server {growth('edge'):.2f}x, waitress {growth('waitress'):.2f}x"
    )


if __name__ == "__main__":
    main()

"""The MCP path's extra CPU: generate-uuid as an API call and as an MCP tool call, side by side.

One embedded stack (MongoDB, account-svc, the edge; the rate limit lifted so the bench
measures work, not the limit). Two targets are loaded in turn, in rounds, within one run (so
machine noise hits them alike), with the same client, concurrency and connections:
  api  POST /o/<org>/api/v1/generate-uuid  {}
  mcp       POST /o/<org>/mcp  {"method": "tools/call", "params": {"name": "generate-uuid"}}
            (JSON-RPC as an MCP host sends it after `initialize`: streamable HTTP, protocol
            version 2025-11-25, the SDK's stateless JSON answers)
  mcp-2026  the same call in the 2026-07-28 era (no handshake; the SDK serves it in one
            exchange, without the per-request transport of the stateless 2025 path)
The edge process's CPU (user + system, /proc) per request is compared: the extra of the MCP
path is the SDK's JSON-RPC parsing and dispatch and the hop to its event loop and back, on
top of the same auth, rate limit, validation and handler. Last line: the ratio MCP / API for
the 2025 era that hosts use today (goal: at most 2).

    .venv/bin/python bench/mcp_overhead.py [--requests 1500] [--rounds 3] [--concurrency 8]
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from render_svc.browser.memory import process

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # bench.edge_stack

from bench.edge_stack import edge_with_org, overhead_arguments  # noqa: E402

GOAL = 2.0
TOOL_CALL = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "tools/call",
    "params": {"name": "generate-uuid", "arguments": {}},
}
MCP_HEADERS = {
    "Accept": "application/json, text/event-stream",
    "MCP-Protocol-Version": "2025-11-25",
}
# The same call in the 2026-07-28 era: no handshake, the envelope in `_meta` and headers.
MODERN_CALL = {
    **TOOL_CALL,
    "params": {
        "name": "generate-uuid",
        "arguments": {},
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
        },
    },
}
MODERN_HEADERS = {
    "Accept": "application/json, text/event-stream",
    "MCP-Protocol-Version": "2026-07-28",
    "Mcp-Method": "tools/call",
    "Mcp-Name": "generate-uuid",
}


@dataclass
class Round:
    requests: int
    cpu_seconds: float
    seconds: float

    @property
    def cpu_ms(self) -> float:
        return self.cpu_seconds / self.requests * 1000


def cpu_seconds(pid: int) -> float:
    found = process(pid)
    if found is None:
        raise RuntimeError(f"the edge (pid {pid}) has exited")
    return found.cpu_seconds


def check(name: str, response: httpx.Response) -> None:
    if response.status_code != 200:
        raise RuntimeError(f"{name}: {response.status_code} {response.text}")
    if name.startswith("mcp"):
        result = response.json().get("result") or {}
        if result.get("isError") is not False or "uuid" not in result["structuredContent"]:
            raise RuntimeError(f"mcp: {response.text}")


async def load(
    http: httpx.AsyncClient,
    name: str,
    url: str,
    body: dict[str, Any],
    headers: dict[str, str],
    requests: int,
    concurrency: int,
    edge_pid: int,
) -> Round:
    remaining = requests

    async def worker() -> None:
        nonlocal remaining
        while remaining > 0:
            remaining -= 1
            check(name, await http.post(url, json=body, headers=headers))

    cpu, started = cpu_seconds(edge_pid), time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return Round(requests, cpu_seconds(edge_pid) - cpu, time.perf_counter() - started)


async def main() -> None:
    args = overhead_arguments(__doc__)
    async with edge_with_org() as edge_org:
        stack = edge_org.stack
        auth = edge_org.auth
        base = f"{stack.edge_url}/o/{edge_org.organization_id}"
        targets: dict[str, tuple[str, dict[str, Any], dict[str, str]]] = {
            "api": (f"{base}/api/v1/generate-uuid", {}, auth),
            "mcp": (f"{base}/mcp", TOOL_CALL, {**auth, **MCP_HEADERS}),
            "mcp-2026": (f"{base}/mcp", MODERN_CALL, {**auth, **MODERN_HEADERS}),
        }
        edge_pid = stack.pids()["edge"]
        rounds: dict[str, list[Round]] = {name: [] for name in targets}
        async with httpx.AsyncClient(
            timeout=30, limits=httpx.Limits(max_connections=args.concurrency)
        ) as http:
            for name, (url, body, headers) in targets.items():  # warm-up
                await load(http, name, url, body, headers, 200, args.concurrency, edge_pid)
            for _ in range(args.rounds):
                for name, (url, body, headers) in targets.items():
                    rounds[name].append(
                        await load(
                            http,
                            name,
                            url,
                            body,
                            headers,
                            args.requests,
                            args.concurrency,
                            edge_pid,
                        )
                    )
    cpu = {name: statistics.median(r.cpu_ms for r in runs) for name, runs in rounds.items()}
    for name, runs in rounds.items():
        rate = statistics.median(r.requests / r.seconds for r in runs)
        print(
            f"{name:8} edge CPU {cpu[name]:6.3f} ms/request (median of {len(runs)} rounds: "
            + ", ".join(f"{r.cpu_ms:.3f}" for r in runs)
            + f")  {rate:7.1f} req/s"
        )
    print(f"mcp-2026/api {cpu['mcp-2026'] / cpu['api']:.2f}x (the 2026-07-28 era: no handshake)")
    ratio = cpu["mcp"] / cpu["api"]
    verdict = "met" if ratio <= GOAL else "NOT met"
    print(
        f"MCP extra CPU {cpu['mcp'] - cpu['api']:.3f} ms/request; MCP/API {ratio:.2f}x "
        f"(goal <= {GOAL:.0f}x: {verdict})"
    )


if __name__ == "__main__":
    asyncio.run(main())

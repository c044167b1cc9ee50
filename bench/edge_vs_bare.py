"""Edge overhead: generate-uuid through the edge vs bare Falcon routes, side by side.

Three targets are loaded in turn, in rounds, within one run (so machine noise hits them alike):
  bare       a Falcon route on the edge's HTTP server (edge/serve.py) that returns a uuid
  bare+auth  the same route doing the two account-svc calls every authenticated request needs
  edge       POST /o/<org>/api/v1/generate-uuid (auth cache, shared rate limit taken ahead
             while the organization is busy, validation)
Prints throughput and p50/p99 per target, the CPU each process spent per call under that
target's load (read from /proc: the client is this process; docs/edge.md "Speed"), then the
ratios edge/bare and edge/bare+auth last.
"""

from __future__ import annotations

import asyncio
import os
import socket
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import httpx

from storypost_runtime.service_auth import EDGE

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # bench.edge_stack

from bench.edge_stack import edge_with_org, overhead_arguments  # noqa: E402

HERE = Path(__file__).resolve().parent


@dataclass
class Result:
    latencies: list[float]
    seconds: float

    @property
    def throughput(self) -> float:
        return len(self.latencies) / self.seconds

    def percentile(self, q: float) -> float:
        ordered = sorted(self.latencies)
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000


async def load(url: str, headers: dict[str, str], requests: int, concurrency: int) -> Result:
    latencies: list[float] = []
    remaining = requests
    async with httpx.AsyncClient(
        timeout=30, limits=httpx.Limits(max_connections=concurrency)
    ) as client:

        async def worker() -> None:
            nonlocal remaining
            while remaining > 0:
                remaining -= 1
                started = time.perf_counter()
                response = await client.post(url, json={}, headers=headers)
                latencies.append(time.perf_counter() - started)
                if response.status_code != 200:
                    raise RuntimeError(f"{url}: {response.status_code} {response.text}")

        started = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(concurrency)))
        return Result(latencies, time.perf_counter() - started)


_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def _process_cpu() -> dict[str, float]:
    """CPU seconds so far of this process ("client") and each process it started, by name
    (the stack's components, the bare servers); empty where /proc is not there."""
    if not Path("/proc").is_dir():
        return {}
    parents: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            parents.setdefault(int(stat[stat.rindex(")") + 2 :].split()[1]), []).append(
                int(entry.name)
            )
    spent = {"client": time.process_time()}
    todo = list(parents.get(os.getpid(), []))
    while todo:
        pid = todo.pop()
        todo.extend(parents.get(pid, []))
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
            command = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        name = _process_name([part.decode(errors="replace") for part in command])
        spent[name] = spent.get(name, 0.0) + (int(fields[11]) + int(fields[12])) / _TICKS
    return spent


def _process_name(command: list[str]) -> str:
    if "-m" in command:
        return command[command.index("-m") + 1].removeprefix("storypost_cli.")
    if any(part.endswith("bare_server.py") for part in command):
        return "bare_server+auth" if "--account-addr" in command else "bare_server"
    return Path(command[0]).name


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


async def wait_http(url: str, headers: dict[str, str]) -> None:
    async with httpx.AsyncClient() as client:
        for _ in range(100):
            try:
                await client.post(url, json={}, headers=headers)
                return
            except httpx.TransportError:
                await asyncio.sleep(0.1)
    raise RuntimeError(f"{url} did not start")


async def main() -> None:
    args = overhead_arguments(__doc__)
    async with edge_with_org() as edge_org:
        stack, org_id = edge_org.stack, edge_org.organization_id
        env = stack.env()
        headers = edge_org.auth
        plain_port, auth_port = free_port(), free_port()
        servers = [
            await asyncio.create_subprocess_exec(
                sys.executable, str(HERE / "bare_server.py"), "--port", str(plain_port)
            ),
            await asyncio.create_subprocess_exec(
                sys.executable,
                str(HERE / "bare_server.py"),
                "--port",
                str(auth_port),
                "--account-addr",
                env["STORYPOST_ACCOUNT_ADDR"],
                "--org",
                org_id,
                # Authenticates as the edge does, with the edge's signed calls.
                env={**os.environ, "STORYPOST_SERVICE_KEY": stack.credentials()[EDGE]},
            ),
        ]
        try:
            targets = {
                "bare": f"http://127.0.0.1:{plain_port}/noop",
                "bare+auth": f"http://127.0.0.1:{auth_port}/noop",
                "edge": f"{stack.edge_url}/o/{org_id}/api/v1/generate-uuid",
            }
            for url in targets.values():
                await wait_http(url, headers)
            results: dict[str, list[Result]] = {name: [] for name in targets}
            cpu: dict[str, dict[str, float]] = {name: {} for name in targets}
            for url in targets.values():  # warm-up
                await load(url, headers, 200, args.concurrency)
            for _ in range(args.rounds):
                for name, url in targets.items():
                    before = _process_cpu()
                    results[name].append(await load(url, headers, args.requests, args.concurrency))
                    for process, seconds in _process_cpu().items():
                        spent = seconds - before.get(process, seconds)
                        cpu[name][process] = cpu[name].get(process, 0.0) + spent
        finally:
            for server in servers:
                server.terminate()
                await server.wait()
    summary: dict[str, tuple[float, float, float]] = {}
    for name, runs in results.items():
        merged = Result([lat for r in runs for lat in r.latencies], sum(r.seconds for r in runs))
        summary[name] = (
            statistics.median(r.throughput for r in runs),
            merged.percentile(0.50),
            merged.percentile(0.99),
        )
        print(
            f"{name:10} {summary[name][0]:8.1f} req/s  p50 {summary[name][1]:6.2f} ms  "
            f"p99 {summary[name][2]:6.2f} ms"
        )
        calls = len(merged.latencies)
        # Processes that spent at least 0.01 ms a call (the others idled).
        shares = sorted(
            ((1000 * seconds / calls, process) for process, seconds in cpu[name].items()),
            reverse=True,
        )
        listed = ", ".join(f"{process} {ms:.2f}" for ms, process in shares if ms >= 0.01)
        print(f"{'':10} CPU ms per call: {listed}")
    edge, bare, auth = summary["edge"], summary["bare"], summary["bare+auth"]
    print(
        f"edge/bare: throughput {edge[0] / bare[0]:.2f}x p50 {edge[1] / bare[1]:.2f}x "
        f"p99 {edge[2] / bare[2]:.2f}x | edge/bare+auth: throughput {edge[0] / auth[0]:.2f}x "
        f"p50 {edge[1] / auth[1]:.2f}x p99 {edge[2] / auth[2]:.2f}x"
    )


if __name__ == "__main__":
    asyncio.run(main())

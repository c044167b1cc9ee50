"""A real Prometheus (Debian's) scrapes the running stack with the alert rules of the prod
overlay: every component's target is up and no alert fires; killing publish-svc raises
PublishDown within the rule's `for:` (scaled down here so the test takes seconds; promtool's
tests, tests/deploy/test_alert_rules.py, run the real durations), and it resolves after the
restart. The backlog gauges reach Prometheus too."""

from __future__ import annotations

import asyncio
import re
import shutil
import socket
import subprocess
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest
import yaml

from storypost.testing.stack import StackHandle
from tests.deploy.support import of_kind, render
from tests.support.api import only_in_passes

pytestmark = pytest.mark.integration

# Stack component → the job the PodMonitor gives its pods (podmonitor.yaml).
JOBS = {
    "edge": "storypost-edge",
    "account": "storypost-account-svc",
    "render": "storypost-render-svc",
    "publish": "storypost-publish-svc",
    "webhook": "storypost-webhook-svc",
}
INTERVAL_SECONDS = 1
FOR_SECONDS = 10


@dataclass(frozen=True)
class Prometheus:
    url: str
    http: httpx.AsyncClient

    async def alerts(self) -> dict[str, str]:
        """Alert name → state (pending, firing) of the active ones."""
        answer = await self.http.get(f"{self.url}/api/v1/alerts")
        answer.raise_for_status()
        return {a["labels"]["alertname"]: a["state"] for a in answer.json()["data"]["alerts"]}

    async def query(self, expr: str) -> list[dict[str, Any]]:
        answer = await self.http.get(f"{self.url}/api/v1/query", params={"query": expr})
        answer.raise_for_status()
        found: list[dict[str, Any]] = answer.json()["data"]["result"]
        return found


def scaled_rules() -> dict[str, Any]:
    """The prod overlay's rules with every `for:` shortened to FOR_SECONDS."""
    (rule,) = of_kind(render("overlays/prod"), "PrometheusRule").values()
    groups = rule["spec"]["groups"]
    for group in groups:
        group["interval"] = f"{INTERVAL_SECONDS}s"
        for item in group["rules"]:
            if "for" in item:
                item["for"] = f"{FOR_SECONDS}s"
    return {"groups": groups}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@pytest.fixture
async def prometheus(storypost_stack: StackHandle, tmp_path: Path) -> AsyncIterator[Prometheus]:
    binary = shutil.which("prometheus")
    assert binary, "prometheus: Debian's prometheus package (scripts/ensure-apt.sh installs it)"
    (tmp_path / "rules.yaml").write_text(yaml.safe_dump(scaled_rules()))
    scrape = [
        {
            "job_name": job,
            "static_configs": [
                {"targets": [urlsplit(u).netloc for u in storypost_stack.metrics_urls(name)]}
            ],
        }
        for name, job in JOBS.items()
    ]
    config = {
        "global": {
            "scrape_interval": f"{INTERVAL_SECONDS}s",
            "evaluation_interval": f"{INTERVAL_SECONDS}s",
        },
        "rule_files": ["rules.yaml"],
        "scrape_configs": scrape,
    }
    (tmp_path / "prometheus.yml").write_text(yaml.safe_dump(config))
    port = free_port()
    process = subprocess.Popen(
        [
            binary,
            f"--config.file={tmp_path / 'prometheus.yml'}",
            f"--storage.tsdb.path={tmp_path / 'data'}",
            f"--web.listen-address=127.0.0.1:{port}",
        ],
        stdout=subprocess.DEVNULL,
        stderr=(tmp_path / "prometheus.log").open("w"),
    )
    try:
        async with httpx.AsyncClient(timeout=5.0) as http:
            found = Prometheus(f"http://127.0.0.1:{port}", http)
            await _until(lambda: _ready(found), 60, "Prometheus ready")
            yield found
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


async def _ready(prometheus: Prometheus) -> bool:
    try:
        return (await prometheus.http.get(f"{prometheus.url}/-/ready")).status_code == 200
    except httpx.HTTPError:
        return False


async def _until(probe: Any, seconds: float, what: str) -> float:
    """Waits until `await probe()` is true; the seconds it took."""
    start = time.monotonic()
    while time.monotonic() - start < seconds:
        if await probe():
            return time.monotonic() - start
        await asyncio.sleep(0.5)
    raise AssertionError(f"not within {seconds} s: {what}")


async def test_killing_publish_svc_raises_publish_down_within_its_for(
    request: pytest.FixtureRequest, prometheus: Prometheus, storypost_stack: StackHandle
) -> None:
    only_in_passes(
        request,
        "processes",
        "production",
        why="the processes, and the containers of the production shape (both replicas of "
        "publish-svc killed) as a cluster's Prometheus scrapes them",
    )

    async def all_up() -> bool:
        up = await prometheus.query('up{job=~"storypost-.*"}')
        return len(up) >= len(JOBS) and all(r["value"][1] == "1" for r in up)

    await _until(all_up, 60, "every component's target up")
    # Healthy: none of the availability or backlog alerts is active.
    await asyncio.sleep(FOR_SECONDS + 2 * INTERVAL_SECONDS)
    active = await prometheus.alerts()
    assert not {a for a in active if re.fullmatch(r".*(Down|Backlog)", a)}, active
    backlog = await prometheus.query('storypost_backlog_records{backlog="posts_due"}')
    assert backlog, "publish-svc's backlog gauge is not scraped"

    await storypost_stack.processes.kill("publish")
    try:

        async def firing() -> bool:
            return (await prometheus.alerts()).get("PublishDown") == "firing"

        took = await _until(firing, FOR_SECONDS + 30, "PublishDown firing")
        # Within its `for:`, plus a scrape and two evaluations to notice.
        assert took <= FOR_SECONDS + 4 * INTERVAL_SECONDS + 5, took
        others = {a for a, s in (await prometheus.alerts()).items() if s == "firing"}
        assert {a for a in others if a.endswith("Down")} == {"PublishDown"}, others
    finally:
        await storypost_stack.processes.start_component("publish")

    async def resolved() -> bool:
        return "PublishDown" not in await prometheus.alerts()

    await _until(resolved, 60, "PublishDown resolved")

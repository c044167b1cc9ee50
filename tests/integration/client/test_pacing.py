"""The SDK paces itself from the rate-limit headers against the real edge: threads sharing a
client make twice the bucket's calls and meet no 429, in about the minute the bucket allows;
`storypost draft bulk` of 50 rows sent into a nearly empty bucket meets none either (the
edge's own metrics count them) and still takes the time the bucket needs."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from storypost.testing.stack import StackHandle
from tests.integration.client.conftest import Storypost, sync_client
from tests.integration.client.test_bulk import TEMPLATE, env_of, write_csv
from tests.support.api import Api, Org, only_in_passes

# The stack's bucket: 60 requests, one back a second (account-svc's default).
BUCKET = 60


@pytest.fixture(autouse=True)
def processes_pass_only(request: pytest.FixtureRequest) -> None:
    only_in_passes(
        request,
        "processes",
        why="the SDK's pacing and the edge's bucket are the same code in every pass, and "
        "each run takes the minute the bucket allows",
    )


async def edge_429s(stack: StackHandle) -> float:
    """429 answers every edge replica gave so far (all routes, all organizations)."""
    total = 0.0
    async with httpx.AsyncClient(timeout=10, trust_env=False) as http:
        for url in stack.metrics_urls("edge"):
            for metric in text_string_to_metric_families((await http.get(url)).text):
                total += sum(
                    sample.value
                    for sample in metric.samples
                    if sample.name == "storypost_edge_requests_total"
                    and sample.labels["status"] == "429"
                )
    return total


# A minute of calls by design: `make reliability` (the bulk test below runs in every make test).
@pytest.mark.reliability_long
def test_threads_sharing_a_client_meet_no_429_in_the_minute_the_bucket_allows(
    fresh_org: Org,
) -> None:
    statuses: list[int] = []
    hooks = {"response": [lambda response: statuses.append(response.status_code)]}
    calls = 2 * BUCKET
    with (
        sync_client(fresh_org, http_client=httpx.Client(event_hooks=hooks)) as client,
        ThreadPoolExecutor(max_workers=8) as pool,
    ):
        started = time.monotonic()
        answers = list(pool.map(lambda _: client.generate_uuid(), range(calls)))
        took = time.monotonic() - started
    assert len({answer["uuid"] for answer in answers}) == calls
    assert statuses.count(429) == 0
    assert len(statuses) == calls
    # 60 at once, then one a second: 60 s (the first second's refill is the slack).
    assert BUCKET - 5 <= took <= BUCKET + 20


async def test_draft_bulk_into_a_nearly_empty_bucket_meets_no_429(
    storypost: Storypost,
    storypost_stack: StackHandle,
    api: Api,
    fresh_org: Org,
    tmp_path: Path,
    process_pass_only: None,
) -> None:
    # Another client spends the bucket down to a few requests: the command's first calls
    # (sent before any answer told it the bucket) still find room, then it must pace.
    left = BUCKET
    while left > 6:
        answer = await api.call(fresh_org, "generate-uuid", {})
        left = int(answer.headers["ratelimit-remaining"])
    before = await edge_429s(storypost_stack)
    template = tmp_path / "page.html"
    template.write_text(TEMPLATE)
    rows = 50
    data = write_csv(tmp_path / "rows.csv", rows)
    command = (
        "draft", "bulk", "--template", str(template), "--data", str(data),
        "--folder", "Pacing", "--no-preview", "--progress", "plain", "--json",
    )  # fmt: skip
    started = time.monotonic()
    ran = await storypost(*command, env=env_of(fresh_org))
    took = time.monotonic() - started
    assert ran.code in (0, 10), ran.err
    assert await edge_429s(storypost_stack) == before
    assert sum(ran.json()["counts"].values()) == rows
    # 50 calls with ~6 requests (and a refill a second) in the bucket: at least ~40 s.
    assert took >= rows - left - 8

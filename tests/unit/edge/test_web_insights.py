"""The insights pages with fake backends: a post's readings and an account's days, each with
its chart data in a `data-` attribute (no inline script: the CSP is the pages' usual one),
Chart.js served from the app's own origin, refresh and its refusal."""

from __future__ import annotations

import html
import json
import re
from dataclasses import dataclass, field
from typing import Any

import falcon
import falcon.testing
import pytest
from google.protobuf.timestamp_pb2 import Timestamp

from edge.web.session import csrf_for
from edge.web.views import PAGE_CSP
from storypost.publish.v1 import insights_pb2 as ipb
from storypost.publish.v1 import publish_pb2
from storypost_runtime.errors import NotFound, ResourceExhausted
from tests.support.rpc import rpc_error
from tests.unit.edge.test_web_pages import (
    ORG,
    TOKEN,
    FakeAccounts,
    FakePublish,
    FakeRender,
    FakeWebhooks,
    app_client,
    session_cookie,
)

UUID = "0d0c9a38-44c4-4c2b-9bd2-7b1f3c2e8a51"


def stamp(seconds: int) -> Timestamp:
    return Timestamp(seconds=seconds)


@dataclass
class FakeInsights:
    refreshed: list[str] = field(default_factory=list)
    refusal: Exception | None = None
    days: list[ipb.ListAccountInsightsRequest] = field(default_factory=list)

    def GetPostInsights(self, request: ipb.GetPostInsightsRequest, **_: Any) -> ipb.PostInsights:
        if request.post_uuid != UUID or request.organization_id != ORG:
            raise rpc_error(NotFound("story post not found"))
        if request.refresh:
            if self.refusal is not None:
                raise self.refusal
            self.refreshed.append(request.post_uuid)
        first = {"impressions": 188, "reach": 131}
        latest = {"impressions": 1304, "reach": 912}
        return ipb.PostInsights(
            kind=request.kind,
            post_uuid=UUID,
            collected_at=stamp(1_795_000_000),
            metrics=latest,
            history=[
                ipb.InsightPoint(collected_at=stamp(1_794_978_400), metrics=first),
                ipb.InsightPoint(collected_at=stamp(1_795_000_000), metrics=latest),
            ],
            state=ipb.COLLECTION_STATE_COLLECTING,
            next_collection_at=stamp(1_795_060_000),
        )

    def ListAccountInsights(
        self, request: ipb.ListAccountInsightsRequest, **_: Any
    ) -> ipb.ListAccountInsightsResponse:
        self.days.append(request)
        return ipb.ListAccountInsightsResponse(
            days=[
                ipb.AccountInsightsDay(day="2026-11-23", metrics={"followers": 8214, "views": 40}),
                ipb.AccountInsightsDay(day="2026-11-24", metrics={"followers": 8231}),
            ]
        )


@dataclass
class World:
    client: falcon.testing.TestClient
    insights: FakeInsights


@pytest.fixture
def world() -> World:
    insights = FakeInsights()
    client = app_client(
        FakeAccounts(),
        render=FakeRender(),
        publish=FakePublish(),
        webhooks=FakeWebhooks(),
        insights=insights,
    )
    return World(client, insights)


def chart_of(page: str) -> dict[str, Any]:
    found = re.search(r'data-chart="([^"]*)"', page)
    assert found is not None
    data: dict[str, Any] = json.loads(html.unescape(found.group(1)))
    return data


def test_a_posts_insights_page_shows_each_reading_and_a_chart(world: World) -> None:
    page = world.client.simulate_get(
        f"/o/{ORG}/posts/story/{UUID}/insights", headers=session_cookie()
    )
    assert page.status_code == 200, page.text
    assert page.headers["content-security-policy"] == PAGE_CSP
    assert "<script>" not in page.text  # the chart's data is an attribute, not a script
    assert re.search(r'src="/static/chart\.umd\.min\.js\?v=\w+"', page.text)
    assert chart_of(page.text) == {
        "labels": ["18 Nov 2026, 05:06 UTC", "18 Nov 2026, 11:06 UTC"],
        "series": {"impressions": [188, 1304], "reach": [131, 912]},
    }
    assert "1304" in page.text and "collecting" in page.text
    chart = world.client.simulate_get("/static/chart.umd.min.js")
    assert chart.status_code == 200 and b"Chart.js v4" in chart.content[:200]
    assert world.client.simulate_get("/static/insights.js").status_code == 200


def test_an_accounts_page_shows_its_days(world: World) -> None:
    page = world.client.simulate_get(
        f"/o/{ORG}/accounts/sa_1/insights", query_string="days=7", headers=session_cookie()
    )
    assert page.status_code == 200, page.text
    assert "@sunny.pages" in page.text
    [asked] = world.insights.days
    assert asked.social_account_id == "sa_1" and asked.organization_id == ORG
    assert asked.from_day < asked.to_day
    assert chart_of(page.text) == {
        "labels": ["2026-11-23", "2026-11-24"],
        "series": {"followers": [8214, 8231], "views": [40, None]},
    }


def test_refresh_reads_again_and_a_refusal_is_shown(world: World) -> None:
    path = f"/o/{ORG}/posts/story/{UUID}/insights"
    headers = {
        "Content-Type": "application/x-www-form-urlencoded",
        "Cookie": f"storypost_session={TOKEN}",
    }
    body = f"action=refresh&csrf={csrf_for(TOKEN)}"
    answer = world.client.simulate_post(path, body=body, headers=headers)
    assert answer.status_code == 303 and answer.headers["location"] == path
    assert world.insights.refreshed == [UUID]
    world.insights.refusal = rpc_error(
        ResourceExhausted("the platform cannot be read now", retry_after_seconds=60)
    )
    refused = world.client.simulate_post(path, body=body, headers=headers)
    assert refused.status_code == 303
    forged = world.client.simulate_post(path, body="action=refresh&csrf=x", headers=headers)
    assert forged.status_code == 403


def test_another_organizations_post_is_not_found(world: World) -> None:
    other = "ffffffff-44c4-4c2b-9bd2-7b1f3c2e8a51"
    page = world.client.simulate_get(
        f"/o/{ORG}/posts/story/{other}/insights", headers=session_cookie()
    )
    assert page.status_code in (400, 404)
    unknown = world.client.simulate_get(
        f"/o/{ORG}/posts/tweet/{UUID}/insights", headers=session_cookie()
    )
    assert unknown.status_code == 404
    assert publish_pb2.POST_KIND_STORY  # the kinds of the page are publish-svc's

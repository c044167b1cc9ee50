"""Insights: a published post's figures at each reading, an account's figures per day, each
with a chart (Chart.js, served from the app's own origin; the data travels in a `data-`
attribute, so the CSP needs no inline script)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import falcon
import grpc

from edge.web.base import Page, field
from edge.web.failures import PageError, page_errors
from edge.web.item_page import Ids, ItemFormPage, ItemPage
from edge.web.pages.posts import KINDS
from edge.web.session import Viewer
from edge.web.views import format_when
from storypost.account.v1 import account_pb2
from storypost.publish.v1 import insights_pb2 as ipb
from storypost.publish.v1 import insights_pb2_grpc

STATE_TEXT = {
    ipb.COLLECTION_STATE_COLLECTING: "collecting",
    ipb.COLLECTION_STATE_DONE: "done",
    ipb.COLLECTION_STATE_STOPPED: "stopped",
}
# Days an account's page shows by default, and at most.
DAYS, MAX_DAYS = 30, 366


def metric_names(rows: list[dict[str, int]]) -> list[str]:
    """Every metric of the rows, in the order first seen (followers first)."""
    names: list[str] = []
    for row in rows:
        names += [name for name in row if name not in names]
    return sorted(names, key=lambda name: (name != "followers", names.index(name)))


def chart_data(labels: list[str], rows: list[dict[str, int]], names: list[str]) -> str:
    """The chart's JSON (insights.js): one series per metric."""
    series = {name: [row.get(name) for row in rows] for name in names}
    return json.dumps({"labels": labels, "series": series}, separators=(",", ":"))


class InsightsPages(Page):
    """Base of the insights pages: publish-svc's InsightsService."""

    @property
    def insights(self) -> insights_pb2_grpc.InsightsServiceStub:
        stub = self.web.insights
        if stub is None:
            raise PageError(503, "Insights are not available right now.")
        return stub


class PostInsightsPage(InsightsPages, ItemFormPage):
    label = "post-insights"

    def get(self, req: falcon.Request, resp: falcon.Response, viewer: Viewer, ids: Ids) -> None:
        organization_id, kind, post_uuid = viewer.organization_id, ids["kind"], ids["post_uuid"]
        if kind not in KINDS:
            raise PageError(404, "This post was not found.")
        with page_errors("This post"):
            found = self.insights.GetPostInsights(
                ipb.GetPostInsightsRequest(
                    organization_id=organization_id, kind=KINDS[kind], post_uuid=post_uuid
                )
            )
        rows = [dict(point.metrics) for point in found.history]
        names = metric_names(rows)
        self.show(
            req,
            resp,
            viewer,
            "post_insights.html",
            active="posts",
            title="Post insights",
            kind=kind,
            found=found,
            state=STATE_TEXT.get(found.state, "collecting"),
            names=names,
            latest=dict(found.metrics),
            points=list(zip(found.history, rows, strict=True)),
            chart=chart_data(
                [format_when(p.collected_at, zone=viewer.zone) for p in found.history],
                rows,
                names,
            ),
        )

    def post(self, req: falcon.Request, resp: falcon.Response, viewer: Viewer, ids: Ids) -> None:
        kind, post_uuid = ids["kind"], ids["post_uuid"]
        form = self.form(req, viewer)
        if field(form, "action") != "refresh" or kind not in KINDS:
            raise PageError(400, "Unknown action.")
        request = ipb.GetPostInsightsRequest(
            organization_id=viewer.organization_id,
            kind=KINDS[kind],
            post_uuid=post_uuid,
            refresh=True,
        )
        self.answered(
            resp,
            viewer,
            f"/posts/{kind}/{post_uuid}/insights",
            lambda: self.insights.GetPostInsights(request),
            "The figures were read again.",
            what="This post",
            shown=(400, 429),
        )


class AccountInsightsPage(InsightsPages, ItemPage):
    label = "account-insights"

    def get(self, req: falcon.Request, resp: falcon.Response, viewer: Viewer, ids: Ids) -> None:
        organization_id, social_account_id = viewer.organization_id, ids["social_account_id"]
        try:
            days = min(MAX_DAYS, max(1, int(req.get_param("days") or DAYS)))
        except ValueError:
            days = DAYS
        last = datetime.now(UTC).astimezone(viewer.zone).date()
        first = last - timedelta(days=days - 1)
        with page_errors("This account"):
            listed = self.insights.ListAccountInsights(
                ipb.ListAccountInsightsRequest(
                    organization_id=organization_id,
                    social_account_id=social_account_id,
                    from_day=first.isoformat(),
                    to_day=last.isoformat(),
                )
            )
        rows = [dict(day.metrics) for day in listed.days]
        names = metric_names(rows)
        account: Any = next(
            (
                a
                for a in self._accounts(organization_id)
                if a.social_account_id == social_account_id
            ),
            None,
        )
        self.show(
            req,
            resp,
            viewer,
            "account_insights.html",
            active="accounts",
            title="Account insights",
            account=account,
            social_account_id=social_account_id,
            days=days,
            first=first.isoformat(),
            last=last.isoformat(),
            names=names,
            rows=list(zip([d.day for d in listed.days], rows, strict=True)),
            chart=chart_data([d.day for d in listed.days], rows, names),
        )

    def _accounts(self, organization_id: str) -> list[Any]:
        try:
            return list(
                self.web.accounts.ListConnectedAccounts(
                    account_pb2.ListConnectedAccountsRequest(organization_id=organization_id)
                ).accounts
            )
        except grpc.RpcError:
            return []

"""Calendar: every post of the workspace (all kinds) on the days of a week or a month, in the
user's time zone, with status colours, thumbnails and the account; each one links to its
draft (a story scheduled in the editor) or to its own page."""

from __future__ import annotations

from collections import defaultdict
from datetime import UTC, date, datetime
from typing import Any

import falcon
import grpc

from edge.web.base import Page
from edge.web.calendar_span import VIEWS, Span, parse_day, span
from edge.web.draft_posts import drafts_of_stories
from edge.web.failures import PageError, page_errors
from edge.web.pages.posts import (
    account_names,
    busy,
    credit_balance,
    post_row,
    story_previews,
)
from edge.web.session import Viewer
from edge.web.views import as_datetime
from storypost.publish.v1 import publish_pb2 as pb
from storypost_runtime.protobuf import timestamp

# Posts asked for per ListPosts call (its most); a busier period takes several calls.
PERIOD_PAGE = 500


def when_of(post: pb.Post) -> datetime:
    """Its due date (a post made for "now" without one: when it was made)."""
    return as_datetime(post.date) or as_datetime(post.created_at) or datetime.now(UTC)


class CalendarPage(Page):
    label = "calendar"

    def on_get(self, req: falcon.Request, resp: falcon.Response, organization_id: str) -> None:
        viewer = self.begin(req, organization_id)
        view = req.get_param("view") or "week"
        today = datetime.now(viewer.zone).date()
        focus = parse_day(req.get_param("date") or "", today)
        if view not in VIEWS or focus is None:
            raise PageError(404, "That calendar page does not exist.")
        shown = span("month" if view == "month" else "week", focus)
        start, end = shown.bounds(viewer.zone)
        with page_errors():
            listed = self._period(organization_id, start, end)
        posts = sorted(listed, key=when_of)
        previews = story_previews(self.web, organization_id, posts)
        self.show(
            req,
            resp,
            viewer,
            "calendar.html",
            active="calendar",
            title=f"Calendar · {shown.title}",
            span=shown,
            today=today,
            days=self._days(viewer, shown, posts, previews),
            count=len(posts),
            credits=credit_balance(self.web, organization_id),
            refresh=5 if busy(posts, previews) else 0,
        )

    def _period(self, organization_id: str, start: datetime, end: datetime) -> list[pb.Post]:
        """Every post placed in [start, end), a page of ListPosts at a time."""
        found: list[pb.Post] = []
        token = ""
        while True:
            answer = self.web.publish.ListPosts(
                pb.ListPostsRequest(
                    organization_id=organization_id,
                    limit=PERIOD_PAGE,
                    date_from=timestamp(start),
                    date_to=timestamp(end),
                    page_token=token,
                )
            )
            found.extend(answer.posts)
            token = answer.next_page_token
            if not token:
                return found

    def _days(
        self, viewer: Viewer, shown: Span, posts: list[pb.Post], previews: dict[str, str]
    ) -> list[dict[str, Any]]:
        org = viewer.organization_id
        stories = {p.post_uuid for p in posts if p.kind == pb.POST_KIND_STORY}
        try:
            drafts = drafts_of_stories(self.web.render, org, stories, self.web.app_url(org))
        except grpc.RpcError:
            drafts = {}  # the calendar still shows the posts, linked to their own pages
        social = any(p.kind == pb.POST_KIND_SOCIAL for p in posts)
        names = account_names(self.web, org) if social else {}
        by_day: dict[date, list[dict[str, Any]]] = defaultdict(list)
        for post in posts:
            local = when_of(post).astimezone(viewer.zone)
            row = post_row(post, previews.get(post.post_uuid, ""), names)
            draft = drafts.get(post.post_uuid)
            row["time"] = f"{local:%H:%M}"
            row["draft"] = draft.name if draft else ""
            row["href"] = (
                f"/drafts/{draft.draft_uuid}"
                if draft
                else f"/posts/{row['kind_key']}/{post.post_uuid}"
            )
            by_day[local.date()].append(row)
        return [
            {"day": day, "posts": by_day.get(day, []), "in_focus": shown.in_focus(day)}
            for day in shown.days
        ]

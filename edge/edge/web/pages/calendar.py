"""Calendar: every post of the workspace (all kinds) on the days of a week or a month, in the
user's time zone, with status colours, thumbnails and the account; each one links to its
draft (a story scheduled in the editor) or to its own page. The week view shows each queue's
free slots; a scheduled post moves to another day and time (`reschedule-post`) with its
"Move" form, or by dragging it onto a day or a free slot (app.js fills in that form)."""

from __future__ import annotations

from collections import defaultdict
from datetime import UTC, date, datetime
from typing import Any
from urllib.parse import urlencode

import falcon
import grpc

from edge.web.base import Page, field
from edge.web.calendar_span import VIEWS, Span, parse_day, span
from edge.web.draft_posts import drafts_of_stories
from edge.web.failures import PageError, page_errors, refusal
from edge.web.pages.editor import parse_date
from edge.web.pages.posts import (
    KINDS,
    busy,
    credit_balance,
    kind_label,
    post_row,
    story_previews,
)
from edge.web.queue_slots import FreeSlot, connected_accounts, free_slots
from edge.web.session import Viewer
from edge.web.views import as_datetime, format_when
from storypost.account.v1 import account_pb2 as apb
from storypost.publish.v1 import publish_pb2 as pb
from storypost_runtime.protobuf import timestamp

# Posts asked for per ListPosts call (its most); a busier period takes several calls.
PERIOD_PAGE = 500
# A datetime-local input's value: the minute, in the user's zone.
LOCAL_MINUTE = "%Y-%m-%dT%H:%M"


def when_of(post: pb.Post) -> datetime:
    """Its due date (a post made for "now" without one: when it was made)."""
    return as_datetime(post.date) or as_datetime(post.created_at) or datetime.now(UTC)


def calendar_path(view: str, focus: str) -> str:
    """A calendar page: the form's view and day (when they are ones)."""
    query: dict[str, str] = {"view": view if view in VIEWS else "week"}
    if focus and parse_day(focus, date.today()) is not None:
        query["date"] = focus
    return f"/calendar?{urlencode(query)}"


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
        accounts = self._accounts(organization_id)
        slots = self._free(organization_id, accounts, start, end) if view == "week" else []
        days = self._days(viewer, shown, posts, previews, accounts, slots)
        self.show(
            req,
            resp,
            viewer,
            "calendar.html",
            active="calendar",
            title=f"Calendar · {shown.title}",
            span=shown,
            today=today,
            days=days,
            count=len(posts),
            slot_count=len(slots),
            movable=any(row["movable"] for d in days for row in d["posts"]),
            credits=credit_balance(self.web, organization_id),
            refresh=5 if busy(posts, previews) else 0,
        )

    def on_post(self, req: falcon.Request, resp: falcon.Response, organization_id: str) -> None:
        """`move`: a scheduled post to the form's `to` (a minute in the user's zone), taking
        that slot of the queue `queue` when it was dropped on one of its account's slots;
        `cancel-series`: every post of a series not yet started, and the series stops."""
        viewer = self.begin(req, organization_id)
        form = self.form(req, viewer)
        back = calendar_path(field(form, "view"), field(form, "date"))
        action = field(form, "action")
        if action == "cancel-series":
            self._cancel_series(resp, viewer, back, field(form, "series_uuid"))
            return
        if action != "move":
            raise PageError(400, "Unknown action.")
        kind = KINDS.get(field(form, "kind"))
        if kind is None:
            raise PageError(400, "That post does not exist.")
        try:
            moment = parse_date(field(form, "to"), datetime.now(UTC), viewer.zone)
        except PageError as failure:
            self.done(resp, viewer, back, failure.message, "error")
            return
        try:
            moved = self.web.publish.ReschedulePost(
                pb.ReschedulePostRequest(
                    organization_id=organization_id,
                    kind=kind,
                    post_uuid=field(form, "uuid"),
                    date=moment,
                    # Dropped on a free slot of its account's queue: it takes that slot.
                    queue_name=field(form, "queue"),
                )
            )
        except grpc.RpcError as error:
            message = refusal(error, what="This post", shown=(400, 404)).message
            self.done(resp, viewer, back, message, "error")
            return
        when = format_when(moved.date, zone=viewer.zone)
        there = calendar_path(
            field(form, "view"), f"{when_of(moved).astimezone(viewer.zone):%Y-%m-%d}"
        )
        self.done(resp, viewer, there, f"The {kind_label(moved).lower()} was moved to {when}.")

    def _cancel_series(
        self, resp: falcon.Response, viewer: Viewer, back: str, series_uuid: str
    ) -> None:
        try:
            series = self.web.publish.CancelSeries(
                pb.SeriesRef(organization_id=viewer.organization_id, series_uuid=series_uuid)
            )
        except grpc.RpcError as error:
            self.refused(resp, viewer, back, error, what="This series", shown=(400, 404))
            return
        kept = sum(1 for o in series.occurrences if o.status == pb.POST_STATUS_EXECUTED)
        text = "The series was canceled: no more posts of it will be made or published."
        if kept:
            text += f" {kept} already published {'is' if kept == 1 else 'are'} kept."
        self.done(resp, viewer, back, text)

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

    def _accounts(self, organization_id: str) -> dict[str, apb.ConnectedAccount]:
        """The workspace's accounts by id; none (ids shown, no slots) when account-svc
        cannot say now."""
        try:
            listed = connected_accounts(self.web.accounts, organization_id)
        except grpc.RpcError:
            return {}
        return {a.social_account_id: a for a in listed}

    def _free(
        self,
        organization_id: str,
        accounts: dict[str, apb.ConnectedAccount],
        start: datetime,
        end: datetime,
    ) -> list[FreeSlot]:
        """The queues' free slots in the week; none for a week that is over, or when
        publish-svc cannot say now (the posts still show)."""
        if not accounts or end <= datetime.now(UTC):
            return []
        try:
            return free_slots(self.web.publish, accounts, organization_id, start, end)
        except grpc.RpcError:
            return []

    def _days(
        self,
        viewer: Viewer,
        shown: Span,
        posts: list[pb.Post],
        previews: dict[str, str],
        accounts: dict[str, apb.ConnectedAccount],
        slots: list[FreeSlot],
    ) -> list[dict[str, Any]]:
        org = viewer.organization_id
        stories = {p.post_uuid for p in posts if p.kind == pb.POST_KIND_STORY}
        try:
            drafts = drafts_of_stories(self.web.render, org, stories, self.web.app_url(org))
        except grpc.RpcError:
            drafts = {}  # the calendar still shows the posts, linked to their own pages
        names = {key: a.username for key, a in accounts.items() if a.username}
        by_day: dict[date, list[dict[str, Any]]] = defaultdict(list)
        for post in posts:
            local = when_of(post).astimezone(viewer.zone)
            row = post_row(post, previews.get(post.post_uuid, ""), names)
            draft = drafts.get(post.post_uuid)
            row["time"] = f"{local:%H:%M}"
            row["local"] = f"{local:{LOCAL_MINUTE}}"
            row["movable"] = post.status == pb.POST_STATUS_SCHEDULED
            row["series"] = post.series_uuid
            row["draft"] = draft.name if draft else ""
            row["href"] = (
                f"/drafts/{draft.draft_uuid}"
                if draft
                else f"/posts/{row['kind_key']}/{post.post_uuid}"
            )
            by_day[local.date()].append(row)
        # A post dropped on a slot takes it (the move form's `queue`); one moved there by its
        # date alone (the Move form, another account's slot) does not: shown as used anyway.
        used = {
            (post.connected_account_id, when_of(post))
            for post in posts
            if post.status not in (pb.POST_STATUS_CANCELED, pb.POST_STATUS_FAILED)
        }
        free: dict[date, list[dict[str, Any]]] = defaultdict(list)
        for slot in slots:
            if (slot.social_account_id, slot.at) in used:
                continue
            local = slot.at.astimezone(viewer.zone)
            free[local.date()].append(
                {"slot": slot, "time": f"{local:%H:%M}", "local": f"{local:{LOCAL_MINUTE}}"}
            )
        return [
            {
                "day": day,
                "posts": by_day.get(day, []),
                "slots": free.get(day, []),
                "in_focus": shown.in_focus(day),
            }
            for day in shown.days
        ]

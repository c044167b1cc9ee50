"""The workspace's posting plan as an iCalendar feed, at a secret and revocable URL
(`/calendar/<token>.ics`; made and revoked in the app's calendar page): any calendar app shows
the posts, each event linking to the post in the app. Built with the `icalendar` package.

The URL is the authorization (as a connect link is): its token has 256 random bits and is
stored only as a hash by account-svc; an unknown or revoked token is 404 alike.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import KW_ONLY
from datetime import UTC, datetime, timedelta

import falcon
import grpc
from icalendar import Calendar, Event

from edge.config import EdgeSettings
from edge.procedures.posts import POST_STATUSES
from edge.web.base import Web
from edge.web.pages.posts import KIND_KEY, kind_label
from storypost.account.v1 import account_pb2 as apb
from storypost.account.v1 import account_pb2_grpc
from storypost.publish.v1 import publish_pb2 as pb
from storypost.publish.v1 import publish_pb2_grpc
from storypost_runtime.component import component
from storypost_runtime.logs import get_logger
from storypost_runtime.protobuf import timestamp, to_datetime

log = get_logger(__name__)

ROUTE = "/calendar/{token}"
# What the feed spans: a month back (what went out) to a year ahead (the plan).
BACK = timedelta(days=31)
AHEAD = timedelta(days=366)
# Posts in one feed at most (newest dates first, so the plan is what is cut last).
MOST_POSTS = 2000
PAGE = 500
# A post is an event of this length (calendar apps need one to draw it).
EVENT_LENGTH = timedelta(minutes=15)
# How often calendar apps that read it should ask again.
REFRESH = timedelta(minutes=15)


def feed_url(settings: EdgeSettings, token: str) -> str:
    """The URL a calendar app subscribes to."""
    return f"{settings.public_url.rstrip('/')}/calendar/{token}.ics"


@component
class CalendarFeedResource:
    _: KW_ONLY
    accounts: account_pb2_grpc.AccountServiceStub
    publish: publish_pb2_grpc.PublishServiceStub
    settings: EdgeSettings

    def on_get(self, req: falcon.Request, resp: falcon.Response, token: str) -> None:
        req.context.procedure = "calendar-feed"
        # Nothing of the URL goes elsewhere: the token is the secret.
        resp.set_header("Referrer-Policy", "no-referrer")
        resp.set_header("Cache-Control", "private, max-age=300")
        try:
            feed = self.accounts.ResolveCalendarFeed(
                apb.ResolveCalendarFeedRequest(token=token.removesuffix(".ics"))
            )
        except grpc.RpcError as error:
            if error.code() == grpc.StatusCode.NOT_FOUND:
                raise falcon.HTTPNotFound(description="no such calendar feed") from None
            raise
        req.context.organization_id = feed.organization_id
        now = datetime.now(UTC)
        calendar = self._calendar(feed, self._posts(feed.organization_id, now), now)
        resp.content_type = "text/calendar; charset=utf-8"
        resp.data = calendar.to_ical()

    def _posts(self, organization_id: str, now: datetime) -> Iterator[pb.Post]:
        request = pb.ListPostsRequest(
            organization_id=organization_id,
            limit=PAGE,
            date_from=timestamp(now - BACK),
            date_to=timestamp(now + AHEAD),
        )
        listed = 0
        while listed < MOST_POSTS:
            page = self.publish.ListPosts(request)
            for post in page.posts:
                listed += 1
                yield post
            if not page.next_page_token:
                return
            request.page_token = page.next_page_token

    def _calendar(
        self, feed: apb.CalendarFeed, posts: Iterator[pb.Post], now: datetime
    ) -> Calendar:
        calendar = Calendar()
        calendar.add("prodid", "-//storypost//posting plan//EN")
        calendar.add("version", "2.0")
        calendar.add("calscale", "GREGORIAN")
        calendar.add("x-wr-calname", f"storypost · {feed.name}")
        calendar.add("refresh-interval", REFRESH, parameters={"VALUE": "DURATION"})
        calendar.add("x-published-ttl", REFRESH)
        app = f"{self.settings.public_url.rstrip('/')}/o/{feed.organization_id}"
        for post in posts:
            if post.HasField("date"):
                calendar.add_component(self._event(post, app, now))
        return calendar

    @staticmethod
    def _event(post: pb.Post, app: str, now: datetime) -> Event:
        kind = KIND_KEY.get(post.kind, "post")
        status = POST_STATUSES.word.get(post.status, "")
        start = to_datetime(post.date)
        event = Event()
        # Stable across reads, so calendar apps update an event instead of adding another.
        event.add("uid", f"{kind}-{post.post_uuid}@storypost")
        event.add("dtstamp", now)
        event.add("dtstart", start)
        event.add("dtend", start + EVENT_LENGTH)
        who = f" to {post.account}" if post.account else ""
        event.add("summary", f"{kind_label(post)}{who} ({status})")
        event.add("url", f"{app}/posts/{kind}/{post.post_uuid}")
        lines = [f"Status: {status}"]
        if post.error_message:
            lines.append(f"Error: {post.error_message}")
        if post.permalink:
            lines.append(f"Published: {post.permalink}")
        lines.append(f"Open in storypost: {app}/posts/{kind}/{post.post_uuid}")
        event.add("description", "\n".join(lines))
        event.add("status", "CANCELLED" if post.status == pb.POST_STATUS_CANCELED else "CONFIRMED")
        return event


def of(web: Web) -> CalendarFeedResource:
    """The feed on the app's collaborators."""
    return CalendarFeedResource(accounts=web.accounts, publish=web.publish, settings=web.settings)

"""Calendar → feeds: the workspace's posting plan as an iCalendar feed at a secret URL (made
here, shown once, revoked here; edge/routes/calendar_feed.py serves it)."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

import falcon

from edge.web.action_page import Action, ActionPage
from edge.web.base import Form, field
from edge.web.calendar_feed import feed_url
from edge.web.failures import page_errors
from edge.web.session import Viewer
from storypost.account.v1 import account_pb2 as pb

NAME_MAX = 100
# Below /o/<org>: a page of the calendar's, not of the navigation.
PATH = "/calendar/feeds"


class CalendarFeedsPage(ActionPage):
    label = "calendar-feeds"
    template = "calendar_feeds.html"
    title = "Calendar feeds"
    blank_form = MappingProxyType({"created": None, "url": "", "error": "", "name": ""})

    @property
    def path(self) -> str:
        return PATH

    def listing(self, viewer: Viewer) -> dict[str, Any]:
        found = self.web.accounts.ListCalendarFeeds(
            pb.ListCalendarFeedsRequest(organization_id=viewer.organization_id)
        )
        return {"feeds": [f for f in found.feeds if not f.HasField("revoked_at")]}

    def actions(self) -> Mapping[str, Action]:
        return {"create": self._create, "revoke": self._revoke}

    def _create(
        self, req: falcon.Request, resp: falcon.Response, viewer: Viewer, form: Form
    ) -> None:
        name = self.entered_name(req, resp, viewer, form, blank="Calendar", most=NAME_MAX)
        if name is None:
            return
        request = pb.CreateCalendarFeedRequest(organization_id=viewer.organization_id, name=name)
        created = self.asked(
            req, resp, viewer, lambda: self.web.accounts.CreateCalendarFeed(request), name=name
        )
        if created is None:
            return
        # As a new API token: answered here (no-store), never in a cookie or a redirect.
        url = feed_url(self.web.settings, created.token)
        self.show_page(req, resp, viewer, status=201, created=created.feed, url=url)

    def _revoke(
        self, req: falcon.Request, resp: falcon.Response, viewer: Viewer, form: Form
    ) -> None:
        with page_errors("This calendar feed"):
            revoked = self.web.accounts.RevokeCalendarFeed(
                pb.RevokeCalendarFeedRequest(
                    organization_id=viewer.organization_id, feed_id=field(form, "feed_id")
                )
            )
        self.done(
            resp, viewer, self.path, f"Feed “{revoked.name}” was revoked; its URL shows nothing."
        )

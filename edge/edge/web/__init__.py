"""The app: server-rendered pages for workspace users (sign-in, settings, accounts, gallery,
editor, calendar, posts, users), served by the edge. See docs/app.md."""

from __future__ import annotations

from typing import Any

import falcon

from edge.backends import Backends
from edge.config import EdgeSettings
from edge.web import calendar_feed
from edge.web.base import Web
from edge.web.failures import PageError
from edge.web.pages.accounts import AccountsPage, ConnectCallbackPage
from edge.web.pages.auth import Home, Root, SignInPage, SignOut, WorkspacePicker
from edge.web.pages.calendar import CalendarPage
from edge.web.pages.calendar_feeds import PATH as FEEDS_PATH
from edge.web.pages.calendar_feeds import CalendarFeedsPage
from edge.web.pages.credentials import CredentialsPage
from edge.web.pages.editor import DraftStatus, EditorPage
from edge.web.pages.gallery import GalleryPage
from edge.web.pages.insights import AccountInsightsPage, PostInsightsPage
from edge.web.pages.posts import PostPage, PostsPage
from edge.web.pages.queues import QueuesPage
from edge.web.pages.users import ProfilePage, UsersPage
from edge.web.pages.webhooks import WebhooksPage
from edge.web.static_files import STATIC_ROUTE, StaticFiles
from edge.web.views import Views

ORG = "/o/{organization_id}"


def _page_error(web: Web) -> Any:
    def handle(req: falcon.Request, resp: falcon.Response, error: PageError, _p: Any) -> None:
        organization_id = getattr(req.context, "organization_id", None) or ""
        if error.retry_after:
            resp.set_header("Retry-After", str(error.retry_after))
        web.views.render(
            resp,
            "error.html",
            {
                "title": error.title,
                "message": error.message,
                "home": f"/o/{organization_id}" if organization_id else "",
            },
            status=error.status,
        )

    return handle


def add_routes(app: falcon.App, backends: Backends, settings: EdgeSettings) -> None:
    static = StaticFiles()
    mount(app, Web.build(backends, settings, Views(static.url)), static)


def mount(app: falcon.App, web: Web, static: StaticFiles) -> None:
    """The pages on `web`'s collaborators (tests pass fakes)."""
    app.add_error_handler(PageError, _page_error(web))
    app.add_route(STATIC_ROUTE, static)
    app.add_route("/", Root())
    app.add_route("/signin", WorkspacePicker(web))
    app.add_route(ORG, Home(web))
    app.add_route(f"{ORG}/signin", SignInPage(web))
    app.add_route(f"{ORG}/signout", SignOut(web))
    app.add_route(f"{ORG}/gallery", GalleryPage(web))
    app.add_route(f"{ORG}/drafts/{{draft_uuid}}", EditorPage(web))
    app.add_route(f"{ORG}/drafts/{{draft_uuid}}/status", DraftStatus(web))
    app.add_route(f"{ORG}/calendar", CalendarPage(web))
    app.add_route(f"{ORG}{FEEDS_PATH}", CalendarFeedsPage(web))
    app.add_route(calendar_feed.ROUTE, calendar_feed.of(web))
    app.add_route(f"{ORG}/posts", PostsPage(web))
    app.add_route(f"{ORG}/posts/{{kind}}/{{post_uuid}}", PostPage(web))
    app.add_route(f"{ORG}/posts/{{kind}}/{{post_uuid}}/insights", PostInsightsPage(web))
    app.add_route(f"{ORG}/accounts", AccountsPage(web))
    app.add_route(f"{ORG}/accounts/callback", ConnectCallbackPage(web))
    app.add_route(f"{ORG}/accounts/{{social_account_id}}/insights", AccountInsightsPage(web))
    app.add_route(f"{ORG}/accounts/{{social_account_id}}/queues", QueuesPage(web))
    app.add_route(f"{ORG}/settings", SettingsHome())
    app.add_route(f"{ORG}/settings/credentials", CredentialsPage(web))
    app.add_route(f"{ORG}/settings/webhooks", WebhooksPage(web))
    app.add_route(f"{ORG}/settings/users", UsersPage(web))
    app.add_route(f"{ORG}/settings/profile", ProfilePage(web))


class SettingsHome:
    def on_get(self, req: falcon.Request, resp: falcon.Response, organization_id: str) -> None:
        req.context.procedure = "app:settings"
        raise falcon.HTTPSeeOther(f"/o/{organization_id}/settings/credentials")

"""What every app page shares: the backends, sign-in check, CSRF check, forms and answers."""

from __future__ import annotations

from collections.abc import Callable, Container, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import falcon
import grpc
from falcon.uri import parse_query_string

from edge.backends import Backends
from edge.config import EdgeSettings
from edge.web.failures import PageError, refusal
from edge.web.session import EXPIRED_FORM, Sessions, Viewer, org_path, same_token
from edge.web.views import PAGE_CSP, Views
from storypost.account.v1 import account_pb2 as apb
from storypost.account.v1 import account_pb2_grpc
from storypost.publish.v1 import insights_pb2_grpc, publish_pb2_grpc
from storypost.render.v1 import render_pb2_grpc
from storypost.webhook.v1 import webhook_pb2_grpc
from storypost_runtime.component import component

Form = dict[str, str | list[str]]
# Navigation of the page header: (key, label, path below /o/<org>).
NAV = (
    ("gallery", "Gallery", "/gallery"),
    ("calendar", "Calendar", "/calendar"),
    ("posts", "Posts", "/posts"),
    ("accounts", "Accounts", "/accounts"),
    ("credentials", "API credentials", "/settings/credentials"),
    ("webhooks", "Webhooks", "/settings/webhooks"),
    ("users", "Users", "/settings/users"),
)
NAV_PATHS = {key: path for key, _, path in NAV}


@dataclass(frozen=True)
class Web:
    """The collaborators of the pages, built once by add_routes."""

    settings: EdgeSettings
    views: Views
    sessions: Sessions
    accounts: account_pb2_grpc.AccountServiceStub
    render: render_pb2_grpc.RenderServiceStub
    publish: publish_pb2_grpc.PublishServiceStub
    webhooks: webhook_pb2_grpc.WebhookServiceStub
    # publish-svc's InsightsService (the insights pages); None: those pages answer 503.
    insights: insights_pb2_grpc.InsightsServiceStub | None = None

    @classmethod
    def build(cls, backends: Backends, settings: EdgeSettings, views: Views) -> Web:
        return cls(
            settings=settings,
            views=views,
            sessions=Sessions(backends.account_stub, settings),
            accounts=backends.account_stub,
            render=backends.render_stub,
            publish=backends.publish_stub,
            webhooks=backends.webhook_stub,
            insights=backends.insights_stub,
        )

    def app_url(self, organization_id: str) -> str:
        return self.settings.app_url(organization_id)


def read_form(req: falcon.Request) -> Form:
    """An application/x-www-form-urlencoded body (what every page's form sends)."""
    if req.content_type is None or not req.content_type.startswith(
        "application/x-www-form-urlencoded"
    ):
        raise PageError(400, "This page takes form submissions only.")
    try:
        body = req.bounded_stream.read().decode("ascii")
    except UnicodeDecodeError:
        raise PageError(400, "The form could not be read.") from None
    form: Form = parse_query_string(body, keep_blank=True, csv=False)
    return form


def field(form: Mapping[str, str | list[str]], name: str) -> str:
    value = form.get(name, "")
    return value[0] if isinstance(value, list) else value


def fields(form: Mapping[str, str | list[str]], name: str) -> list[str]:
    value = form.get(name, [])
    return value if isinstance(value, list) else [value]


@component
class Page:
    """Base of the signed-in pages."""

    # The metrics and access-log label ("app:gallery"): one per page, not one per URL.
    label = "app"

    web: Web

    def begin(self, req: falcon.Request, organization_id: str) -> Viewer:
        """The signed-in user; otherwise a redirect to sign-in that comes back here."""
        req.context.procedure = f"app:{self.label}"
        req.context.organization_id = organization_id
        viewer = self.web.sessions.viewer(req, organization_id)
        if viewer is None:
            back = req.relative_uri if req.method == "GET" else org_path(organization_id)
            raise falcon.HTTPSeeOther(
                f"{org_path(organization_id)}/signin?next={quote(back, safe='')}"
            )
        return viewer

    def form(self, req: falcon.Request, viewer: Viewer) -> Form:
        """The posted form, after its CSRF token was checked."""
        form = read_form(req)
        if not same_token(field(form, "csrf"), viewer.csrf):
            raise PageError(403, EXPIRED_FORM)
        return form

    def show(
        self,
        req: falcon.Request,
        resp: falcon.Response,
        viewer: Viewer,
        template: str,
        *,
        active: str,
        title: str,
        status: int = 200,
        csp: str = PAGE_CSP,
        **context: Any,
    ) -> None:
        org = viewer.organization_id
        frame = {
            "viewer": viewer,
            "org": org_path(org),
            "active": active,
            "title": title,
            "nav": NAV,
            "flash": self.web.sessions.take_flash(req, resp, org),
            "refresh": context.pop("refresh", 0),
            "zone": viewer.zone,
            "needs_reconnect": self._needs_reconnect(org),
        }
        self.web.views.render(resp, template, frame | context, status=status, csp=csp)

    def _needs_reconnect(self, organization_id: str) -> list[apb.ConnectedAccount]:
        """The workspace's accounts whose token the platform refused: a banner on every page,
        with a reconnect button, until they are connected again. Without account-svc the page
        still shows (it says what it can)."""
        try:
            listed = self.web.accounts.ListConnectedAccounts(
                apb.ListConnectedAccountsRequest(organization_id=organization_id)
            )
        except grpc.RpcError:
            return []
        return [a for a in listed.accounts if a.disconnected]

    def done(
        self,
        resp: falcon.Response,
        viewer: Viewer,
        path: str,
        text: str,
        kind: str = "ok",
    ) -> None:
        """Post/redirect/get: a one-time message, then the page again (303)."""
        self.web.sessions.flash(resp, viewer.organization_id, kind, text)
        resp.status = 303
        resp.location = org_path(viewer.organization_id) + path

    def refused(
        self,
        resp: falcon.Response,
        viewer: Viewer,
        path: str,
        error: grpc.RpcError,
        *,
        what: str = "",
        shown: Container[int] = (400,),
    ) -> None:
        """A call the service refused with one of the `shown` statuses: its reason as the
        one-time error message of `path` (post/redirect/get). Any other failure is the error
        page."""
        self.done(resp, viewer, path, refusal(error, what=what, shown=shown).message, "error")

    def answered(
        self,
        resp: falcon.Response,
        viewer: Viewer,
        path: str,
        call: Callable[[], object],
        text: str,
        *,
        what: str = "",
        shown: Container[int] = (400,),
    ) -> None:
        """A form's `call`: `text` as the one-time message of `path` once the service
        answered; its refusal as `refused` shows it otherwise."""
        try:
            call()
        except grpc.RpcError as error:
            self.refused(resp, viewer, path, error, what=what, shown=shown)
            return
        self.done(resp, viewer, path, text)

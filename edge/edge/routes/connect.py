"""The connect link pages: no login, the URL is the authorization.

GET /connect/<token> shows the link (404 unknown, 410 used); its button POSTs there, which
starts the platform's OAuth-like flow and redirects to the platform's authorize page; the
platform redirects back to GET /connect/callback, which stores the account and says so.
A cookie binds the callback to the browser that started the flow.
"""

from __future__ import annotations

import hashlib
import html
import re

import falcon
import grpc

from edge.backends import Backends
from edge.config import EdgeSettings
from storypost.account.v1 import account_pb2 as pb
from storypost.account.v1 import account_pb2_grpc
from storypost_runtime.component import component
from storypost_runtime.logs import get_logger
from storypost_runtime.status import details_from
from storypost_runtime.vocabulary import PHOTOAPP

log = get_logger(__name__)
TOKEN_SHAPE = re.compile(r"^[A-Za-z0-9_-]{43}$")
STATE_COOKIE = "storypost_connect"
_STYLE = (
    "body{font-family:system-ui,sans-serif;max-width:34rem;margin:3rem auto;padding:0 1rem;"
    "color:#1d1d1f;line-height:1.5}h1{font-size:1.5rem}.note{color:#555}"
    "button{font-size:1rem;padding:.7rem 1.4rem;border:0;border-radius:.4rem;"
    "background:#3b5bdb;color:#fff;cursor:pointer}"
)
SECURITY_HEADERS = {
    # The token is in the URL: never send it onwards as a Referer.
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Content-Security-Policy": (
        "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'; base-uri 'none'"
    ),
}


def _page(resp: falcon.Response, status: int, title: str, body: str) -> None:
    resp.status = status
    resp.content_type = falcon.MEDIA_HTML
    resp.set_headers(SECURITY_HEADERS)
    resp.text = (
        "<!doctype html><html lang=en><head><meta charset=utf-8>"
        "<meta name=viewport content='width=device-width,initial-scale=1'>"
        f"<title>{html.escape(title)}</title><style>{_STYLE}</style></head>"
        f"<body><main><h1>{html.escape(title)}</h1>{body}</main></body></html>"
    )


def _unknown(resp: falcon.Response) -> None:
    _page(
        resp,
        404,
        "This connect link does not exist",
        "<p>Check that you copied the whole link, or ask for a new one.</p>",
    )


def _used(resp: falcon.Response) -> None:
    _page(
        resp,
        410,
        "This connect link was already used",
        "<p>An account was connected through it already; a link works once. "
        "Ask for a new link to connect another account.</p>",
    )


def _failure(resp: falcon.Response, error: grpc.RpcError, what: str) -> None:
    """Every failure of a backend call as a clear page; never a stack trace."""
    details = details_from(error)
    if details.code == grpc.StatusCode.NOT_FOUND:
        if what == "callback":
            _page(
                resp,
                404,
                "This sign-in has expired",
                "<p>Open the connect link again to start over.</p>",
            )
        else:
            _unknown(resp)
    elif details.reason == "CONNECT_LINK_USED":
        _used(resp)
    elif details.code in (grpc.StatusCode.FAILED_PRECONDITION, grpc.StatusCode.INVALID_ARGUMENT):
        _page(
            resp,
            400,
            "The account was not connected",
            f"<p>{html.escape(details.message)}.</p><p>Open the connect link again to retry.</p>",
        )
    elif details.code in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED):
        resp.set_header("Retry-After", "5")
        _page(
            resp,
            503,
            "Please try again in a moment",
            "<p>A service is briefly unavailable. Reload this page in a few seconds.</p>",
        )
    else:
        log.warning("connect page failed", step=what, code=details.code.name)
        _page(
            resp,
            500,
            "Something went wrong",
            "<p>The account was not connected. Please try again later.</p>",
        )


def _state_digest(state: str) -> str:
    return hashlib.sha256(state.encode()).hexdigest()


@component
class ConnectLinkPage:
    """GET: what the link connects; POST: start the platform's sign-in."""

    accounts: account_pb2_grpc.AccountServiceStub
    settings: EdgeSettings

    def on_get(self, req: falcon.Request, resp: falcon.Response, token: str) -> None:
        if not TOKEN_SHAPE.match(token):
            _unknown(resp)
            return
        try:
            view = self.accounts.GetConnectLink(pb.GetConnectLinkRequest(token=token))
        except grpc.RpcError as error:
            _failure(resp, error, "page")
            return
        if view.status == pb.CONNECT_LINK_STATUS_USED:
            _used(resp)
            return
        note = f"<p class=note>{html.escape(view.description)}</p>" if view.description else ""
        _page(
            resp,
            200,
            "Connect your photoapp account",
            f"<p><b>{html.escape(view.organization_name)}</b> asks to publish stories and reels "
            "on your photoapp account. You will sign in on photoapp and come back here.</p>"
            f"{note}<form method=post><button type=submit>Continue to photoapp</button></form>",
        )

    def on_post(self, req: falcon.Request, resp: falcon.Response, token: str) -> None:
        if not TOKEN_SHAPE.match(token):
            _unknown(resp)
            return
        try:
            started = self.accounts.StartConnect(
                pb.StartConnectRequest(
                    connect_link_token=token,
                    platform=PHOTOAPP.name,
                    redirect_uri=f"{self.settings.public_url.rstrip('/')}/connect/callback",
                )
            )
        except grpc.RpcError as error:
            _failure(resp, error, "start")
            return
        resp.set_cookie(
            STATE_COOKIE,
            _state_digest(started.state),
            max_age=15 * 60,
            path="/connect",
            http_only=True,
            secure=self.settings.public_url.startswith("https://"),
            same_site="Lax",
        )
        resp.set_headers(SECURITY_HEADERS)
        resp.status = 303
        resp.location = started.authorize_url


@component
class ConnectCallback:
    """GET ?state=&code= (or &error=): finishes the sign-in and shows the result."""

    accounts: account_pb2_grpc.AccountServiceStub

    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        state = req.get_param("state") or ""
        cookie = (req.get_cookie_values(STATE_COOKIE) or [""])[0]
        if not state or cookie != _state_digest(state):
            _page(
                resp,
                400,
                "Open the connect link again",
                "<p>This sign-in was started in another browser or has expired. Open the "
                "connect link again in this browser.</p>",
            )
            return
        try:
            done = self.accounts.CompleteConnect(
                pb.CompleteConnectRequest(
                    state=state,
                    code=req.get_param("code") or "",
                    error=req.get_param("error") or "",
                )
            )
        except grpc.RpcError as error:
            _failure(resp, error, "callback")
            return
        resp.unset_cookie(STATE_COOKIE, path="/connect")
        _page(
            resp,
            200,
            "Your account is connected",
            f"<p>The photoapp account <b>@{html.escape(done.account.username)}</b> is now "
            f"connected to <b>{html.escape(done.organization_name)}</b>. "
            "You can close this page.</p>",
        )


def add_routes(app: falcon.App, backends: Backends, settings: EdgeSettings) -> None:
    accounts = backends.account_stub
    app.add_route("/connect/callback", ConnectCallback(accounts))
    app.add_route("/connect/{token}", ConnectLinkPage(accounts, settings))

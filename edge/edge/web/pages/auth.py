"""Sign-in, sign-out, the workspace picker and the workspace home."""

from __future__ import annotations

import re
from urllib.parse import quote

import falcon
import grpc

from edge.web.base import Page, Web, field, read_form
from edge.web.failures import PageError, page_error
from edge.web.session import ORG_SHAPE, org_path, safe_next
from storypost.account.v1 import account_pb2 as pb
from storypost_runtime.component import component
from storypost_runtime.status import details_from

WRONG_LOGIN = "Wrong email or password."
WORKSPACE_SHAPE = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


def client_address(req: falcon.Request) -> str:
    # Untrusted proxy headers are dropped (edge/serve.py), so this is the peer as the edge saw
    # it, or the address the trusted ingress forwarded.
    return req.remote_addr or ""


class SignInPage(Page):
    """GET /o/<org>/signin: the form; POST: check the password and start a session."""

    label = "signin"

    def _render(
        self,
        req: falcon.Request,
        resp: falcon.Response,
        organization_id: str,
        *,
        email: str = "",
        error: str = "",
        status: int = 200,
        next_page: str | None = None,
    ) -> None:
        name = self.web.sessions.organization_name(organization_id)
        flash = self.web.sessions.take_flash(req, resp, organization_id)
        self.web.views.render(
            resp,
            "signin.html",
            {
                "title": f"Sign in to {name}",
                "workspace": name,
                "org": org_path(organization_id),
                "next": safe_next(
                    organization_id,
                    req.get_param("next") or "" if next_page is None else next_page,
                ),
                "csrf": self.web.sessions.signin_csrf(req, resp, organization_id),
                "email": email,
                "error": error,
                "flash": flash,
            },
            status=status,
        )

    def on_get(self, req: falcon.Request, resp: falcon.Response, organization_id: str) -> None:
        req.context.procedure = "app:signin"
        if not ORG_SHAPE.match(organization_id):
            raise PageError(404, "This workspace was not found.")
        if self.web.sessions.viewer(req, organization_id) is not None:
            raise falcon.HTTPSeeOther(safe_next(organization_id, req.get_param("next") or ""))
        self._render(req, resp, organization_id)

    def on_post(self, req: falcon.Request, resp: falcon.Response, organization_id: str) -> None:
        req.context.procedure = "app:signin"
        req.context.organization_id = organization_id
        if not ORG_SHAPE.match(organization_id):
            raise PageError(404, "This workspace was not found.")
        form = read_form(req)
        self.web.sessions.check_signin_csrf(req, field(form, "csrf"))
        email = field(form, "email").strip()
        password = field(form, "password")
        next_page = field(form, "next")
        if not email or not password:
            self._render(
                req,
                resp,
                organization_id,
                email=email,
                error="Enter your email and password.",
                status=400,
                next_page=next_page,
            )
            return
        try:
            signed_in = self.web.accounts.SignIn(
                pb.SignInRequest(
                    organization_id=organization_id,
                    email=email,
                    password=password,
                    client_ip=client_address(req),
                    user_agent=req.user_agent or "",
                )
            )
        except grpc.RpcError as error:
            # A wrong password or too many tries: the form again, with the email entered.
            if details_from(error).code == grpc.StatusCode.UNAUTHENTICATED:
                failure = PageError(401, WRONG_LOGIN)
            else:
                failure = page_error(error)
                if failure.status != 429:
                    raise failure from None
            if failure.retry_after:
                resp.set_header("Retry-After", str(failure.retry_after))
            self._render(
                req,
                resp,
                organization_id,
                email=email,
                error=failure.message,
                status=failure.status,
                next_page=next_page,
            )
            return
        self.web.sessions.start(resp, organization_id, signed_in.session_token)
        resp.status = 303
        resp.location = safe_next(organization_id, next_page)


class SignOut(Page):
    """POST /o/<org>/signout: ends the session on the server, then forgets the cookie."""

    label = "signout"

    def on_post(self, req: falcon.Request, resp: falcon.Response, organization_id: str) -> None:
        viewer = self.web.sessions.viewer(req, organization_id)
        if viewer is not None:
            self.form(req, viewer)
        self.web.sessions.end(req, resp, organization_id)
        self.web.sessions.flash(resp, organization_id, "info", "You are signed out.")
        resp.status = 303
        resp.location = f"{org_path(organization_id)}/signin"


class Home(Page):
    """GET /o/<org>: the gallery is the workspace's home."""

    def on_get(self, req: falcon.Request, resp: falcon.Response, organization_id: str) -> None:
        req.context.procedure = "app:home"
        raise falcon.HTTPSeeOther(f"{org_path(organization_id)}/gallery")


@component
class WorkspacePicker:
    """GET /signin (and /): asks for the workspace id, then sends on to its sign-in page."""

    web: Web

    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        req.context.procedure = "app:workspace"
        workspace = (req.get_param("workspace") or "").strip()
        error = ""
        if workspace:
            if WORKSPACE_SHAPE.match(workspace):
                raise falcon.HTTPSeeOther(f"/o/{quote(workspace)}/signin")
            error = "A workspace id has letters and digits only, as in the address of its pages."
        self.web.views.render(
            resp,
            "workspace.html",
            {"title": "Sign in to storypost", "workspace": workspace, "error": error},
            status=400 if error else 200,
        )


class Root:
    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        req.context.procedure = "app:root"
        raise falcon.HTTPSeeOther("/signin")

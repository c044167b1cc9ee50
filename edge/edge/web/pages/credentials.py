"""Settings → API credentials: create (the token is shown once), list, revoke."""

from __future__ import annotations

from typing import Any

import falcon
import grpc

from edge.web.base import Form, Page, field
from edge.web.failures import PageError, page_error
from edge.web.session import Viewer
from storypost.account.v1 import account_pb2 as pb

NAME_MAX = 200


class CredentialsPage(Page):
    label = "credentials"

    def _show(
        self,
        req: falcon.Request,
        resp: falcon.Response,
        viewer: Viewer,
        *,
        status: int = 200,
        **extra: Any,
    ) -> None:
        try:
            found = self.web.accounts.ListApiCredentials(
                pb.ListApiCredentialsRequest(organization_id=viewer.organization_id)
            )
        except grpc.RpcError as error:
            raise page_error(error) from None
        self.show(
            req,
            resp,
            viewer,
            "credentials.html",
            active="credentials",
            title="API credentials",
            status=status,
            credentials=list(found.credentials),
            base_url=self.web.settings.base_url(viewer.organization_id),
            **({"created": None, "token": "", "error": "", "name": ""} | extra),
        )

    def on_get(self, req: falcon.Request, resp: falcon.Response, organization_id: str) -> None:
        viewer = self.begin(req, organization_id)
        self._show(req, resp, viewer)

    def on_post(self, req: falcon.Request, resp: falcon.Response, organization_id: str) -> None:
        viewer = self.begin(req, organization_id)
        form = self.form(req, viewer)
        action = field(form, "action")
        if action == "create":
            self._create(req, resp, viewer, form)
        elif action == "revoke":
            self._revoke(resp, viewer, form)
        else:
            raise PageError(400, "Unknown action.")

    def _create(
        self, req: falcon.Request, resp: falcon.Response, viewer: Viewer, form: Form
    ) -> None:
        name = field(form, "name").strip() or "api"
        if len(name) > NAME_MAX:
            self._show(
                req,
                resp,
                viewer,
                status=400,
                name=name,
                error=f"A name has at most {NAME_MAX} characters.",
            )
            return
        try:
            created = self.web.accounts.CreateApiCredential(
                pb.CreateApiCredentialRequest(organization_id=viewer.organization_id, name=name)
            )
        except grpc.RpcError as error:
            failure = page_error(error)
            if failure.status != 400:
                raise failure from None
            self._show(req, resp, viewer, status=400, name=name, error=failure.message)
            return
        # Answered here rather than redirected: the token must never sit in a cookie or a
        # URL, and this answer is not cached (no-store), so it is shown exactly once.
        self._show(req, resp, viewer, status=201, created=created.credential, token=created.token)

    def _revoke(self, resp: falcon.Response, viewer: Viewer, form: Form) -> None:
        credential_id = field(form, "credential_id")
        try:
            revoked = self.web.accounts.RevokeApiCredential(
                pb.RevokeApiCredentialRequest(
                    organization_id=viewer.organization_id, credential_id=credential_id
                )
            )
        except grpc.RpcError as error:
            raise page_error(error, what="This credential") from None
        self.done(
            resp,
            viewer,
            "/settings/credentials",
            f"Credential “{revoked.name}” was revoked; its token stops working within seconds.",
        )

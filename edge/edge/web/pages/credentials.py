"""Settings → API credentials: create (the token is shown once), list, revoke."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

import falcon

from edge.web.action_page import Action, ActionPage
from edge.web.base import Form, field
from edge.web.failures import page_errors
from edge.web.session import Viewer
from storypost.account.v1 import account_pb2 as pb

NAME_MAX = 200


class CredentialsPage(ActionPage):
    label = "credentials"
    template = "credentials.html"
    title = "API credentials"
    blank_form = MappingProxyType({"created": None, "token": "", "error": "", "name": ""})

    def listing(self, viewer: Viewer) -> dict[str, Any]:
        found = self.web.accounts.ListApiCredentials(
            pb.ListApiCredentialsRequest(organization_id=viewer.organization_id)
        )
        return {
            "credentials": list(found.credentials),
            "base_url": self.web.settings.base_url(viewer.organization_id),
        }

    def actions(self) -> Mapping[str, Action]:
        return {"create": self._create, "revoke": self._revoke}

    def _create(
        self, req: falcon.Request, resp: falcon.Response, viewer: Viewer, form: Form
    ) -> None:
        name = self.entered_name(req, resp, viewer, form, blank="api", most=NAME_MAX)
        if name is None:
            return
        request = pb.CreateApiCredentialRequest(organization_id=viewer.organization_id, name=name)
        created = self.asked(
            req, resp, viewer, lambda: self.web.accounts.CreateApiCredential(request), name=name
        )
        if created is None:
            return
        # Answered here rather than redirected: the token must never sit in a cookie or a
        # URL, and this answer is not cached (no-store), so it is shown exactly once.
        self.show_page(
            req, resp, viewer, status=201, created=created.credential, token=created.token
        )

    def _revoke(
        self, req: falcon.Request, resp: falcon.Response, viewer: Viewer, form: Form
    ) -> None:
        credential_id = field(form, "credential_id")
        with page_errors("This credential"):
            revoked = self.web.accounts.RevokeApiCredential(
                pb.RevokeApiCredentialRequest(
                    organization_id=viewer.organization_id, credential_id=credential_id
                )
            )
        self.done(
            resp,
            viewer,
            self.path,
            f"Credential “{revoked.name}” was revoked; its token stops working within seconds.",
        )

"""Connected accounts: every platform account with its state, connect and reconnect (the
platform's OAuth-like sign-in), remove; connect links: create them and see which were used."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

import falcon
import grpc

from edge.routes.connect import STATE_COOKIE, _state_digest
from edge.web.action_page import Action, ActionPage
from edge.web.base import Form, Page, field
from edge.web.failures import PageError, page_errors
from edge.web.session import Viewer, cookie, org_path
from storypost.account.v1 import account_pb2 as pb
from storypost_runtime import vocabulary

# (name, label) of the platforms an account can be connected on (account-svc's catalog).
PLATFORMS = tuple((platform.name, platform.label) for platform in vocabulary.PLATFORMS)
PLATFORM_NAMES = {name for name, _ in PLATFORMS}
CONNECTION_LABEL = {pb.CONNECTION_DIRECT: "direct", pb.CONNECTION_SOCIAL: "social"}
CONNECT_PATH = "/accounts"
CALLBACK_PATH = "/accounts/callback"


def chosen_account(viewer: Viewer, form: Form) -> pb.GetConnectedAccountRequest:
    """The account a row's form names, as reconnect and remove ask for it."""
    return pb.GetConnectedAccountRequest(
        organization_id=viewer.organization_id,
        account=pb.AccountRef(social_account_id=field(form, "social_account_id")),
    )


class AccountsPage(ActionPage):
    label = "accounts"
    template = "accounts.html"
    title = "Connected accounts"
    blank_form = MappingProxyType({"error": "", "description": ""})

    def listing(self, viewer: Viewer) -> dict[str, Any]:
        org = viewer.organization_id
        accounts = list(
            self.web.accounts.ListConnectedAccounts(
                pb.ListConnectedAccountsRequest(organization_id=org)
            ).accounts
        )
        links = list(
            self.web.accounts.ListConnectLinks(
                pb.ListConnectLinksRequest(organization_id=org)
            ).links
        )
        usernames = {a.social_account_id: a.username or a.display_name for a in accounts}
        public = self.web.settings.public_url.rstrip("/")
        return {
            "accounts": accounts,
            "connection_label": CONNECTION_LABEL,
            "links": [
                {
                    "link": link,
                    "used": link.status == pb.CONNECT_LINK_STATUS_USED,
                    "url": f"{public}/connect/{link.token}",
                    "account": usernames.get(link.social_account_id, ""),
                }
                for link in links
            ],
            "platforms": PLATFORMS,
            "link_uuid": str(uuid.uuid4()),
        }

    def actions(self) -> Mapping[str, Action]:
        return {
            "connect": self._connect_new,
            "reconnect": self._reconnect,
            "remove": self._remove,
            "create-link": self._create_link,
        }

    def _connect_new(
        self, req: falcon.Request, resp: falcon.Response, viewer: Viewer, form: Form
    ) -> None:
        self._connect(resp, viewer, field(form, "platform"), pb.CONNECTION_UNSPECIFIED)

    def _connect(
        self,
        resp: falcon.Response,
        viewer: Viewer,
        platform: str,
        connection: pb.Connection.ValueType,
    ) -> None:
        if platform not in PLATFORM_NAMES:
            raise PageError(400, "Choose a platform.")
        org = viewer.organization_id
        with page_errors():
            started = self.web.accounts.StartConnect(
                pb.StartConnectRequest(
                    organization_id=org,
                    platform=platform,
                    connection=connection,
                    redirect_uri=f"{self.web.app_url(org)}{CALLBACK_PATH}",
                )
            )
        # The same binding as the connect-link pages: only this browser may finish it.
        resp.set_cookie(
            STATE_COOKIE,
            _state_digest(started.state),
            max_age=15 * 60,
            path=org_path(org) + CALLBACK_PATH,
            http_only=True,
            secure=self.web.sessions.secure,
            same_site="Lax",
        )
        resp.status = 303
        resp.location = started.authorize_url

    def _reconnect(
        self, req: falcon.Request, resp: falcon.Response, viewer: Viewer, form: Form
    ) -> None:
        with page_errors("This account"):
            account = self.web.accounts.GetConnectedAccount(chosen_account(viewer, form))
        self._connect(resp, viewer, account.platform, account.connection)

    def _remove(
        self, req: falcon.Request, resp: falcon.Response, viewer: Viewer, form: Form
    ) -> None:
        with page_errors("This account"):
            removed = self.web.accounts.DeleteConnectedAccount(chosen_account(viewer, form))
        name = f"@{removed.username}" if removed.username else removed.display_name
        self.done(resp, viewer, CONNECT_PATH, f"{name} ({removed.platform}) was removed.")

    def _create_link(
        self, req: falcon.Request, resp: falcon.Response, viewer: Viewer, form: Form
    ) -> None:
        description = field(form, "description").strip()
        try:
            self.web.accounts.CreateConnectLink(
                pb.CreateConnectLinkRequest(
                    organization_id=viewer.organization_id,
                    # From the form, so a double submit creates one link.
                    connect_link_uuid=field(form, "connect_link_uuid"),
                    description=description,
                )
            )
        except grpc.RpcError as error:
            self.show_refused(req, resp, viewer, error, description=description)
            return
        self.done(
            resp,
            viewer,
            CONNECT_PATH + "#links",
            "Connect link created. Copy it and send it to the account owner.",
        )


class ConnectCallbackPage(Page):
    """GET /o/<org>/accounts/callback: the platform sends the browser back here."""

    label = "accounts-callback"

    def on_get(self, req: falcon.Request, resp: falcon.Response, organization_id: str) -> None:
        viewer = self.begin(req, organization_id)
        state = req.get_param("state") or ""
        if not state or cookie(req, STATE_COOKIE) != _state_digest(state):
            self.done(
                resp,
                viewer,
                CONNECT_PATH,
                "This sign-in was started in another browser or has expired; start it again.",
                "error",
            )
            return
        try:
            done = self.web.accounts.CompleteConnect(
                pb.CompleteConnectRequest(
                    state=state,
                    code=req.get_param("code") or "",
                    error=req.get_param("error") or "",
                ),
                timeout=30.0,
            )
        except grpc.RpcError as error:
            # What the platform or the service refused (any 4xx) is told on the accounts page.
            self.refused(resp, viewer, CONNECT_PATH, error, shown=range(400, 500))
            return
        resp.unset_cookie(STATE_COOKIE, path=org_path(organization_id) + CALLBACK_PATH)
        account = done.account
        name = f"@{account.username}" if account.username else account.display_name
        self.done(resp, viewer, CONNECT_PATH, f"{name} on {account.platform} is connected.")

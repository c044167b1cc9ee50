"""Settings → Users (an admin adds and removes workspace users and sets their passwords;
members see who is there) and Your settings (the user's own time zone). account-svc checks
the acting session's role again: the rule lives there (workspace_users.py)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from functools import cache
from typing import Any
from zoneinfo import available_timezones

import falcon
import grpc

from edge.web.action_page import Action, ActionPage
from edge.web.base import Form, Page, field
from edge.web.failures import PageError
from edge.web.session import Viewer
from storypost.account.v1 import account_pb2 as pb

ROLES = {"member": pb.USER_ROLE_MEMBER, "admin": pb.USER_ROLE_ADMIN}
ROLE_NAME = {value: name for name, value in ROLES.items()}
ADMINS_ONLY = "Only a workspace admin can add or remove users or set their passwords."


def refuse_members(viewer: Viewer) -> None:
    if not viewer.is_admin:
        raise PageError(403, ADMINS_ONLY, title="Admins only")


class UsersPage(ActionPage):
    label = "users"
    template = "users.html"
    title = "Users"

    def listing(self, viewer: Viewer) -> dict[str, Any]:
        users = self.web.accounts.ListUsers(
            pb.ListUsersRequest(organization_id=viewer.organization_id, session_token=viewer.token)
        ).users
        return {
            "users": [{"u": u, "role": ROLE_NAME.get(u.role, "member")} for u in users],
            "roles": list(ROLES),
            "admins_only": ADMINS_ONLY,
        }

    def actions(self) -> Mapping[str, Action]:
        return {"add": self._add, "remove": self._remove, "password": self._password}

    def on_post(self, req: falcon.Request, resp: falcon.Response, organization_id: str) -> None:
        viewer = self.begin(req, organization_id)
        form = self.form(req, viewer)
        refuse_members(viewer)
        try:
            self.act(req, resp, viewer, form)
        except grpc.RpcError as error:
            self.refused(resp, viewer, self.path, error, what="This user", shown=(400, 429))

    def _add(self, req: falcon.Request, resp: falcon.Response, viewer: Viewer, form: Form) -> None:
        role = ROLES.get(field(form, "role"))
        if role is None:
            raise PageError(400, "Choose a role.")
        added = self.web.accounts.AddUser(
            pb.AddUserRequest(
                organization_id=viewer.organization_id,
                session_token=viewer.token,
                email=field(form, "email"),
                password=field(form, "password"),
                role=role,
            )
        )
        self.done(
            resp,
            viewer,
            self.path,
            f"{added.email} was added as {ROLE_NAME[added.role]}; they can sign in now.",
        )

    def _remove(
        self, req: falcon.Request, resp: falcon.Response, viewer: Viewer, form: Form
    ) -> None:
        removed = self.web.accounts.RemoveUser(
            pb.RemoveUserRequest(
                organization_id=viewer.organization_id,
                session_token=viewer.token,
                user_id=field(form, "user_id"),
            )
        )
        self.done(resp, viewer, self.path, f"{removed.email} was removed and signed out.")

    def _password(
        self, req: falcon.Request, resp: falcon.Response, viewer: Viewer, form: Form
    ) -> None:
        changed = self.web.accounts.SetUserPassword(
            pb.SetUserPasswordRequest(
                organization_id=viewer.organization_id,
                session_token=viewer.token,
                user_id=field(form, "user_id"),
                password=field(form, "password"),
            )
        )
        self.done(
            resp,
            viewer,
            self.path,
            f"The password of {changed.email} was set; their other sessions were ended.",
        )


@cache
def time_zones() -> list[str]:
    """The IANA zones this machine knows, UTC first."""
    return ["UTC", *sorted(z for z in available_timezones() if z != "UTC" and "/" in z)]


class ProfilePage(Page):
    label = "profile"

    def on_get(self, req: falcon.Request, resp: falcon.Response, organization_id: str) -> None:
        viewer = self.begin(req, organization_id)
        self.show(
            req,
            resp,
            viewer,
            "profile.html",
            active="",
            title="Your settings",
            zones=time_zones(),
            now=datetime.now(UTC),
        )

    def on_post(self, req: falcon.Request, resp: falcon.Response, organization_id: str) -> None:
        viewer = self.begin(req, organization_id)
        form = self.form(req, viewer)
        if field(form, "action") != "time-zone":
            raise PageError(400, "Unknown action.")
        try:
            session = self.web.accounts.SetTimeZone(
                pb.SetTimeZoneRequest(
                    organization_id=organization_id,
                    session_token=viewer.token,
                    time_zone=field(form, "time_zone"),
                )
            )
        except grpc.RpcError as error:
            self.refused(resp, viewer, "/settings/profile", error)
            return
        self.done(
            resp,
            viewer,
            "/settings/profile",
            f"Dates are now shown in {session.time_zone}.",
        )

"""Workspace users managed from the app, as the signed-in user: the acting session is checked
here, so the rule "only an admin adds and removes users and sets their passwords" lives next
to the users and not in every caller."""

from __future__ import annotations

from account_svc.identity.sessions import AppSessions, Session
from account_svc.identity.users import Role, User, Users
from storypost_runtime.component import component
from storypost_runtime.errors import FailedPrecondition, PermissionDenied

NOT_ADMIN = "NOT_WORKSPACE_ADMIN"
ADMINS_ONLY = "only a workspace admin can add or remove users or set their passwords"


@component
class WorkspaceUsers:
    users: Users
    sessions: AppSessions

    async def _admin(self, organization_id: str, token: str) -> Session:
        session = await self.sessions.get(organization_id, token)
        if session.role != "admin":
            raise PermissionDenied(ADMINS_ONLY, reason=NOT_ADMIN)
        return session

    async def list(self, organization_id: str, token: str) -> list[User]:
        await self.sessions.get(organization_id, token)
        return await self.users.of_organization(organization_id)

    async def add(
        self, organization_id: str, token: str, email: str, password: str, role: Role
    ) -> User:
        await self._admin(organization_id, token)
        return await self.users.create(organization_id, email, password, role)

    async def remove(self, organization_id: str, token: str, user_id: str) -> User:
        acting = await self._admin(organization_id, token)
        if user_id == acting.user_id:
            raise FailedPrecondition("you cannot remove yourself; another admin can")
        user = await self.users.remove(organization_id, user_id)
        await self.sessions.end_all(user.user_id)
        return user

    async def set_password(
        self, organization_id: str, token: str, user_id: str, password: str
    ) -> User:
        acting = await self._admin(organization_id, token)
        user = await self.users.set_password(organization_id, user_id, password)
        await self.sessions.end_all(
            user.user_id, keep_token=token if user_id == acting.user_id else ""
        )
        return user

    async def set_time_zone(self, organization_id: str, token: str, time_zone: str) -> Session:
        session = await self.sessions.get(organization_id, token)
        user = await self.users.set_time_zone(organization_id, session.user_id, time_zone)
        await self.sessions.follow(user)
        return await self.sessions.get(organization_id, token)

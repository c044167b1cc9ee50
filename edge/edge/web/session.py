"""Session and CSRF cookies of the app.

The session cookie holds a random token; account-svc keeps only its SHA-256 (sessions.py
there). Each workspace has its own cookie: its path is `/o/<organizationId>`, so a browser
signed in to two workspaces holds two sessions and never mixes them up.

CSRF: every form carries a token checked on POST. Signed in, it is an HMAC of the session
token (nothing to store, different for every session, useless without the cookie). The
sign-in form, before any session exists, uses a double-submit cookie.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import re
import secrets
import threading
from dataclasses import dataclass, field
from functools import cached_property
from urllib.parse import urlsplit
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import cachetools
import falcon
import grpc

from edge.config import EdgeSettings
from edge.web.failures import PageError, page_error, page_errors
from storypost.account.v1 import account_pb2 as pb
from storypost.account.v1 import account_pb2_grpc
from storypost_runtime.component import component

SESSION_COOKIE = "storypost_session"
SIGNIN_COOKIE = "storypost_signin"
FLASH_COOKIE = "storypost_flash"
TOKEN_SHAPE = re.compile(r"^[A-Za-z0-9_-]{43}$")
ORG_SHAPE = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
EXPIRED_FORM = "This form has expired or was sent from another page. Reload the page and try again."


def csrf_for(session_token: str) -> str:
    digest = hmac.new(session_token.encode(), b"storypost csrf v1", hashlib.sha256).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def same_token(given: str, expected: str) -> bool:
    return bool(given) and hmac.compare_digest(given.encode(), expected.encode())


def org_path(organization_id: str) -> str:
    return f"/o/{organization_id}"


def safe_next(organization_id: str, target: str) -> str:
    """Only a page of the same workspace on this site: never an open redirect."""
    home = org_path(organization_id)
    parts = urlsplit(target)
    if (
        parts.scheme
        or parts.netloc
        or not (parts.path == home or parts.path.startswith(home + "/"))
        or "\\" in target
        or parts.path.startswith((home + "/signin", home + "/signout"))
        or parts.path.startswith(home + "/api/")
    ):
        return home + "/gallery"
    return target


@dataclass(frozen=True)
class Viewer:
    """The signed-in user of a page."""

    organization_id: str
    organization_name: str
    email: str
    user_id: str
    session_id: str
    csrf: str
    # The session token, for the account-svc calls made as this user (never shown).
    token: str = field(default="", repr=False)
    is_admin: bool = False
    time_zone: str = "UTC"

    @cached_property
    def zone(self) -> ZoneInfo:
        """The user's zone; UTC if the stored name is unknown here."""
        try:
            return ZoneInfo(self.time_zone)
        except (ZoneInfoNotFoundError, ValueError):
            return ZoneInfo("UTC")


@dataclass(frozen=True)
class Flash:
    """A one-time message shown on the next page ("Webhook added")."""

    kind: str
    text: str


@component
class Sessions:
    accounts: account_pb2_grpc.AccountServiceStub
    settings: EdgeSettings
    secure: bool = field(init=False)
    # Workspace names for the page header: one lookup a minute, not one per page.
    _names: cachetools.TTLCache[str, str] = field(
        init=False, default_factory=lambda: cachetools.TTLCache(maxsize=4096, ttl=60)
    )
    _lock: threading.Lock = field(init=False, default_factory=threading.Lock)

    def __post_init__(self) -> None:
        self.secure = self.settings.public_url.startswith("https://")

    # --- cookies -----------------------------------------------------------------------
    def _set(
        self,
        resp: falcon.Response,
        organization_id: str,
        name: str,
        value: str,
        max_age: int | None,
    ) -> None:
        resp.set_cookie(
            name,
            value,
            max_age=max_age,
            path=org_path(organization_id),
            http_only=True,
            secure=self.secure,
            same_site="Lax",
        )

    def _clear(self, resp: falcon.Response, organization_id: str, name: str) -> None:
        resp.unset_cookie(name, path=org_path(organization_id))

    def start(self, resp: falcon.Response, organization_id: str, token: str) -> None:
        # No max-age: the browser forgets it when it closes; account-svc's expiry rules.
        self._set(resp, organization_id, SESSION_COOKIE, token, None)
        self._clear(resp, organization_id, SIGNIN_COOKIE)

    def end(self, req: falcon.Request, resp: falcon.Response, organization_id: str) -> None:
        token = cookie(req, SESSION_COOKIE)
        if token and TOKEN_SHAPE.match(token):
            with page_errors():
                self.accounts.EndSession(pb.EndSessionRequest(session_token=token))
        self._clear(resp, organization_id, SESSION_COOKIE)

    def signin_csrf(self, req: falcon.Request, resp: falcon.Response, organization_id: str) -> str:
        """The sign-in form's token: the cookie's value, or a new one."""
        token = cookie(req, SIGNIN_COOKIE)
        if not TOKEN_SHAPE.match(token):
            token = secrets.token_urlsafe(32)
            self._set(resp, organization_id, SIGNIN_COOKIE, token, 3600)
        return token

    def check_signin_csrf(self, req: falcon.Request, given: str) -> None:
        if not same_token(given, cookie(req, SIGNIN_COOKIE)):
            raise PageError(403, EXPIRED_FORM)

    def flash(self, resp: falcon.Response, organization_id: str, kind: str, text: str) -> None:
        value = base64.urlsafe_b64encode(json.dumps({"k": kind, "t": text}).encode()).decode()
        self._set(resp, organization_id, FLASH_COOKIE, value, 120)

    def take_flash(
        self, req: falcon.Request, resp: falcon.Response, organization_id: str
    ) -> Flash | None:
        raw = cookie(req, FLASH_COOKIE)
        if not raw:
            return None
        self._clear(resp, organization_id, FLASH_COOKIE)
        try:
            data = json.loads(base64.urlsafe_b64decode(raw.encode()))
            kind, text = str(data["k"]), str(data["t"])
        except (ValueError, KeyError, TypeError):
            return None
        return Flash(kind if kind in ("ok", "error", "info") else "info", text[:2000])

    # --- who is signed in ------------------------------------------------------------------
    def organization_name(self, organization_id: str) -> str:
        """NOT_FOUND of an unknown workspace becomes a 404 page."""
        with self._lock:
            name = self._names.get(organization_id)
        if name is not None:
            return name
        with page_errors("This workspace"):
            org = self.accounts.GetOrganization(
                pb.GetOrganizationRequest(organization_id=organization_id)
            )
        with self._lock:
            self._names[organization_id] = org.name
        return org.name

    def viewer(self, req: falcon.Request, organization_id: str) -> Viewer | None:
        """The signed-in user, or None (no cookie, ended or expired session)."""
        token = cookie(req, SESSION_COOKIE)
        if not TOKEN_SHAPE.match(token) or not ORG_SHAPE.match(organization_id):
            return None
        try:
            session = self.accounts.GetSession(
                pb.GetSessionRequest(organization_id=organization_id, session_token=token)
            )
        except grpc.RpcError as error:
            if error.code() == grpc.StatusCode.UNAUTHENTICATED:
                return None
            raise page_error(error) from None
        return Viewer(
            organization_id=organization_id,
            organization_name=self.organization_name(organization_id),
            email=session.email,
            user_id=session.user_id,
            session_id=session.session_id,
            csrf=csrf_for(token),
            token=token,
            is_admin=session.role == pb.USER_ROLE_ADMIN,
            time_zone=session.time_zone or "UTC",
        )


def cookie(req: falcon.Request, name: str) -> str:
    values = req.get_cookie_values(name) or []
    return values[0] if values else ""
